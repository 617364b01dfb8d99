// libFuzzer target: every request body the extender's HTTP side parses
// (filter/prioritize ExtenderArgs, bind ExtenderBindingArgs), then the pod ->
// job rules and re-serialisation of whatever parsed. Must never crash, hang
// or leak; a parse error must be InvalidArgument.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "integrations/kubernetes/extender_types.h"
#include "integrations/kubernetes/pod_group.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  namespace k8s = phasor::kubernetes;
  absl::StatusOr<k8s::ExtenderArgs> args = k8s::ParseExtenderArgs(body);
  if (args.ok()) {
    (void)k8s::JobOfPod(args->pod, k8s::PodGroupOptions{});
    (void)k8s::ToJson(*args).dump();
  } else if (args.status().code() != absl::StatusCode::kInvalidArgument) {
    std::abort();
  }
  absl::StatusOr<k8s::ExtenderBindingArgs> bind = k8s::ParseExtenderBindingArgs(body);
  if (bind.ok()) (void)k8s::ToJson(*bind).dump();
  absl::StatusOr<k8s::ExtenderFilterResult> filter = k8s::ParseExtenderFilterResult(body);
  if (filter.ok()) (void)k8s::ToJson(*filter).dump();
  return 0;
}
