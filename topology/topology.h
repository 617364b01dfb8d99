// The network model of SPEC section 6: servers (GPUs, NIC ports), switches,
// and directed links with a capacity. A full-duplex cable between a and b is
// two directed links, "a->b" and "b->a", each with its own capacity.
//
// A Topology is built once (by the YAML loader, a generator, the Slurm
// importer, or by hand through AddServer/AddSwitch/AddLink) and then only
// read. Reading is thread-safe; building is not.
//
// Identifiers:
//   - Servers and switches share one namespace of node ids. A node id is a
//     non-empty string without whitespace and without "->".
//   - A directed link's id is "<from>-><to>" (e.g. "leaf1->spine2"). There is
//     at most one directed link per ordered pair of nodes: model a bundle of
//     parallel cables (LAG) as one link with the summed capacity.
//   - Node and link indices (NodeIndex, LinkIndex) are dense, start at 0, and
//     follow insertion order; they are stable for the life of the Topology.
#ifndef PHASOR_TOPOLOGY_TOPOLOGY_H_
#define PHASOR_TOPOLOGY_TOPOLOGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace phasor::topology {

using NodeIndex = uint32_t;
using LinkIndex = uint32_t;

// Valid ranges of a fabric (checked by AddServer/AddSwitch/AddLink, so by
// every loader, generator and importer): link and NIC speeds in
// kMinLinkGbps..kMaxLinkGbps (1 Mbit/s to 1 Pbit/s), at most kMaxGpusPerServer
// GPUs on a server, at most kMaxNodes nodes and kMaxLinks directed links.
inline constexpr double kMinLinkGbps = 1e-3;
inline constexpr double kMaxLinkGbps = 1e6;
inline constexpr uint32_t kMaxGpusPerServer = 1024;
inline constexpr uint32_t kMaxNodes = 1'000'000;
inline constexpr uint32_t kMaxLinks = 4'000'000;

enum class NodeKind { kServer, kSwitch };

// One NIC port of a server.
struct NicPort {
  std::string name;       // e.g. "eth0"; unique within its server
  double speed_gbps = 0;  // > 0
};

struct Node {
  std::string id;
  NodeKind kind = NodeKind::kSwitch;
  uint32_t gpus = 0;           // servers: GPUs in the server (0 for switches)
  std::vector<NicPort> nics;   // servers: NIC ports (may be empty); switches: empty
  std::vector<LinkIndex> out;  // directed links leaving this node, in insertion order
  std::vector<LinkIndex> in;   // directed links entering this node, in insertion order
};

struct Link {
  std::string id;  // "<from>-><to>"
  NodeIndex from = 0;
  NodeIndex to = 0;
  double capacity_gbps = 0;  // > 0
  std::string nic;           // the server NIC port this link uses, if named (else empty)
};

// "<from>-><to>": the id of the directed link from `from` to `to`.
std::string LinkId(std::string_view from, std::string_view to);

class Topology {
 public:
  Topology() = default;

  // Adds a server. InvalidArgument for a bad id, a duplicate node id, a NIC
  // port with speed <= 0 or a duplicate NIC name.
  absl::StatusOr<NodeIndex> AddServer(std::string id, uint32_t gpus,
                                      std::vector<NicPort> nics = {});
  // Adds a switch. InvalidArgument for a bad or duplicate id.
  absl::StatusOr<NodeIndex> AddSwitch(std::string id);
  // Adds the directed link from -> to. NotFound when an end is not a node;
  // InvalidArgument for capacity <= 0 (or not finite), a self-loop, a
  // duplicate link, or a `nic` that is not a NIC port of `from` or `to`.
  absl::StatusOr<LinkIndex> AddLink(std::string_view from, std::string_view to,
                                    double capacity_gbps, std::string nic = "");
  // Adds a full-duplex link: a->b and b->a, both with capacity_gbps.
  absl::Status AddDuplexLink(std::string_view a, std::string_view b, double capacity_gbps,
                             std::string nic = "");

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(NodeIndex i) const { return nodes_[i]; }
  const Link& link(LinkIndex i) const { return links_[i]; }

  // Lookup by id; std::nullopt when absent.
  std::optional<NodeIndex> FindNode(std::string_view id) const;
  std::optional<LinkIndex> FindLink(std::string_view id) const;
  std::optional<LinkIndex> FindLink(NodeIndex from, NodeIndex to) const;

  bool IsServer(NodeIndex i) const { return nodes_[i].kind == NodeKind::kServer; }
  size_t num_servers() const { return num_servers_; }
  size_t num_switches() const { return nodes_.size() - num_servers_; }
  uint64_t num_gpus() const { return num_gpus_; }
  // Servers in insertion order.
  std::vector<NodeIndex> Servers() const;
  // A server's leaf switch (its rack): the switch its first link to a switch
  // reaches; std::nullopt for a switch or a server linked to no switch.
  std::optional<NodeIndex> LeafOf(NodeIndex server) const;

 private:
  absl::Status CheckNewNodeId(std::string_view id) const;

  std::vector<Node> nodes_;
  std::vector<Link> links_;
  absl::flat_hash_map<std::string, NodeIndex> node_by_id_;
  absl::flat_hash_map<std::string, LinkIndex> link_by_id_;
  size_t num_servers_ = 0;
  uint64_t num_gpus_ = 0;
};

// Two topologies are equal when they have the same nodes (ids, kinds, GPUs,
// NIC ports) and the same directed links (ids, capacities, nic), in any order.
bool SameModel(const Topology& a, const Topology& b);

// A summary for network engineers (`phasor topology show`). A switch's tier is
// its hop distance to the nearest server (leaf = 1, spine = 2, ...); a link
// from tier t to tier t+1 is an uplink, from t to t-1 a downlink.
struct TierSummary {
  uint32_t tier = 0;
  uint32_t switches = 0;
  double min_oversubscription = 0;  // over this tier's switches: sum(down ingress) / sum(up egress)
  double max_oversubscription = 0;  // (switches without uplinks are left out; 0 when none has any)
  double min_uplink_gbps = 0;       // capacities of the links going up from this tier (0 when none)
  double max_uplink_gbps = 0;
};

struct TopologySummary {
  size_t servers = 0;
  uint64_t gpus = 0;
  size_t switches = 0;
  size_t links = 0;  // directed
  double min_capacity_gbps = 0;
  double max_capacity_gbps = 0;
  double server_link_gbps_min = 0;  // links leaving servers
  double server_link_gbps_max = 0;
  size_t unreachable_switches = 0;  // switches with no path to any server
  std::vector<TierSummary> tiers;   // tier 1 first
};

TopologySummary Summarize(const Topology& topology);

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_TOPOLOGY_H_
