// phasord's placement service without a transport (SPEC sections 7 and 9):
// typed requests in, absl::StatusOr out. The ZeroMQ server (server.h) decodes
// frames, calls these methods and turns a failed Status into an Error reply
// (protocol/status.h); tests and fuzzers call them directly.
//
// What each call does:
//   - Rank: checks limits, resolves profiles (inline, or measured by probes),
//     routes server-form candidates over the fabric, solves, and keeps the
//     ranking for a later Commit. In the server it runs in three steps so that
//     the solve happens on the solver pool: PrepareRank (here), Solve (any
//     thread), RecordRanking (here).
//   - Commit: stores the chosen candidate's placement and shifts and
//     publishes the changed offsets.
//   - GetOffset, Health, GetSnapshot: read what is stored.
//   - AcceptProfile: a probe's ProfileUpdate; a job's phase drives the closed
//     loop (closed_loop.h), a link's profile its measured score.
//   - Release: jobs that ended (or were requeued) leave the placement.
// Codes: InvalidArgument for a bad field, NotFound for an unknown job,
// ranking or candidate, ResourceExhausted for a limit, Internal when the
// database fails. State is written before the call returns OK.
//
// Releases prune everything phasord keeps per job (its rows, profiles,
// closed-loop state and metric series) and per link no placement loads any
// longer (link scores, capacities, series); a Commit of a ranking made before
// the release of one of its jobs is refused (FailedPrecondition: rank again).
//
// Thread safety: one thread calls every method except Solve, which is a pure
// function of its PreparedRanking and may run on any thread.
#ifndef PHASOR_DAEMON_SERVICE_H_
#define PHASOR_DAEMON_SERVICE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/closed_loop.h"
#include "daemon/config.h"
#include "daemon/metrics.h"
#include "daemon/state_store.h"
#include "placer/candidates.h"
#include "placer/packing.h"
#include "placer/ranker.h"
#include "placer/ranking_policy.h"
#include "protocol/phasor.pb.h"
#include "protocol/running_jobs.h"
#include "topology/router.h"
#include "topology/topology.h"

namespace phasor::daemon {

// Now, in microseconds since the Unix epoch.
using Clock = std::function<int64_t()>;
Clock SystemClock();

// Where offsets go out (the PUB socket in the server). Called on the
// service's thread.
using OffsetPublisher = std::function<void(const v1::OffsetUpdate&)>;

using SteadyTime = std::chrono::steady_clock::time_point;

// A RankRequest checked and resolved, ready to solve.
struct PreparedRanking {
  uint64_t request_id = 0;
  uint64_t ranking_id = 0;
  placer::RankRequest request;
  // Server-form candidates set aside before Rank(): refused by the packing
  // rule (ranking_policy.keep_packing with free_servers), or not routable.
  std::vector<placer::RejectedCandidate> set_aside;
  std::string candidates;                           // the request as ranked (serialized RankRequest)
  bool reply_links = true;                          // RankRequest.reply_detail FULL (else ORDER: no links)
  placer::RankLimits limits;                        // the configured limits, deadline included
  placer::RankingPolicyOptions policy;              // the configured ranking_policy, applied after Rank()
  // Its time, from its arrival: limits.deadline_ms, or the client's wait_ms
  // when shorter. Past `deadline` it is answered without being solved.
  uint64_t time_ms = 0;
  SteadyTime deadline;
};

// A solved ranking: the reply as the request asked for it (reply_detail) and
// what a Commit reads of the ranking, serialized (each candidate's id, score,
// shifts and its links' ids and scores), both built on the solving thread.
struct SolvedRanking {
  v1::RankReply reply;
  std::string commit_view;
};

// The checks a ProfileUpdate passes before phasord keeps it (and again when a
// stored one is loaded): a subject, confidence in 0..1, a valid profile.
absl::Status CheckProfileUpdate(const v1::ProfileUpdate& update);

class Service {
 public:
  // Opens the state database and restores epoch, offsets, placements and
  // profiles. InvalidArgument for bad options; Unavailable/Internal when the
  // database or the topology file cannot be read. `metrics` and the
  // callbacks must outlive the service. `store`: the state to serve from
  // (the etcd store of an elected leader); null opens the SQLite store at
  // options.state_path.
  static absl::StatusOr<std::unique_ptr<Service>> Open(const DaemonOptions& options, Metrics* metrics,
                                                       Clock clock, OffsetPublisher publish,
                                                       std::unique_ptr<StateStore> store = nullptr);

  // `arrival`: when the request was received (its time runs from there).
  absl::StatusOr<PreparedRanking> PrepareRank(const v1::RankRequest& request,
                                              SteadyTime arrival = std::chrono::steady_clock::now());
  // Ranks within what is left of the request's time at `now`; a request
  // whose time has passed is ResourceExhausted (deadline_ms, naming how long
  // it waited) and is not ranked.
  static absl::StatusOr<SolvedRanking> Solve(const PreparedRanking& prepared,
                                             SteadyTime now = std::chrono::steady_clock::now());
  // Stores a solved ranking (so that it can be committed) and counts it.
  absl::Status RecordRanking(const PreparedRanking& prepared, const SolvedRanking& solved);
  // PrepareRank, Solve and RecordRanking in a row (tests, fuzzers).
  absl::StatusOr<v1::RankReply> Rank(const v1::RankRequest& request);

