// phasor's Slurm controller: keeps Slurm's node and job state outside
// slurmctld, proposes node lists for jobs that opt in (job_submit.lua asks
// through ControllerServer), and keeps phasord's committed placement equal
// to the opted-in jobs that run.
//
// Submit: the free nodes (idle in sinfo, not promised to a proposal that has
// not started yet) give up to max_candidates node sets the way topology/tree
// would pick them (tree_candidates.h); phasord ranks them with the running
// opted-in jobs pinned at their shifts; the top-ranked set is proposed under
// a fresh token. Start (Prolog): the job, now with its Slurm id, is ranked
// on its nodes and committed, so phasord publishes its offset. End (Epilog),
// or a poll that finds the job no longer running (requeued, cancelled, a
// node failed): phasord releases it. Tokens and placed jobs are kept in a
// JSON state file, so a restarted controller still knows them.
//
// Thread safety: every public method may be called from any thread; state
// is guarded by one mutex. Refresh talks to phasord without holding it (so a
// slow phasord delays no submission) and must be called from one thread at a
// time; Start and End hold it while they talk to phasord.
#ifndef PHASOR_INTEGRATIONS_SLURM_CONTROLLER_H_
#define PHASOR_INTEGRATIONS_SLURM_CONTROLLER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "integrations/client/client.h"
#include "integrations/client/running_jobs.h"
#include "integrations/slurm/job_spec.h"
#include "integrations/slurm/slurm_state.h"
#include "placer/ranker.h"
#include "topology/router.h"
#include "topology/slurm_import.h"
#include "topology/topology.h"

namespace phasor::slurm {

struct SlurmControllerOptions {
  // The fabric: Slurm's topology.conf or phasor's YAML (topology_file.h). Required.
  std::string topology_path;
  // Capacities a topology.conf does not carry (defaults of SlurmImportOptions).
  topology::SlurmImportOptions slurm_import;
  // phasord's request endpoint (and CURVE keys). Required.
  std::string phasord_endpoint;
  std::optional<client::CurveClientKeys> curve;
  // How long a submit may wait for phasord's ranking (default 30 ms: the
  // hook's bound is 50 ms and the helper's start-up takes the rest).
  int submit_timeout_ms = 30;
  // How long Start/End/Refresh wait for phasord (default 1 s; Prolog and
  // Epilog are not on the submission path).
  int lifecycle_timeout_ms = 1000;
  // Candidates per submit (default 8).
  uint32_t max_candidates = 8;
  // Slurm's packing kept (placer/packing.h): a candidate that leaves fewer
  // idle nodes or fewer wholly idle leaf switches than topology/tree's first
  // is not sent to phasord (default true).
  bool keep_packing = true;
  // The token/job state file, rewritten on every change. Required.
  std::string state_path;
  // How long a proposal's nodes stay promised to it before its job starts
  // (default 60 s); then the token is dropped.
  int64_t proposal_ttl_ms = 60000;
  // Where profile sources live (job_spec.h).
  ProfileResolverOptions profiles;
  // When set, every RankRequest sent for a submit is also written there as
  // `phasor rank` JSON (server form), named <token>.json (default "": off).
  std::string dump_dir;
  // Now, in microseconds since the epoch (default: the system clock).
  std::function<int64_t()> clock;
  // Token generator seed (default 0: from std::random_device).
  uint64_t token_seed = 0;
};

struct SubmitQuery {
  uint32_t nodes = 1;   // the job's node count (min = max)
  std::string comment;  // the job's comment (opts in, names the profile)
};

struct Proposal {
  std::string token;               // 32 hex digits
  std::vector<std::string> nodes;  // the top-ranked node set
  std::string candidate;           // its candidate id in the ranking ("c0", ...)
  double score = 1;
  uint32_t candidates = 0;  // how many were sent to phasord (after keep_packing)
};

struct ControllerCounters {
  uint64_t proposals = 0;
  uint64_t declined = 0;  // submits answered without a proposal
  uint64_t packing_dropped = 0;  // candidates keep_packing did not send
  uint64_t starts = 0;
  uint64_t releases = 0;
};

class SlurmController {
 public:
  // InvalidArgument naming the option; the topology's and the state file's
  // errors as they are.
  static absl::StatusOr<std::unique_ptr<SlurmController>> Create(SlurmControllerOptions options);

