// The scheduler extender's decisions (docs/kubernetes.md): plans whole
// training jobs through phasord, steers each job's pods to its plan, commits
// the placement that happened and releases it when the job ends.
//
// Jobs, not pods. The first filter or prioritize call for a pod of a job
// (pod_group.h) plans the whole job: the extender proposes up to
// `max_candidates` whole-job placements over the nodes the scheduler offers
// (free servers packed leaf by leaf from each leaf in turn, and one spread
// round-robin over the leaves, which keeps the last slot), asks phasord to rank them together with the
// jobs already running (phasord's committed placement, pinned at their
// shifts), and keeps the best as the job's plan. Later pods of the job get
// score 10 on the plan's nodes not yet taken by the job and 0 elsewhere; with
// `filter_to_plan` the filter also drops the other nodes. Pods outside any
// job, and jobs that cannot be planned, get neutral answers (every node 0,
// filter passes every node).
//
// What really happened. The extender learns where each pod went from the API
// server (OnPodUpdate / OnPodList, fed by PodWatcher: a pod's spec.nodeName)
// and, when it serves the bind verb (`bind_verb`, off by default), from its
// own binds. When every pod of the job is placed it commits to phasord: the
// planned candidate when the pods landed on the plan, else a one-candidate
// ranking of the nodes they really got. Nothing is committed for a job whose
// pods never all land, so phasord never publishes an offset for a placement
// that did not happen. A plan whose pods have not all landed within
// `plan_ttl_ms` expires and frees its nodes.
//
// Letting go. When a committed job's pod finishes (Succeeded, Failed) or is
// deleted (a deletion timestamp, or gone), the job is released in phasord
// and forgotten; a plan whose pod goes is forgotten. After a (re)list the
// extender also releases the jobs phasord holds under its ids
// ("<namespace>/<group>") that no listed pod runs (they ended while it was not
// watching, e.g. before a restart), and adopts those that do. A release
// phasord does not take is retried.
//
// Fail open, within the scheduler's httpTimeout. A filter or prioritize call
// costs at most two phasord calls of `phasord_timeout_ms` (snapshot and rank;
// validated to fit `http_timeout_ms`); a job whose plan attempt failed gets
// neutral answers for `retry_after_ms`. Commits and releases run on the
// extender's own thread, off the request path (`lifecycle_timeout_ms` each);
// a failed commit is counted and logged, the pod stays where it is.
//
// Bounded memory: at most `max_plans` plans and `max_tracked_pods` pods
// remembered (pod uid -> job, for bind, whose arguments carry no labels);
// committed jobs are held until they are released.
//
// Thread safety: every public method may be called concurrently. One mutex
// guards the state and is never held across a call to phasord (or anything
// else that waits on the network): planning takes what it needs, lets the
// lock go for the two calls, and takes it back to store the plan (a plan
// that meanwhile lost a node to another job's plan is dropped, and the job
// planned again at its next call). Two calls for the same job share one plan
// attempt (the second waits for it, within its own budget).
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "integrations/client/client.h"
#include "integrations/kubernetes/extender_types.h"
#include "integrations/kubernetes/pod_group.h"
#include "models/model_catalog.h"
#include "placer/ranker.h"
#include "topology/topology.h"

namespace phasor::kubernetes {

// What every bound inside a scheduler call leaves spare of the call's
// httpTimeout (the HTTP exchange, parsing, the reply).
inline constexpr int kTimeoutMarginMs = 100;

struct ExtenderOptions {
  // phasord's request endpoint (ROUTER). Required.
  std::string phasord_endpoint;
  // CURVE keys for a TCP phasord; nullopt: plain (ipc:// or loopback only).
  std::optional<client::CurveClientKeys> curve;
  // The scheduler's httpTimeout for this extender (default 1 s, as in
  // deploy/kubernetes/scheduler.yaml). Every call's work fits inside it with
  // kTimeoutMarginMs to spare: a plan's two phasord calls.
  int http_timeout_ms = 1000;
  // How long one phasord call inside a filter or prioritize call may take
  // (default 200 ms; 2 x this + kTimeoutMarginMs <= http_timeout_ms).
  int phasord_timeout_ms = 200;
  // How long one phasord call of a commit or release may take (default 2 s;
  // they run on the extender's own thread, not inside a scheduler call).
  int lifecycle_timeout_ms = 2000;
  // After a failed plan attempt, the job gets neutral answers this long
  // before phasord is asked again (default 1 s).
  int64_t retry_after_ms = 1000;
  // Serve kube-scheduler's bind verb (default off: the scheduler's own
  // binder binds and the extender learns where pods went from the API
  // server's watch). On, Bind() posts the Binding with the extender's
  // credentials; the HTTP server must then be reachable only by the
  // scheduler (loopback beside it, or TLS with client certificates).
  bool bind_verb = false;