  absl::StatusOr<v1::CommitReply> Commit(const v1::CommitPlacement& request);
  absl::StatusOr<v1::OffsetUpdate> GetOffset(const v1::GetOffset& request) const;
  v1::HealthReply Health(const v1::Health& request) const;
  absl::StatusOr<v1::Snapshot> GetSnapshot(const v1::GetSnapshot& request) const;
  absl::Status AcceptProfile(const v1::ProfileUpdate& update);
  // The jobs leave the committed placement: their rows go and their offsets
  // are no longer published (agents keep the last one they got). Unknown
  // jobs are skipped; the reply names the jobs released.
  absl::StatusOr<v1::ReleaseReply> Release(const v1::ReleasePlacement& request);

  // Publishes every offset (at start, and every republish_interval_ms).
  void PublishAll();

  int64_t epoch_us() const { return epoch_us_; }
  size_t jobs() const { return offsets_.size(); }

 private:
  Service(DaemonOptions options, Metrics* metrics, Clock clock, OffsetPublisher publish)
      : options_(std::move(options)),
        metrics_(metrics),
        clock_(std::move(clock)),
        publish_(std::move(publish)),
        realign_(options_.realign_threshold_us, options_.realign_min_interval_ms) {}
  absl::Status Restore(std::unique_ptr<StateStore> store);
  v1::OffsetUpdate ToUpdate(const StoredOffset& offset) const;
  void Publish(const StoredOffset& offset);
  void ScoreLinkProfile(const std::string& link, const placer::TrafficProfile& profile);
  // The capacity phasord knows for a link: the fabric's, else a commit's.
  std::optional<double> CapacityOf(const std::string& link) const;
  // The committed placement as running jobs (RankRequest.running_committed):
  // GetSnapshot's placement through protocol::RunningJobsOfSnapshot, built
  // again only after something it is built from changed.
  struct CommittedRunning {
    uint64_t changes = 0;  // committed_changes_ when built
    std::vector<protocol::RunningJob> jobs;
    std::vector<placer::Link> links;
  };
  absl::StatusOr<const CommittedRunning*> CommittedRunningJobs();

  DaemonOptions options_;
  Metrics* metrics_;
  Clock clock_;
  OffsetPublisher publish_;
  Realigner realign_;
  int64_t started_us_ = 0;
  int64_t epoch_us_ = 0;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<topology::Topology> fabric_;
  std::unique_ptr<topology::Router> fabric_router_;
  uint64_t next_ranking_id_ = 1;
  // The packing rule's view of the last free_servers (PrepareRank, on the
  // service's thread): a host sends the same free servers until a job starts
  // or ends, and at 1,000 servers building the view was a tenth of the
  // request's preparation. `counts` points into `view`.
  struct Packing {
    std::vector<std::string> free_servers;  // as the request listed them
    placer::PackingView view;
    std::unique_ptr<placer::PackingCounts> counts;
  };
  std::unique_ptr<Packing> packing_;
  // The routed running jobs' entries of the request as ranked (a
  // RankRequest holding only running.links[job], serialized), by job, while
  // the router keeps the same ring: at 10,000 servers a request's running
  // part is a hundred thousand link shares, and the same jobs run from one
  // request to the next. Only the last request's jobs are kept (PrepareRank).
  struct RunningEntry {
    std::shared_ptr<const topology::Router::RingShares> ring;
    std::string bytes;
  };
  std::map<std::string, RunningEntry> running_entries_;
  // The routed running jobs' entries of the stored request, serialized (a
  // RankRequest's running.links entry each, appended to the request as
  // ranked), from running_entries_ where their ring is the same; keeps
  // these jobs' entries only.
  std::string StoredRunningEntries(const placer::RoutedRunning& routed);

  // State mirrored from the database.
  std::map<std::string, StoredOffset> offsets_;
  std::map<std::string, v1::ProfileUpdate> job_profiles_;
  std::map<std::string, double> link_capacity_gbps_;
  // The profiles RankRequests gave inline (the latest per job), for GetSnapshot.
  std::map<std::string, placer::TrafficProfile> request_profiles_;
  // Per committed job, where its Up phase starts after its slot (UpStartUs of
  // the profile it was committed with; closed_loop.h).
  std::map<std::string, uint32_t> up_start_us_;
  // Per committed job, the links its placement loads.
  std::map<std::string, std::set<std::string>> job_links_;
  // job -> the first ranking id made after its latest release: a commit of
  // an older ranking naming the job is refused. Pruned with the rankings.
  std::map<std::string, uint64_t> release_markers_;
  size_t placements_ = 0;
  uint64_t placement_version_ = 0;  // as stored (StateStore::PlacementVersion)
  // Counts the changes of what GetSnapshot reports (placements, offsets,
  // profiles of committed jobs, capacities): a commit, a release, a job's
  // ProfileUpdate, a request's profile for a committed job.
  uint64_t committed_changes_ = 0;
  std::unique_ptr<CommittedRunning> committed_running_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_SERVICE_H_
