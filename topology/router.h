// Routing over a Topology (SPEC section 6): traffic from one server to another
// follows the shortest paths (fewest directed links). Only switches forward:
// a path never passes through a third server. Equal-cost paths are used in
// one of two ways:
//   - kEvenSplit (default, a fluid model): every shortest path carries the
//     same fraction 1/P of the traffic (P = number of shortest paths), so a
//     link's share is the fraction of shortest paths that cross it. On the
//     symmetric Clos fabrics the generators build, this equals per-hop ECMP
//     with an even split at every switch.
//   - kFlowHash (as switches do): a flow, named by a flow key, takes ONE
//     shortest path, chosen hop by hop: at each node the next hop among the
//     equal-cost ones is picked by a fixed 64-bit hash of (seed, flow key,
//     node id). The same flow key always takes the same path, in every run
//     and on every machine; different flows spread over the paths.
//
// Caching: the router computes, per destination server, the hop distance of
// every node to it and the number of shortest paths (one breadth-first search
// on Boost.Graph), lazily on first use, and keeps it, up to
// `max_table_bytes` in all (the least recently used table forgotten first,
// built again when asked); `precompute_all` does all servers up front.
// Memory: about 12 bytes per (destination, node).
//
// Thread safety: all const methods may be called concurrently (the cache is
// guarded by a mutex). The Topology must outlive the Router and must not
// change while the Router exists.
#ifndef PHASOR_TOPOLOGY_ROUTER_H_
#define PHASOR_TOPOLOGY_ROUTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "topology/lru_cache.h"
#include "topology/topology.h"

namespace phasor::topology {

enum class EcmpMode {
  kEvenSplit,  // fluid: every equal-cost path gets 1/P
  kFlowHash,   // one path per flow key, picked hop by hop by a deterministic hash
};

// Parses "even" / "hash" (the CLI spelling). InvalidArgument otherwise.
absl::StatusOr<EcmpMode> ParseEcmpMode(std::string_view name);

struct RouterOptions {
  // How equal-cost paths share a flow. Default: even split.
  EcmpMode ecmp = EcmpMode::kEvenSplit;
  // Seed of the flow hash (kFlowHash only). Default 0.
  uint64_t hash_seed = 0;
  // Paths(): at most this many paths are listed (the rest are counted in
  // PathSet::total_paths). Default 1024.
  size_t max_listed_paths = 1024;
  // Compute the per-destination tables of every server in the constructor
  // instead of lazily (those past max_table_bytes are forgotten again).
  // Default false.
  bool precompute_all = false;
  // The per-destination tables kept, in bytes (about 12 per node each): a
  // router that lives as long as phasord would otherwise keep one per server
  // it ever routed to, 1.2 GiB on a 10,000-server fabric. Default 256 MiB
  // (every table of a 4,500-server fabric; 2,000 at 10,000 servers).
  size_t max_table_bytes = size_t{256} << 20;
};

// One directed link with the fraction of a flow that crosses it.
struct LinkShare {
  LinkIndex link = 0;
  double share = 0;  // (0, 1]
};

struct Path {
  std::vector<LinkIndex> links;  // from the source server to the destination server
  double share = 0;              // fraction of the flow on this path
};

struct PathSet {
  std::vector<Path> paths;  // kEvenSplit: all (up to max_listed_paths); kFlowHash: the chosen one
  double total_paths = 0;   // number of equal-cost shortest paths (a double: it can be huge)
  uint32_t hops = 0;        // links per path
};

class Router {
 public:
  // `topology` must outlive the router.
  explicit Router(const Topology& topology, RouterOptions options = {});
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  const Topology& topology() const { return topology_; }
  const RouterOptions& options() const { return options_; }

  // The links a flow from server `src` to server `dst` crosses, with the
  // fraction of the flow on each (sorted by link index). src == dst gives an
  // empty list. `flow_key` names the flow for kFlowHash (ignored otherwise).
  // Errors: NotFound for an unknown node; InvalidArgument when an end is a
  // switch; FailedPrecondition when dst cannot be reached from src.
  absl::StatusOr<std::vector<LinkShare>> FlowLinkShares(std::string_view src, std::string_view dst,
                                                        std::string_view flow_key = "") const;
  absl::StatusOr<std::vector<LinkShare>> FlowLinkShares(NodeIndex src, NodeIndex dst,
                                                        std::string_view flow_key = "") const;

  // The paths themselves, for a network engineer to check (same errors).
  // kEvenSplit lists every shortest path (up to max_listed_paths), each with
  // share 1/P, in lexicographic order of their link ids; kFlowHash lists the
  // one path the flow key takes, with share 1.
  absl::StatusOr<PathSet> Paths(std::string_view src, std::string_view dst,
                                std::string_view flow_key = "") const;

  // Hop distance from server src to server dst (no forwarding through
  // servers); same errors as FlowLinkShares. 0 when src == dst.
  absl::StatusOr<uint32_t> Distance(std::string_view src, std::string_view dst) const;

  // Whole rings' link shares as topology/traffic.h's JobRing computes them,
  // by a key of the job and its servers in rank order, kept for the router's
  // life: a cluster's running jobs are routed again in every request ranked
  // around them. Bounded by kRingMemoLinks link entries over all rings, the
  // least recently used ring forgotten first (about 50 MiB at most). Only
  // JobRing uses these.
  struct RingShares {
    std::map<std::string, double> by_id;                 // link id -> share
    std::vector<std::pair<LinkIndex, double>> by_index;  // the same, in by_id's order
  };
  static constexpr size_t kRingMemoLinks = size_t{1} << 19;
  std::shared_ptr<const RingShares> FindRing(const std::string& key) const;
  void KeepRing(const std::string& key, std::shared_ptr<const RingShares> shares) const;

  // The per-destination tables kept now: how many, and their bytes (at most
  // RouterOptions::max_table_bytes).
  size_t table_count() const;
  size_t table_bytes() const;

 private:
  struct DestTable;  // per-destination distances and path counts
  struct Graph;      // the Boost.Graph view of the topology

  absl::StatusOr<NodeIndex> ResolveServer(std::string_view id) const;
  std::shared_ptr<const DestTable> Table(NodeIndex dst) const;
  std::shared_ptr<const DestTable> BuildTable(NodeIndex dst) const;
  absl::Status CheckReachable(const DestTable& table, NodeIndex src, NodeIndex dst) const;

  const Topology& topology_;
  RouterOptions options_;
  std::unique_ptr<Graph> graph_;
  mutable absl::Mutex mu_;
  mutable LruCache<NodeIndex, std::shared_ptr<const DestTable>> tables_ ABSL_GUARDED_BY(mu_);
  mutable absl::Mutex ring_mu_;
  mutable LruCache<std::string, std::shared_ptr<const RingShares>> rings_ ABSL_GUARDED_BY(ring_mu_){
      kRingMemoLinks};
};

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_ROUTER_H_