  // The fabric (topology YAML, docs/topology.md): the same file phasord's
  // topology_path names (a ConfigMap in deploy/kubernetes/). Required.
  std::string topology_path;
  // Node -> server: the value of this Node label when the label is set and
  // Nodes are sent in full; else `node_servers[name]`; else the node's name.
  std::string node_server_label;
  std::map<std::string, std::string> node_servers;

  PodGroupOptions groups;
  // The job's traffic profile: an inline JSON profile (SPEC section 2, e.g.
  // {"period_us": 200000, "square": {"up_us": 60000, "up_gbps": 80}}) ...
  std::string profile_annotation = "phasor.io/profile";
  // ... or a model of the catalogue (models/model_catalog.h, e.g. "bert") ...
  std::string model_annotation = "phasor.io/model";
  // ... whose timing is looked up for this many GPUs per pod (default: the
  // pod's nvidia.com/gpu, else the server's GPUs in the fabric).
  std::string gpus_annotation = "phasor.io/gpus-per-pod";
  // The catalogue's folder; empty: model names are refused.
  std::string models_dir;
  // With neither annotation, phasord's latest probe profile of the job is
  // used (the job's id is "<namespace>/<group>").

  // Sent with every RankRequest (quantum_us default 1000, max_bins, spanning
  // trees, ...: placer/ranker.h). A coarser quantum bounds the solve time.
  placer::RankOptions rank;
  // Candidates proposed per plan (default 8, as the Slurm integration's;
  // phasord's limit is 256): the packings from the first leaves, and the
  // spread in the last slot. phasord adds the running jobs (its committed
  // placement) to each request itself (RankRequest.running_committed), so a
  // candidate costs only the new job's links (docs/kubernetes.md, benchmark).
  uint32_t max_candidates = 8;
  // Filter drops nodes outside the job's plan (default off: only prioritize steers).
  bool filter_to_plan = false;
  // A plan whose pods have not all landed by then expires (default 5 min).
  int64_t plan_ttl_ms = 300'000;
  // Plans held at once (default 1024); a job beyond gets neutral answers.
  uint32_t max_plans = 1024;
  // Pods remembered for bind (default 65536; the oldest are forgotten).
  uint32_t max_tracked_pods = 65536;
};

// Binds a pod to a node (the API server's pods/<name>/binding); an error
// fails the bind verb (the scheduler retries the pod).
using BindFunction = std::function<absl::Status(const ExtenderBindingArgs&)>;
// Milliseconds on a monotonic clock.
using ClockMs = std::function<int64_t()>;

// A job's plan.
struct JobPlan {
  std::string job;        // "<namespace>/<group>"
  uint64_t ranking_id = 0;
  std::string candidate;  // the chosen candidate's id ("c0", ...)
  uint32_t pods = 0;      // the job's size
  std::vector<std::string> nodes;            // node names, the ring's order
  std::map<std::string, std::string> bound;  // pod uid (or namespace/name) -> node
  std::map<std::string, uint32_t> bound_rank;  // pod -> its rank in the job, for the pods that carry one
  int64_t created_ms = 0;
  // The request as sent (server form): the new job and its candidates.
  // phasord ranked them among its committed placement
  // (RankRequest.running_committed), which the request does not carry.
  placer::RankRequest request;
  uint64_t rank_request_bytes = 0;  // the RankRequest's size on the wire
  bool profile_from_phasord = false;  // the new job's profile is phasord's (a probe's)
};

// A pod as the API server reports it (PodWatcher).
struct PodState {
  Pod pod;
  std::string node;       // spec.nodeName ("" while pending)
  bool finished = false;  // status.phase Succeeded or Failed, or a deletion timestamp set
};

struct ExtenderStats {
  uint64_t plans = 0;             // plans made
  uint64_t plan_failures = 0;     // phasord unreachable, slow or refusing
  uint64_t plans_expired = 0;
  uint64_t plans_refused = 0;     // max_plans reached, too few free servers or no profile
  uint64_t plans_conflicted = 0;  // dropped: another job's plan took a node meanwhile
  uint64_t plans_forgotten = 0;   // a pod of the job went before the job was placed
  uint64_t neutral_answers = 0;   // filter/prioritize answered without a plan
  uint64_t binds = 0;
  uint64_t bind_failures = 0;     // the API server refused, or the names were not Kubernetes names
  uint64_t commits = 0;           // jobs committed to phasord
  uint64_t commits_replanned = 0; // ... of which ranked again as they landed
  uint64_t commit_failures = 0;
  uint64_t releases = 0;          // jobs released in phasord (ended, deleted, or gone while not watched)
  uint64_t release_failures = 0;  // releases phasord did not take (retried)
  uint64_t jobs_adopted = 0;      // committed jobs found running after a (re)list
};

class Extender {
 public:
  // Loads the fabric (and the catalogue when models_dir is set) and prepares
  // the phasord client. InvalidArgument naming the option for a bad option or
  // fabric; `bind` is required with bind_verb. phasord need not be up.
  static absl::StatusOr<std::unique_ptr<Extender>> Create(ExtenderOptions options, BindFunction bind = nullptr,
                                                          ClockMs clock = nullptr);
  ~Extender();

