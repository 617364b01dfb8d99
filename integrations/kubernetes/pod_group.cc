#include "integrations/kubernetes/pod_group.h"

#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace phasor::kubernetes {

namespace {

std::string GroupOf(const Pod& pod, const PodGroupOptions& options) {
  if (auto it = pod.labels.find(options.group_label); it != pod.labels.end() && !it->second.empty()) {
    return it->second;
  }
  if (auto a = pod.annotations.find(options.group_annotation); a != pod.annotations.end() && !a->second.empty()) {
    return a->second;
  }
  return "";
}

}  // namespace

std::optional<std::string> JobKeyOfPod(const Pod& pod, const PodGroupOptions& options) {
  const std::string group = GroupOf(pod, options);
  if (group.empty()) return std::nullopt;
  return absl::StrCat(pod.namespace_, "/", group);
}

absl::StatusOr<std::optional<PodJob>> JobOfPod(const Pod& pod, const PodGroupOptions& options) {
  const std::string group = GroupOf(pod, options);
  if (group.empty()) return std::optional<PodJob>();
  const std::string* size = nullptr;
  const std::string* which = nullptr;
  for (const std::string* name : {&options.size_annotation, &options.min_member_annotation}) {
    auto it = pod.annotations.find(*name);
    if (it != pod.annotations.end()) {
      size = &it->second;
      which = name;
      break;
    }
  }
  if (size == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("metadata.annotations[", options.size_annotation,
                                                   "]: missing (pod group '", group, "' needs its size)"));
  }
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(size->data(), size->data() + size->size(), n);
  if (ec != std::errc() || end != size->data() + size->size() || n < 1 || n > options.max_job_pods) {
    return absl::InvalidArgumentError(absl::StrCat("metadata.annotations[", *which, "]: must be a whole number in 1..",
                                                   options.max_job_pods, ", got '", *size, "'"));
  }
  return std::optional<PodJob>(PodJob{absl::StrCat(pod.namespace_, "/", group), group, n});
}

}  // namespace phasor::kubernetes
