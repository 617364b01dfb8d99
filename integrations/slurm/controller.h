// phasor's Slurm controller: keeps Slurm's state outside slurmctld, chooses
// the nodes of the jobs that opt in, and keeps phasord's committed placement
// equal to the opted-in jobs that run (docs/slurm.md has the whole design).
//
// A job opts in at submission (job_submit.lua asks through the hook
// socket, Submit) and gets a token, which binds the submission to its Slurm
// job id when a poll (or its Prolog) first shows the job. Where it runs:
//   - Slurm would start it now (its nodes are free, no job ahead of it in
//     its partition waits): phasor chooses among the free nodes it may use
//     (job_request.h) and the hook pins them (ReqNodeList);
//   - otherwise it pends unpinned, and Slurm plans it freely. When nodes
//     free up (a job's Epilog, End, while its nodes are still held, or a
//     poll) the controller re-plans the pending jobs in Slurm's priority
//     order, as Slurm's main scheduler would start them, and pins each
//     opted-in job that would start now to phasor's choice among the nodes
//     then free (`scontrol update`, SlurmCommands). A pin that stopped
//     matching (its nodes taken, the job held) is removed again, so a pin
//     never keeps a job waiting for nodes.
// A proposal lives as long as its job: until the job leaves the queue. One
// whose job never shows up (the submission was abandoned or Slurm rejected
// it) is dropped at the first poll started unbound_grace_ms after it. A
// token belongs to the first job seen with it; another job carrying it is
// ignored (and counted).
//
// Start (Prolog, on every node; or a poll that sees the job run first):
// the job is ranked on its actual nodes under its Slurm id and committed, so
// phasord publishes its offset. End (Epilog), or a poll that no longer
// shows the job running (requeued, cancelled, a node failed): phasord
// releases it. Proposals, pins and placed jobs live in a JSON state file,
// written by a thread of its own soon after each change, so a restarted
// controller still knows them.
//
// Thread safety: every public method may be called from any thread. State
// is guarded by one mutex that is never held across phasord or Slurm I/O (a
// submission never waits on a Prolog, an Epilog or a poll); polls and
// re-plans run one at a time.
#ifndef PHASOR_INTEGRATIONS_SLURM_CONTROLLER_H_
#define PHASOR_INTEGRATIONS_SLURM_CONTROLLER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "integrations/client/client.h"
#include "protocol/running_jobs.h"
#include "integrations/slurm/job_request.h"
#include "integrations/slurm/job_spec.h"
#include "integrations/slurm/slurm_commands.h"
#include "integrations/slurm/slurm_state.h"
#include "placer/packing.h"
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
  // How long a submit may wait for phasord's ranking (default 40 ms of the
  // hook's 50: the rest carries the request and the answer). An answer
  // ready after the deadline the hook sends is not given.
  int submit_timeout_ms = 40;
  // How long Start/End/polls wait for phasord (default 1 s; Prolog and
  // Epilog are not on the submission path).
  int lifecycle_timeout_ms = 1000;
  // How long a re-plan waits for phasord's ranking of one pending job
  // (default 300 ms; the Epilog that triggers it waits). Past it the job is
  // left to Slurm.
  int replan_timeout_ms = 300;
  // Candidates per ranking (default 8).
  uint32_t max_candidates = 8;
  // Slurm's packing kept (placer/packing.h): a candidate that leaves fewer
  // idle nodes or fewer wholly idle leaf switches than topology/tree's first
  // is not sent to phasord (default true).
  bool keep_packing = true;
  // The state file, rewritten on every change. Required.
  std::string state_path;
  // A proposal that no poll started this long after it shows (default 1 s)
  // is dropped: the hook gave up on it, or Slurm rejected the job.
  int64_t unbound_grace_ms = 1000;
  // Where profile sources live (job_spec.h).
  ProfileResolverOptions profiles;
  // When set, every RankRequest behind a pin is also written there as
  // `phasor rank` JSON (server form), named <token>.json; a later pin of the
  // same job overwrites it (default "": off).
  std::string dump_dir;
  // Now, in microseconds since the epoch (default: the system clock).
  std::function<int64_t()> clock;
  // Token generator seed (default 0: from std::random_device).
  uint64_t token_seed = 0;
  // Slurm's commands (polls, pins). Required; not owned; must outlive the
  // controller.
  SlurmCommands* slurm = nullptr;
};

