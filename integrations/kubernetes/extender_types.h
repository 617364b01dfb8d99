// The kube-scheduler extender protocol v1 (k8s.io/kube-scheduler
// extender/v1/types.go) as JSON: the request and reply bodies of the filter,
// prioritize, bind and preempt verbs. The Go types carry no json tags, so the
// field names are the Go names ("Pod", "NodeNames", "FailedNodes", "Host",
// "Score", ...); parsing accepts them in any letter case (as Go's decoder
// does) and serialising writes the exact case. The Pod and Node objects
// inside are ordinary Kubernetes JSON: the few fields the extender reads are
// extracted, the object itself is kept as it came and written back unchanged
// (full-Node mode echoes the kept Nodes).
//
// Parse errors are InvalidArgument naming the field ("NodeNames[2]: must be
// a string"). Every function here is pure and thread-safe.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_TYPES_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace phasor::kubernetes {

// MinExtenderPriority .. MaxExtenderPriority of extender/v1.
inline constexpr int64_t kMinExtenderPriority = 0;
inline constexpr int64_t kMaxExtenderPriority = 10;

// A core/v1 Pod: the fields the extender reads, and the object as received.
struct Pod {
  std::string name;       // metadata.name
  std::string namespace_;  // metadata.namespace ("" when absent)
  std::string uid;        // metadata.uid ("" when absent)
  std::map<std::string, std::string> labels;       // metadata.labels
  std::map<std::string, std::string> annotations;  // metadata.annotations
  // Sum over spec.containers of resources.limits (else requests) of
  // nvidia.com/gpu; 0 when none asks for it.
  uint32_t gpus = 0;
  nlohmann::json raw;  // the whole object
};

// A core/v1 Node: name, labels, and the object as received.
struct Node {
  std::string name;  // metadata.name (required)
  std::map<std::string, std::string> labels;
  nlohmann::json raw;
};

// A core/v1 NodeList: its metadata kept as received, and the items.
struct NodeList {
  nlohmann::json metadata = nlohmann::json::object();
  std::vector<Node> items;
};

// ExtenderArgs: the body of filter and prioritize. With nodeCacheCapable the
// scheduler sends NodeNames and a null Nodes; otherwise full Nodes.
struct ExtenderArgs {
  Pod pod;
  std::optional<NodeList> nodes;
  std::optional<std::vector<std::string>> node_names;
};

// ExtenderFilterResult: the reply of filter. Answer in the form asked:
// node_names for nodeCacheCapable, nodes otherwise.
struct ExtenderFilterResult {
  std::optional<NodeList> nodes;
  std::optional<std::vector<std::string>> node_names;
  std::map<std::string, std::string> failed_nodes;                    // node -> reason
  std::map<std::string, std::string> failed_and_unresolvable_nodes;  // node -> reason
  std::string error;
};

// HostPriority: one entry of prioritize's reply (a bare JSON array).
struct HostPriority {
  std::string host;
  int64_t score = 0;  // kMinExtenderPriority .. kMaxExtenderPriority
};
using HostPriorityList = std::vector<HostPriority>;

// ExtenderBindingArgs / ExtenderBindingResult: bind.
struct ExtenderBindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
struct ExtenderBindingResult {
  std::string error;
};

// Preemption (the extender serves no preemptVerb; the types are here so the
// whole golden set round-trips).
struct Victims {
  std::vector<nlohmann::json> pods;  // core/v1 Pods as received
  int64_t num_pdb_violations = 0;
};
struct MetaVictims {
  std::vector<std::string> pod_uids;  // MetaPod.UID
  int64_t num_pdb_violations = 0;
};
struct ExtenderPreemptionArgs {
  Pod pod;
  std::map<std::string, Victims> node_name_to_victims;
  std::map<std::string, MetaVictims> node_name_to_meta_victims;
};
struct ExtenderPreemptionResult {
  std::map<std::string, MetaVictims> node_name_to_meta_victims;
};

// Body text -> type. Malformed JSON is InvalidArgument "body: ...".
absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body);
absl::StatusOr<ExtenderFilterResult> ParseExtenderFilterResult(absl::string_view body);
absl::StatusOr<HostPriorityList> ParseHostPriorityList(absl::string_view body);
absl::StatusOr<HostPriority> ParseHostPriority(absl::string_view body);
absl::StatusOr<ExtenderBindingArgs> ParseExtenderBindingArgs(absl::string_view body);
absl::StatusOr<ExtenderBindingResult> ParseExtenderBindingResult(absl::string_view body);
absl::StatusOr<ExtenderPreemptionArgs> ParseExtenderPreemptionArgs(absl::string_view body);
absl::StatusOr<ExtenderPreemptionResult> ParseExtenderPreemptionResult(absl::string_view body);

// Type -> JSON with upstream's field names. Absent optionals are null, as Go
// marshals nil slices and pointers.
nlohmann::json ToJson(const ExtenderArgs& args);
nlohmann::json ToJson(const ExtenderFilterResult& result);
nlohmann::json ToJson(const HostPriority& priority);
nlohmann::json ToJson(const HostPriorityList& priorities);
nlohmann::json ToJson(const ExtenderBindingArgs& args);
nlohmann::json ToJson(const ExtenderBindingResult& result);
nlohmann::json ToJson(const ExtenderPreemptionArgs& args);
nlohmann::json ToJson(const ExtenderPreemptionResult& result);

// The reply bodies of the two hot verbs, exactly ToJson(x).dump(), written
// straight into the text: a 1,000-node prioritize or filter reply without a
// JSON tree of 1,000 objects (the warm call's largest cost). A filter result
// in full-Node mode (nodes set) goes through ToJson. Throws as dump() does
// (nlohmann::json::type_error for a string that is not UTF-8).
std::string ToJsonText(const HostPriorityList& priorities);
std::string ToJsonText(const ExtenderFilterResult& result);

// A Pod or Node object already parsed as JSON; `field` prefixes errors.
absl::StatusOr<Pod> PodFromJson(const nlohmann::json& doc, absl::string_view field);
absl::StatusOr<Node> NodeFromJson(const nlohmann::json& doc, absl::string_view field);

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_TYPES_H_