  ExtenderFilterResult Filter(const ExtenderArgs& args);
  HostPriorityList Prioritize(const ExtenderArgs& args);
  // With bind_verb: checks the names (Kubernetes DNS-1123 names: nothing that
  // is not one reaches the API server), binds, records the node. Without:
  // an error result ("the bind verb is off").
  ExtenderBindingResult Bind(const ExtenderBindingArgs& args);

  // The API server's view of the pods (PodWatcher): one pod changed, one
  // was deleted, or the whole list (after a start or a 410 Gone: a pod not
  // in it is gone).
  void OnPodUpdate(const PodState& state);
  void OnPodDeleted(const Pod& pod);
  void OnPodList(const std::vector<PodState>& pods);

  // Waits until the extender's own thread has done every commit and release
  // asked so far (tests, shutdown); false when it has not within timeout_ms.
  bool WaitIdle(int timeout_ms);

  // The job's live plan, if any; the jobs committed and not released.
  std::optional<JobPlan> PlanOf(const std::string& job) const;
  std::set<std::string> CommittedJobs() const;
  ExtenderStats stats() const;
  // Prometheus text exposition of stats().
  std::string MetricsText() const;

  const ExtenderOptions& options() const { return options_; }
  const topology::Topology& fabric() const { return fabric_; }

 private:
  struct TrackedPod {
    std::string job;
    uint32_t pods = 0;
    int64_t seen_ms = 0;
    std::optional<uint32_t> rank;  // its rank in the job (pod_group.h RankIndexOfPod)
  };
  // An offered node and the fabric server it maps to.
  struct Offered {
    std::string node;
    std::string server;
  };
  // What a plan attempt needs, taken under the lock.
  struct PlanInputs {
    PodJob job;
    std::vector<std::vector<std::string>> proposals;  // server lists
    std::optional<placer::TrafficProfile> profile;    // nullopt: phasord's
    std::vector<std::string> free_servers;            // every free offered server (phasord's own candidates)
  };
  // What a scheduler call answers from: the plan's nodes not yet taken.
  struct Steer {
    std::string job;
    std::set<std::string> open;
    // The node of the pod's rank in the plan's ring order, when the pod
    // carries a rank and that node is still open: the pod goes there.
    std::optional<std::string> node;
  };
  // A committed job: its pods (uid or namespace/name).
  struct CommittedJob {
    std::set<std::string> pods;
  };
  // Work for the extender's own thread.
  struct Task {
    enum Kind { kCommit, kRelease, kReconcile } kind = kCommit;
    JobPlan plan;                                          // kCommit
    std::vector<std::string> jobs;                         // kRelease
    std::map<std::string, std::set<std::string>> live;     // kReconcile: job -> its live pods
  };

