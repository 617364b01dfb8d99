// The YAML topology format (docs/topology.md has the full description and an
// example; data/examples/leaf_spine.yaml is one):
//
//   servers:
//     - id: s1
//       gpus: 8
//       nics: [{name: eth0, gbps: 100}]
//   switches:
//     - id: leaf1
//   links:
//     - {a: s1, b: leaf1, capacity_gbps: 100, nic: eth0}   # full duplex: s1->leaf1 and leaf1->s1
//     - {from: leaf1, to: spine1, capacity_gbps: 400}      # one directed link
//   # instead of (or before) listing nodes, a generator may build the fabric:
//   # generate: {leaf_spine: {leaves: 2, spines: 2, servers_per_leaf: 4, nic_gbps: 100,
//   #                         oversubscription: 1}}
//
// In a duplex link, `capacity_gbps_ba` may give the b->a direction its own
// capacity. A link that names a `nic` of a server may omit capacity_gbps: it
// then takes the NIC port's speed.
//
// Errors are InvalidArgument (or NotFound for an unknown node) with a message
// "<name>:<line>: <what>", e.g. "fabric.yaml:12: link 'leaf1->spine9': unknown
// node 'spine9'" (line numbers start at 1; <name> is the file name given, or
// "<yaml>" for text). Unknown keys are errors too, so typos do not pass.
#ifndef PHASOR_TOPOLOGY_TOPOLOGY_YAML_H_
#define PHASOR_TOPOLOGY_TOPOLOGY_YAML_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "topology/topology.h"

namespace phasor::topology {

// Parses YAML text. `source_name` prefixes error messages.
absl::StatusOr<Topology> ParseTopologyYaml(std::string_view text,
                                           std::string_view source_name = "<yaml>");

// Reads and parses a file. NotFound when it cannot be read.
absl::StatusOr<Topology> LoadTopologyYaml(const std::string& path);

// Writes the model in the same format: every server and switch, and every
// link (duplex pairs with equal capacity and nic as one `a/b` entry, the rest
// as `from/to`). ParseTopologyYaml(ToYaml(t)) is SameModel as t.
std::string ToYaml(const Topology& topology);

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_TOPOLOGY_YAML_H_