struct SubmitQuery {
  std::string comment;                        // the job's comment (opts in, names the profile)
  std::map<std::string, std::string> fields;  // job_desc's node fields (JobRequestFromHook)
  int64_t deadline_us = 0;                    // the hook's deadline (system clock); 0: none
};

struct SubmitAnswer {
  std::string token;               // 32 hex digits
  std::string comment;             // the job's comment with the token (WithToken)
  std::vector<std::string> nodes;  // the pin (ReqNodeList); empty: the job waits, placed when it can start
  uint32_t node_count = 0;         // min_nodes = max_nodes to set with the pin
  std::string candidate;           // the pin's candidate id in the ranking ("c0", ...)
  double score = 1;
  uint32_t candidates = 0;         // how many were sent to phasord (after keep_packing)
  std::string unpinned_because;    // why there is no pin
};

struct ControllerCounters {
  uint64_t proposals = 0;         // tokens given
  uint64_t pinned_at_submit = 0;
  uint64_t declined = 0;          // submits answered without a token (the job untouched)
  uint64_t packing_dropped = 0;   // candidates keep_packing did not send
  uint64_t dropped_unbound = 0;   // proposals no job ever carried (abandoned, rejected)
  uint64_t replan_pins = 0;       // pins set on pending jobs
  uint64_t replan_unpins = 0;     // pins taken back
  uint64_t token_conflicts = 0;   // jobs carrying another job's token
  uint64_t starts = 0;
  uint64_t starts_on_pin = 0;     // of the starts, on the nodes phasor pinned
  uint64_t releases = 0;
};

class SlurmController {
 public:
  // InvalidArgument naming the option; the topology's and the state file's
  // errors as they are.
  static absl::StatusOr<std::unique_ptr<SlurmController>> Create(SlurmControllerOptions options);
  // Writes the state file (and queued dumps) one last time.
  ~SlurmController();
  SlurmController(const SlurmController&) = delete;
  SlurmController& operator=(const SlurmController&) = delete;

  // One poll of Slurm (options.slurm): replaces the known state; binds
  // tokens to job ids, drops proposals whose job is gone or never came,
  // withdraws the placements of jobs that no longer run or lost a node,
  // commits jobs that run without their Prolog having reached the
  // controller, refreshes the running jobs' profiles and shifts from
  // phasord's snapshot (releases phasord does not acknowledge are retried);
  // then re-plans the pending jobs: pins the opted-in jobs that would start
  // now, takes back pins that no longer match. What failed, with the rest
  // still done.
  absl::Status Poll();

  // A token (and, when Slurm would start the job now, a pin) for a job that
  // opts in. FailedPrecondition with the reason when the job is left
  // untouched (no state yet, a restriction phasor does not model, ...);
  // InvalidArgument/NotFound for a bad comment or profile; DeadlineExceeded
  // when the hook's deadline passed before the answer was ready.
  absl::StatusOr<SubmitAnswer> Submit(const SubmitQuery& query);

  // The hook never received the answer for `token`: drops it, and its pin.
  void Abandon(const std::string& token);

  // Job `job_id` started on `nodes` (Prolog, with its token when the
  // comment carries one): commits it to phasord. A job already started is
  // OK (every node's Prolog calls this; calls that come while the commit is
  // under way wait for it). NotFound for a job phasor gave no token;
  // PermissionDenied for a token that belongs to another job.
  // `ring` (when given) gets the job's nodes in its ring's order as
  // committed: phasor's ring order on its pin, else the order phasor chose
  // for the nodes Slurm gave (the TaskProlog exports each node's rank in it).
  absl::Status Start(const std::string& job_id, const std::string& token, const std::vector<std::string>& nodes,
                     std::vector<std::string>* ring = nullptr);