  Extender(ExtenderOptions options, BindFunction bind, ClockMs clock, topology::Topology fabric,
           std::optional<models::ModelCatalog> models);

  std::vector<Offered> OfferedNodes(const ExtenderArgs& args) const;
  // The job's plan as a Steer, planning it now if needed (the lock is let go
  // around phasord's calls); nullopt for a neutral answer.
  std::optional<Steer> SteerFor(const Pod& pod, const std::vector<Offered>& offered);
  absl::StatusOr<PlanInputs> PlanInputsLocked(const Pod& pod, const PodJob& job, const std::vector<Offered>& offered);
  // The two phasord calls; no lock held.
  absl::StatusOr<JobPlan> RankPlan(const PlanInputs& in, client::Client& phasord);
  absl::StatusOr<std::optional<placer::TrafficProfile>> ProfileOf(const Pod& pod, const PodJob& job,
                                                                 uint32_t server_gpus) const;
  void ExpireLocked();
  void TrackLocked(const Pod& pod, const PodJob& job);
  // What the pod keyed `pod_key` is steered to by `plan`.
  Steer SteerOfPlanLocked(const JobPlan& plan, const std::string& pod_key) const;
  // A pod of `job` is on `node`: records it in the job's plan, and queues the
  // commit when every pod of the job is placed.
  void RecordPlacedLocked(const std::string& job, const std::string& pod_key, const std::string& node);
  // A pod of `job` finished or went: a committed job is released, a plan forgotten.
  void PodGoneLocked(const std::string& job, const std::string& pod_key, const std::string& why);
  void QueueLocked(Task task);

  // A socket to phasord whose calls wait timeout_ms (Connect makes no network call).
  absl::StatusOr<std::unique_ptr<client::Client>> Connect(int timeout_ms);
  absl::StatusOr<std::unique_ptr<client::Client>> TakeClientLocked(int timeout_ms);
  void LifecycleLoop();
  void CommitTask(JobPlan plan);
  void ReleaseTask(std::vector<std::string> jobs);
  void ReconcileTask(const std::map<std::string, std::set<std::string>>& live);
  // Ranks the placement that happened (a fresh snapshot's running jobs, the
  // job on the nodes its pods got) and commits it.
  absl::Status CommitAsPlaced(const JobPlan& plan, uint64_t& ranking_id, std::string& candidate);

  ExtenderOptions options_;
  BindFunction bind_;
  ClockMs clock_;
  topology::Topology fabric_;
  std::optional<models::ModelCatalog> models_;
  // The fabric's servers, indexed once when the fabric is loaded: planning
  // sorts and groups the offered nodes by these indices (no map lookup per
  // comparison of a 1,000-node sort).
  std::unordered_map<std::string, size_t> server_order_;  // server -> index in fabric order
  std::vector<size_t> leaf_of_server_;                     // index -> its leaf's index in leaf_ids_
  std::vector<std::string> leaf_ids_;                      // leaf switches (a server's first switch)
  zmq::context_t context_{1};

  mutable std::mutex mu_;
  std::condition_variable planned_;  // a plan attempt finished
  std::condition_variable work_;     // a task queued, or stopping
  std::condition_variable idle_;     // the lifecycle thread ran out of work
  std::vector<std::unique_ptr<client::Client>> idle_clients_;  // for scheduler calls (phasord_timeout_ms)
  std::map<std::string, JobPlan> plans_;            // job -> plan
  std::set<std::string> planning_;                  // jobs with a plan attempt under way
  std::map<std::string, int64_t> failed_until_ms_;  // job -> no new attempt before
  std::map<std::string, TrackedPod> pods_;          // pod uid -> job
  std::map<std::string, std::string> node_by_server_;  // learned from requests
  std::map<std::string, CommittedJob> committed_;   // committed (or being committed), not released
  std::set<std::string> unreleased_;                // releases phasord has not taken yet
  std::deque<Task> tasks_;
  bool busy_ = false;  // the lifecycle thread is running a task
  bool stopping_ = false;
  ExtenderStats stats_;
  std::thread lifecycle_;  // last: started once everything above exists
};

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_H_
