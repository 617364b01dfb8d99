// A phasor fabric (topology/) as the descriptions the rest of the Kubernetes
// ecosystem reads, so Volcano, Kueue and phasor share one picture of the
// network (`phasor topology export`, docs/kubernetes.md):
//
//  - Volcano HyperNodes (topology.volcano.sh/v1alpha1, kind HyperNode,
//    cluster-scoped): spec.tier and spec.members, each member
//    {type: Node|HyperNode, selector: {exactMatch: {name}}}. Tier 1 is one
//    HyperNode per leaf (a switch one hop from servers) whose members are its
//    servers (Nodes); tier t >= 2 groups the tier t-1 HyperNodes joined by
//    tier t switches (a connected block: a leaf-spine's spine layer, a
//    fat-tree's pod, then its core), whose members are those HyperNodes.
//  - Kueue's Topology (kueue.x-k8s.io/v1beta1, kind Topology): spec.levels,
//    the node labels from the highest tier down to kubernetes.io/hostname;
//    and per node the labels `<label_prefix>tier-<t>: <HyperNode name>`
//    that those levels name (applied with kubectl label).
//
// A switch's tier is its hop distance to the nearest server. Server ids are
// taken as node names. Pure functions, thread-safe.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_TOPOLOGY_EXPORT_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_TOPOLOGY_EXPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/topology.h"

namespace phasor::kubernetes {

struct HyperNode {
  std::string name;
  uint32_t tier = 0;                 // 1 = leaf
  std::vector<std::string> members;  // node names (tier 1) or HyperNode names (tier >= 2)
};

struct FabricExport {
  std::vector<HyperNode> hypernodes;  // tier 1 first, then by name within a tier
  // node -> label -> value (every server that hangs off a leaf)
  std::map<std::string, std::map<std::string, std::string>> node_labels;
  std::vector<std::string> kueue_levels;  // highest tier first, kubernetes.io/hostname last
};

struct ExportOptions {
  // Node labels are <label_prefix>tier-<t> (default "phasor.io/").
  std::string label_prefix = "phasor.io/";
  // Kueue's Topology object name (default "phasor-fabric").
  std::string kueue_topology_name = "phasor-fabric";
  // Its apiVersion (v1alpha1 for Kueue before v0.14).
  std::string kueue_api_version = "kueue.x-k8s.io/v1beta1";
};

// InvalidArgument when the fabric has no switch next to a server, or a
// server or switch id is not a valid Kubernetes object name (lowercase
// RFC 1123: [a-z0-9.-], at most 253 characters), naming it.
absl::StatusOr<FabricExport> ExportFabric(const topology::Topology& fabric, const ExportOptions& options);

// YAML documents ("---" separated).
std::string HyperNodesYaml(const FabricExport& e);
std::string KueueTopologyYaml(const FabricExport& e, const ExportOptions& options);
// One `kubectl label node <n> k=v ... --overwrite` line per node.
std::string NodeLabelCommands(const FabricExport& e);

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_TOPOLOGY_EXPORT_H_