  // Job `job_id` ends on `node` (the Epilog, for every job, while the node is
  // still held): releases its placement if phasor placed it, then, when
  // opted-in jobs wait, polls Slurm and re-plans them with the job's nodes
  // as free. OK for a job phasor did not place.
  absl::Status End(const std::string& job_id, const std::string& node);

  // Whether a poll has given the controller Slurm's state (before it, every
  // submission is left to Slurm).
  bool HasState() const;

  // Writes the state file and the queued dumps now (they are otherwise
  // written by a thread of their own, soon after each change); on return
  // every change and dump queued before the call is on disk.
  void Flush();

  // Jobs placed now (Slurm job id -> nodes), pins on pending jobs (job id ->
  // nodes), and counters.
  std::map<std::string, std::vector<std::string>> Placed() const;
  std::map<std::string, std::vector<std::string>> Pins() const;
  ControllerCounters counters() const;

 private:
  struct Proposal {
    std::string job_id;             // "" until a poll or the Prolog shows the job
    int64_t created_us = 0;
    JobRequest request;
    placer::TrafficProfile profile;
    std::vector<std::string> pin;   // nodes phasor set as the job's ReqNodeList
    std::string num_nodes;          // the job's node count without the pin ("2", "1-8")
  };
  struct PlacedJob {
    std::string token;
    std::vector<std::string> nodes;
    placer::TrafficProfile profile;
  };
  // A ranking prepared under the lock and sent without it.
  struct Ranking {
    placer::RankRequest request;
    std::vector<placer::Candidate> as_servers;  // the candidates in server form
    std::string self;                           // the job's id in the request
  };
  struct Choice {
    std::vector<std::string> nodes;
    std::string candidate;
    double score = 1;
    uint32_t candidates = 0;
  };
  // Free nodes as the model of Slurm sees them.
  struct FreeNodes {
    std::set<std::string> idle;  // idle now
    std::set<std::string> soon;  // held only by jobs that end (their Epilog runs), or named by an Epilog
  };
  // The model of which pending job Slurm starts next, from the known state.
  struct Walk {
    FreeNodes free;                  // after the jobs that would start took theirs
    std::set<std::string> blocked;   // partitions where a job that cannot start waits
  };

  explicit SlurmController(SlurmControllerOptions options) : options_(std::move(options)) {}
  absl::Status Init();
  // Under mu_: the state changed; the writer thread writes it soon.
  void Save();
  std::string StateJsonLocked() const;
  static absl::Status WriteAtomically(const std::string& path, const std::string& text);
  // Queues `request` for dump_dir/<name>.json (written by the writer thread).
  void QueueDump(const std::string& name, const placer::RankRequest& request) const;
  void WriteOnce();
  void WriterLoop();
  absl::Status Load();
  // Server-form candidates become link shares over the fabric (the ring
  // traffic model of `phasor rank --topology`), so phasord needs no fabric.
  // A candidate that cannot be routed is dropped (with the reason in `why`).
  void Route(placer::RankRequest& request, std::string& why) const;
  // The running placed jobs (their latest profiles, shifts and servers), for
  // protocol::AddRunningJobs.
  std::vector<protocol::RunningJob> RunningJobs() const;
  // Under mu_: the candidates of a job (`self`, with `profile`) needing
  // `count` of the `free` nodes it may use (`eligible`), with the running
  // jobs; `free` also judges the packing rule.
  absl::StatusOr<Ranking> PrepareRanking(const std::string& self, const placer::TrafficProfile& profile,
                                         const std::set<std::string>& eligible, uint32_t count,
                                         const std::set<std::string>& free);
  // Without mu_: routes and ranks through `phasord`; the top candidate.
  absl::StatusOr<Choice> Rank(Ranking& ranking, client::Client& phasord, const std::string& dump_name) const;
  // Under mu_: the free nodes of the known state with `freeing` (nodes an
  // Epilog names), less the pins of proposals no poll shows yet.
  FreeNodes FreeNodesLocked(const std::set<std::string>& freeing) const;
  static void TakeNodes(FreeNodes& free, const std::vector<std::string>& nodes);
  // Where a job's nodes come from: the idle ones when they suffice (no
  // waiting for an Epilog), else the idle and the soon free.
  static std::set<std::string> PoolFor(const FreeNodes& free, const NodeDemand& demand);
  static size_t Usable(const std::set<std::string>& pool, const NodeDemand& demand);
  // Nodes another job runs on, or down or drained: a pin on one is stale.
  static std::set<std::string> Occupied(const ClusterState& cluster);
  static bool PinIsStale(const std::vector<std::string>& pin, const NodeDemand& demand,
                         const std::set<std::string>& occupied);
  // topology/tree's own first choice for the job in `pool` (empty: none).
  std::vector<std::string> TreeFirst(const std::set<std::string>& pool, const NodeDemand& demand) const;
  // Under mu_: the walk of the pending jobs, each taking its pin or Slurm's
  // own first choice, without ranking.
  Walk WalkLocked(const std::set<std::string>& freeing) const;
  // Re-plans the pending jobs on the known state with `freeing` (nodes whose
  // job is ending) counted as free; replan_mu_ held.
  absl::Status ReplanLocked(const std::set<std::string>& freeing);
  // The state part of Poll (`polled_at_us`: when the poll began), with
  // replan_mu_ held; `snapshot`: also read phasord's snapshot.
  absl::Status RefreshImpl(const ClusterState& state, int64_t polled_at_us, bool snapshot);
  // Tells phasord of the jobs in unreleased_ (without mu_ held).
  absl::Status ReleaseUnreleased();
  std::unique_ptr<client::Client> AcquireClient();
  void ReturnClient(std::unique_ptr<client::Client> c);
  std::string NewToken();

