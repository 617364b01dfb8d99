#include "integrations/kubernetes/pod_group.h"

#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace phasor::kubernetes {

namespace {

std::string GroupOf(const Pod& pod, const PodGroupOptions& options) {
  if (auto it = pod.labels.find(options.group_label);
      it != pod.labels.end() && !it->second.empty()) {
    return it->second;
  }
  if (auto a = pod.annotations.find(options.group_annotation);
      a != pod.annotations.end() && !a->second.empty()) {
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
                                                   "]: missing (pod group '", group,
                                                   "' needs its size)"));
  }
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(size->data(), size->data() + size->size(), n);
  if (ec != std::errc() || end != size->data() + size->size() || n < 1 ||
      n > options.max_job_pods) {
    return absl::InvalidArgumentError(absl::StrCat("metadata.annotations[", *which,
                                                   "]: must be a whole number in 1..",
                                                   options.max_job_pods, ", got '", *size, "'"));
  }
  return std::optional<PodJob>(PodJob{absl::StrCat(pod.namespace_, "/", group), group, n});
}

absl::StatusOr<std::optional<uint32_t>> RankIndexOfPod(const Pod& pod,
                                                       const PodGroupOptions& options,
                                                       uint32_t job_pods) {
  for (const std::string& key : options.rank_index_keys) {
    const std::string* value = nullptr;
    std::string field;
    if (auto l = pod.labels.find(key); l != pod.labels.end()) {
      value = &l->second;
      field = absl::StrCat("metadata.labels[", key, "]");
    } else if (auto a = pod.annotations.find(key); a != pod.annotations.end()) {
      value = &a->second;
      field = absl::StrCat("metadata.annotations[", key, "]");
    } else {
      continue;
    }
    uint32_t rank = 0;
    auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), rank);
    if (value->empty() || ec != std::errc() || end != value->data() + value->size() ||
        rank >= job_pods) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": the pod's rank must be a whole number in 0..", job_pods - 1,
                       " (the job has ", job_pods, " pods), got '", *value, "'"));
    }
    return std::optional<uint32_t>(rank);
  }
  return std::optional<uint32_t>();
}

}  // namespace phasor::kubernetes
