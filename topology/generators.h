// Generators for the usual fabrics. Both build one NIC port ("nic0") per
// server, linked full duplex to its edge switch; every other link is full
// duplex too. Node names:
//   leaf-spine: servers s1..sN (filled leaf by leaf), leaf1..leafL, spine1..spineS;
//   fat-tree:   servers s1..sN (filled edge switch by edge switch, pod by pod),
//               p<pod>-edge<i>, p<pod>-agg<i> (pods and i from 1), core1..core(k/2)^2.
// Errors: InvalidArgument naming the option (e.g. "leaf_spine.spines: must be >= 1").
#ifndef PHASOR_TOPOLOGY_GENERATORS_H_
#define PHASOR_TOPOLOGY_GENERATORS_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "topology/topology.h"

namespace phasor::topology {

struct LeafSpineOptions {
  uint32_t leaves = 2;            // >= 1
  uint32_t spines = 2;            // >= 1 (every leaf links to every spine)
  uint32_t servers_per_leaf = 4;  // >= 1
  // Total servers; 0 means leaves * servers_per_leaf. When smaller, the last
  // leaves get fewer (servers fill leaf1 first). Must be <= leaves * servers_per_leaf.
  uint32_t servers = 0;
  uint32_t gpus_per_server = 8;
  double nic_gbps = 100;  // server <-> leaf, > 0
  // Leaf <-> spine capacity per link. Give exactly one of uplink_gbps and
  // oversubscription; with neither, oversubscription 1 (non-blocking):
  // uplink_gbps = servers_per_leaf * nic_gbps / (spines * oversubscription).
  std::optional<double> uplink_gbps;
  std::optional<double> oversubscription;
};

absl::StatusOr<Topology> MakeLeafSpine(const LeafSpineOptions& options);

struct FatTreeOptions {
  uint32_t k = 4;  // even, >= 2: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores
  // Total servers; 0 means the full k^3/4. Must be <= k^3/4; servers fill the
  // edge switches in order (k/2 per edge switch).
  uint32_t servers = 0;
  uint32_t gpus_per_server = 8;
  double nic_gbps = 100;   // server <-> edge, > 0
  double fabric_gbps = 0;  // edge <-> agg and agg <-> core; 0 means nic_gbps (non-blocking)
};

absl::StatusOr<Topology> MakeFatTree(const FatTreeOptions& options);

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_GENERATORS_H_