  // Replaces the known Slurm state (a poll of sinfo and squeue) and withdraws
  // the placements of jobs that no longer run or lost a node; refreshes the
  // running jobs' profiles and shifts from phasord's snapshot. Releases that
  // phasord does not acknowledge are retried on the next Refresh.
  absl::Status Refresh(const std::vector<SlurmNode>& nodes, const std::vector<SlurmJob>& jobs);

  // A node set for a job that opts in. FailedPrecondition with the reason
  // when there is none to give (no state yet, the job does not opt in, fewer
  // free nodes than it needs); Unavailable when phasord does not answer in
  // time; InvalidArgument/NotFound for a bad comment or profile.
  absl::StatusOr<Proposal> Submit(const SubmitQuery& query);

  // The job of `token` started as Slurm job `job_id` on `nodes` (Prolog):
  // commits it to phasord. A job already started is OK (every node's Prolog
  // calls this). NotFound for an unknown token.
  absl::Status Start(const std::string& token, const std::string& job_id, const std::vector<std::string>& nodes);

  // The job ended (Epilog): releases its placement. A job phasor did not
  // place is OK (nothing to do).
  absl::Status End(const std::string& job_id);

  // Jobs placed now (Slurm job id -> nodes), and counters.
  std::map<std::string, std::vector<std::string>> Placed() const;
  ControllerCounters counters() const;

 private:
  struct Pending {
    std::vector<std::string> nodes;
    placer::TrafficProfile profile;
    int64_t created_us = 0;
  };
  struct PlacedJob {
    std::string token;
    std::vector<std::string> nodes;
    placer::TrafficProfile profile;
  };

  explicit SlurmController(SlurmControllerOptions options) : options_(std::move(options)) {}
  absl::Status Init();
  absl::Status Save() const;
  absl::Status Load();
  // Server-form candidates become link shares over the fabric (the ring
  // traffic model of `phasor rank --topology`), so phasord needs no fabric.
  // A candidate that cannot be routed is dropped (with the reason in `why`).
  void Route(placer::RankRequest& request, std::string& why) const;
  // The running placed jobs (their latest profiles, shifts and servers), for
  // client::AddRunningJobs.
  std::vector<client::RunningJob> RunningJobs() const;
  absl::Status ReleaseLocked(const std::vector<std::string>& jobs);
  std::string NewToken();

  SlurmControllerOptions options_;
  std::unique_ptr<topology::Topology> fabric_;
  std::unique_ptr<topology::Router> router_;
  std::optional<ProfileResolver> resolver_;
  std::unique_ptr<client::Client> fast_;  // submit_timeout_ms
  std::unique_ptr<client::Client> slow_;  // lifecycle_timeout_ms: Start, End
  std::unique_ptr<client::Client> poll_;  // lifecycle_timeout_ms: Refresh (outside the lock)

  mutable std::mutex mu_;
  bool have_state_ = false;
  std::vector<SlurmNode> nodes_;
  std::map<std::string, SlurmJob> jobs_;
  std::map<std::string, Pending> pending_;  // token ->
  std::map<std::string, PlacedJob> placed_;    // Slurm job id ->
  std::set<std::string> unreleased_;        // ended, phasord not told yet
  // From phasord's snapshot: the latest profile and shift of placed jobs.
  std::map<std::string, placer::TrafficProfile> observed_profiles_;
  std::map<std::string, uint32_t> shifts_us_;
  std::mt19937_64 rng_;
  ControllerCounters counters_;
};

// The `phasor rank` JSON of a server-form request (links, jobs with profile
// and pinned shift, candidates with servers). The running part is written
// into every candidate (the long form, which `phasor rank` ranks the same).
std::string RankRequestToServerJson(const placer::RankRequest& request);

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_CONTROLLER_H_