  SlurmControllerOptions options_;
  std::unique_ptr<topology::Topology> fabric_;
  std::unique_ptr<topology::Router> router_;
  // The packing rule's view of the idle nodes the fabric knows, kept while
  // they stay the same (under mu_): building it walks every node of the
  // fabric, tens of ms a submit at 10,000 nodes.
  struct Packing {
    std::set<std::string> idle;  // the idle nodes it was built from
    placer::PackingView view;
    std::unique_ptr<placer::PackingCounts> counts;  // of `view`
  };
  std::unique_ptr<Packing> packing_;
  std::optional<ProfileResolver> resolver_;
  std::unique_ptr<client::Client> submit_client_;  // submit_timeout_ms; Submit only (one at a time: submit_mu_)
  std::unique_ptr<client::Client> replan_client_;  // replan_timeout_ms; under replan_mu_

  std::mutex submit_mu_;  // slurmctld submits one job at a time; this keeps it so
  std::mutex release_mu_;  // one ReleaseUnreleased at a time
  // The writer thread: the state file and dumps (write_mu_ guards the flags
  // and the queue; mu_ is taken only to serialize the state).
  mutable std::mutex write_mu_;
  mutable std::condition_variable write_cv_;
  bool dirty_ = false;
  bool stop_writer_ = false;
  mutable std::deque<std::pair<std::string, placer::RankRequest>> dumps_;
  // One WriteOnce at a time, whole: Flush returns only after what the writer
  // thread had already taken off the queue is on disk as well.
  std::mutex writing_mu_;
  std::thread writer_;
  std::mutex replan_mu_;  // one poll or re-plan at a time
  std::map<std::string, int64_t> gated_;  // under replan_mu_: jobs whose End re-planned with all their nodes free
  std::mutex clients_mu_;
  std::vector<std::unique_ptr<client::Client>> idle_clients_;  // lifecycle_timeout_ms

  mutable std::mutex mu_;
  std::condition_variable started_cv_;
  bool have_state_ = false;
  ClusterState cluster_;
  std::map<std::string, SlurmJob> jobs_;     // cluster_.jobs by id
  Walk base_;                                // the walk of the last poll, less submit pins since
  std::map<std::string, Proposal> proposals_;  // token ->
  std::map<std::string, std::string> token_of_;  // Slurm job id -> token
  std::set<std::string> starting_;           // job ids whose commit is under way
  std::map<std::string, PlacedJob> placed_;  // Slurm job id ->
  std::set<std::string> unreleased_;         // ended, phasord not told yet
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
