// Which training job a pod belongs to, and how many pods the job has.
//
// A pod is part of a job when it carries the coscheduling label
// `scheduling.x-k8s.io/pod-group: <PodGroup>` (scheduler-plugins) or Volcano's
// annotation `scheduling.k8s.io/group-name: <PodGroup>`. kube-scheduler sends
// the extender the pod alone, never the PodGroup object, so the job's size
// comes from a pod annotation: `phasor.io/job-size` or, when that is absent,
// an annotation carrying the PodGroup's minMember
// (`scheduling.x-k8s.io/min-member` by default; put it in the job's pod
// template). Pure functions, thread-safe.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_POD_GROUP_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_POD_GROUP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "integrations/kubernetes/extender_types.h"

namespace phasor::kubernetes {

struct PodGroupOptions {
  // The coscheduling label naming the pod's PodGroup.
  std::string group_label = "scheduling.x-k8s.io/pod-group";
  // Volcano's annotation naming the pod's PodGroup.
  std::string group_annotation = "scheduling.k8s.io/group-name";
  // The job's number of pods (one pod per node), read first ...
  std::string size_annotation = "phasor.io/job-size";
  // ... then this one (the PodGroup's minMember, copied onto the pods).
  std::string min_member_annotation = "scheduling.x-k8s.io/min-member";
  // Jobs larger than this are refused (InvalidArgument).
  uint32_t max_job_pods = 4096;
  // Where a pod's rank in its job is read (the first key the pod carries, as
  // a label or else an annotation): phasor's own, an Indexed Job's completion
  // index, a StatefulSet's ordinal. The training job must use the same number
  // as its rank (torchrun's --node-rank, JOB_COMPLETION_INDEX).
  // (Kubeflow's training.kubeflow.org/replica-index counts within a replica
  // type: a master and worker 0 share 0, so it is not a default; name it
  // for jobs of workers only.)
  std::vector<std::string> rank_index_keys = {"phasor.io/rank", "batch.kubernetes.io/job-completion-index",
                                              "apps.kubernetes.io/pod-index"};
};

struct PodJob {
  std::string key;    // "<namespace>/<group>": the job's id towards phasord
  std::string group;  // the PodGroup's name
  uint32_t pods = 0;  // >= 1
};

// nullopt for a pod outside any group. InvalidArgument naming the annotation
// when the pod names a group but no size, or a size that is not a whole
// number in 1..max_job_pods.
absl::StatusOr<std::optional<PodJob>> JobOfPod(const Pod& pod, const PodGroupOptions& options);

// The pod's rank in its job (0-based) from the first of
// `options.rank_index_keys` it carries; nullopt when it carries none.
// InvalidArgument naming the label or annotation when the value is not a
// whole number below `job_pods`.
absl::StatusOr<std::optional<uint32_t>> RankIndexOfPod(const Pod& pod, const PodGroupOptions& options,
                                                       uint32_t job_pods);

// The job's id ("<namespace>/<group>") of a pod that names a group, whatever
// its size annotations say; nullopt for a pod outside any group. (A finished
// or deleted pod is matched to its job by this.)
std::optional<std::string> JobKeyOfPod(const Pod& pod, const PodGroupOptions& options);

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_POD_GROUP_H_
