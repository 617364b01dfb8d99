// The scheduler extender's decisions (docs/kubernetes.md): plans whole
// training jobs through phasord and steers each job's pods to its plan.
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
// What really happened. The extender is the scheduler's binder (bindVerb):
// it binds each pod through `bind` (the API server's pods/binding in
// production, api_binder.h) and records the node. When every pod of the job
// is bound it commits to phasord: the planned candidate when the pods landed
// on the plan, else a one-candidate ranking of the nodes they really got.
// Nothing is committed for a job whose pods never all bind, so phasord never
// publishes an offset for a placement that did not happen. A plan whose pods
// have not all bound within `plan_ttl_ms` expires and frees its nodes.
//
// Fail open. A phasord that is down or slow costs at most two calls of
// `phasord_timeout_ms` (snapshot and rank) for one plan attempt; the job then
// gets neutral answers for `retry_after_ms` without further calls. A commit
// that fails is counted and logged; the bind itself still succeeds.
//
// Bounded memory: at most `max_plans` plans and `max_tracked_pods` pods
// remembered (pod uid -> job, for bind, whose arguments carry no labels).
//
// Thread safety: every public method may be called concurrently (one mutex;
// phasord calls are made under it, so plans are made one at a time).
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "integrations/client/client.h"
#include "integrations/kubernetes/extender_types.h"
#include "integrations/kubernetes/pod_group.h"
#include "placer/ranker.h"
#include "models/model_catalog.h"
#include "topology/topology.h"

namespace phasor::kubernetes {

struct ExtenderOptions {
  // phasord's request endpoint (ROUTER). Required.
  std::string phasord_endpoint;
  // CURVE keys for a TCP phasord; nullopt: plain (ipc:// or loopback only).
  std::optional<client::CurveClientKeys> curve;
  // How long one phasord call may take (default 200 ms, far below the
  // scheduler's 5 s extender timeout).
  int phasord_timeout_ms = 200;
  // After a failed plan attempt, the job gets neutral answers this long
  // before phasord is asked again (default 1 s).
  int64_t retry_after_ms = 1000;

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
  // spread in the last slot. The running jobs' link shares go once per
  // request (RankRequest.running), so a candidate costs only the new job's
  // links (docs/kubernetes.md, benchmark).
  uint32_t max_candidates = 8;
  // Filter drops nodes outside the job's plan (default off: only prioritize steers).
  bool filter_to_plan = false;
  // A plan whose pods have not all bound by then expires (default 5 min).
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
  int64_t created_ms = 0;
  // The request as ranked (server form), in the long form `phasor rank`
  // takes: every candidate carries the running jobs' link shares. phasord got
  // them once, in RankRequest.running (the same ranking).
  placer::RankRequest request;
  uint64_t rank_request_bytes = 0;  // the RankRequest's size on the wire
};

struct ExtenderStats {
  uint64_t plans = 0;             // plans made
  uint64_t plan_failures = 0;     // phasord unreachable, slow or refusing
  uint64_t plans_expired = 0;
  uint64_t plans_refused = 0;     // max_plans reached, too few free servers or no profile
  uint64_t neutral_answers = 0;   // filter/prioritize answered without a plan
  uint64_t binds = 0;
  uint64_t bind_failures = 0;
  uint64_t commits = 0;           // jobs committed to phasord
  uint64_t commits_replanned = 0; // ... of which on nodes other than the plan's
  uint64_t commit_failures = 0;
};

class Extender {
 public:
  // Loads the fabric (and the catalogue when models_dir is set) and prepares
  // the phasord client. InvalidArgument naming the option for a bad option or
  // fabric. phasord need not be up.
  static absl::StatusOr<std::unique_ptr<Extender>> Create(ExtenderOptions options, BindFunction bind,
                                                          ClockMs clock = nullptr);

  ExtenderFilterResult Filter(const ExtenderArgs& args);
  HostPriorityList Prioritize(const ExtenderArgs& args);
  ExtenderBindingResult Bind(const ExtenderBindingArgs& args);

  // The job's live plan, if any.
  std::optional<JobPlan> PlanOf(const std::string& job) const;
  ExtenderStats stats() const;
  // Prometheus text exposition of stats().
  std::string MetricsText() const;

  const topology::Topology& fabric() const { return fabric_; }

 private:
  struct TrackedPod {
    std::string job;
    uint32_t pods = 0;
    int64_t seen_ms = 0;
  };
  // An offered node and the fabric server it maps to.
  struct Offered {
    std::string node;
    std::string server;
  };

  Extender(ExtenderOptions options, BindFunction bind, ClockMs clock, topology::Topology fabric,
           std::optional<models::ModelCatalog> models);

  std::vector<Offered> OfferedNodes(const ExtenderArgs& args) const;
  // The job's plan, planning it now if needed; nullptr for a neutral answer.
  const JobPlan* PlanFor(const Pod& pod, const std::vector<Offered>& offered);
  absl::StatusOr<JobPlan> MakePlan(const Pod& pod, const PodJob& job, const std::vector<Offered>& offered);
  // nullopt: neither annotation, phasord's probe profile of the job is used.
  absl::StatusOr<std::optional<placer::TrafficProfile>> ProfileOf(const Pod& pod, const PodJob& job,
                                                                 uint32_t server_gpus) const;
  // Adds phasord's running jobs (pinned) to `request`; returns their link
  // shares (the request's running part, common to every candidate).
  absl::StatusOr<std::map<std::string, std::map<std::string, double>>> AddRunningJobs(
      placer::RankRequest& request, const std::string& new_job);
  void Commit(JobPlan& plan);
  void Expire();
  void Track(const Pod& pod, const PodJob& job);
  absl::Status EnsureClient();

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

  mutable std::mutex mu_;
  std::unique_ptr<client::Client> client_;
  std::map<std::string, JobPlan> plans_;            // job -> plan
  std::map<std::string, int64_t> failed_until_ms_;  // job -> no new attempt before
  std::map<std::string, TrackedPod> pods_;          // pod uid -> job
  std::map<std::string, std::string> node_by_server_;  // learned from requests
  ExtenderStats stats_;
};

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_H_
