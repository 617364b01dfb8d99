#include "placer/ring_order.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "topology/traffic.h"

namespace phasor::placer {

namespace {

// What an order costs: its ring's load on the running jobs' links (share x
// their load / capacity), then its traffic on switch-to-switch links.
struct RingCost {
  double on_loaded = 0;
  double on_switches = 0;
};

bool Cheaper(const RingCost& a, const RingCost& b) {
  constexpr double kTolerance = 1e-9;
  if (a.on_loaded < b.on_loaded - kTolerance) return true;
  if (a.on_loaded > b.on_loaded + kTolerance) return false;
  return a.on_switches < b.on_switches - kTolerance;
}

// The hops of one job's rings over a fixed set of servers, each routed once:
// the orders RingOrder compares share most of their hops (those inside a
// rack), and routing a hop was most of an order's cost.
class HopMemo {
 public:
  HopMemo(const topology::Router& router, std::string_view job) : router_(router), job_(job) {}

  absl::StatusOr<const std::vector<topology::LinkShare>*> Hop(topology::NodeIndex src, topology::NodeIndex dst) {
    auto it = hops_.find({src, dst});
    if (it == hops_.end()) {
      absl::StatusOr<std::vector<topology::LinkShare>> links = topology::HopLinkShares(router_, job_, src, dst);
      if (!links.ok()) return links.status();
      it = hops_.emplace(std::pair{src, dst}, *std::move(links)).first;
    }
    return &it->second;
  }

 private:
  const topology::Router& router_;
  std::string_view job_;
  absl::flat_hash_map<std::pair<topology::NodeIndex, topology::NodeIndex>, std::vector<topology::LinkShare>> hops_;
};

// The cost of the ring through `order` (distinct servers, every one known),
// hop by hop as topology::RingHops routes it, each term added in the same
// order.
absl::StatusOr<RingCost> CostOf(const topology::Router& router, HopMemo& memo,
                                const std::vector<topology::NodeIndex>& order,
                                const std::vector<double>& running_load) {
  const topology::Topology& fabric = router.topology();
  RingCost cost;
  for (size_t i = 0; i < order.size(); ++i) {
    absl::StatusOr<const std::vector<topology::LinkShare>*> hop = memo.Hop(order[i], order[(i + 1) % order.size()]);
    if (!hop.ok()) return hop.status();
    for (const topology::LinkShare& ls : **hop) {
      const topology::Link& link = fabric.link(ls.link);
      if (ls.link < running_load.size() && running_load[ls.link] > 0) {
        cost.on_loaded += ls.share * running_load[ls.link] / link.capacity_gbps;
      }
      if (!fabric.IsServer(link.from) && !fabric.IsServer(link.to)) cost.on_switches += ls.share;
    }
  }
  return cost;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> RingOrder(const topology::Router& router,
                                                   std::string_view job,
                                                   const std::vector<std::string>& servers,
                                                   const std::vector<double>& running_load,
                                                   const RingOrderOptions& options) {
  const topology::Topology& fabric = router.topology();
  // The distinct servers in the host's order, each with its entries.
  std::vector<std::string> distinct;
  absl::flat_hash_map<std::string, size_t> entries;
  for (const std::string& s : servers) {
    if (entries[s]++ == 0) distinct.push_back(s);
  }
  if (distinct.size() < 3) return servers;  // a ring of two is the same both ways

  // Racks (leaf switches) and pods (the leaves reaching the same switches
  // up), each in the order the host named its first server.
  struct Rack {
    std::vector<std::string> servers;
    size_t pod = 0;
  };
  std::vector<Rack> racks;
  std::map<std::vector<topology::NodeIndex>, size_t> pod_of_uplinks;
  absl::flat_hash_map<int64_t, size_t> rack_of_leaf;
  absl::flat_hash_map<std::string, topology::NodeIndex> node_of;
  for (const std::string& s : distinct) {
    const std::optional<topology::NodeIndex> node = fabric.FindNode(s);
    if (!node || !fabric.IsServer(*node)) {
      return absl::Status(
          node ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kNotFound,
          absl::StrCat("server '", s, "'",
                       node ? " is a switch, not a server" : " is not in the topology"));
    }
    const std::optional<topology::NodeIndex> leaf = fabric.LeafOf(*node);
    // A server on no switch is a rack of its own.
    const int64_t key = leaf ? static_cast<int64_t>(*leaf) : -1 - static_cast<int64_t>(*node);
    auto [it, added] = rack_of_leaf.try_emplace(key, racks.size());
    if (added) {
      std::vector<topology::NodeIndex> up;
      if (leaf) {
        for (topology::LinkIndex l : fabric.node(*leaf).out) {
          const topology::NodeIndex to = fabric.link(l).to;
          if (!fabric.IsServer(to)) up.push_back(to);
        }
        std::sort(up.begin(), up.end());
      }
      auto [pod, unused] = pod_of_uplinks.try_emplace(
          leaf ? up : std::vector<topology::NodeIndex>{*node}, pod_of_uplinks.size());
      racks.push_back({{}, pod->second});
    }
    racks[it->second].servers.push_back(s);
    node_of.emplace(s, *node);
  }

  // Orders of the racks to try: pods kept together, first the grouped order
  // (pods and racks as the host named them), then permutations while few.
  std::vector<size_t> grouped(racks.size());
  std::iota(grouped.begin(), grouped.end(), size_t{0});
  std::stable_sort(grouped.begin(), grouped.end(),
                   [&](size_t a, size_t b) { return racks[a].pod < racks[b].pod; });
  std::vector<std::vector<size_t>> rack_orders = {grouped};
  auto pods_together = [&](const std::vector<size_t>& order) {
    std::vector<bool> closed(pod_of_uplinks.size(), false);
    for (size_t i = 0; i < order.size(); ++i) {
      const size_t pod = racks[order[i]].pod;
      if (closed[pod]) return false;
      if (i + 1 == order.size() || racks[order[i + 1]].pod != pod) closed[pod] = true;
    }
    return true;
  };
  uint64_t permutations = 1;
  for (size_t k = 2; k <= racks.size() && permutations <= options.max_permutations; ++k)
    permutations *= k;
  if (racks.size() > 1 && permutations <= options.max_permutations) {
    std::vector<size_t> order = grouped;
    std::sort(order.begin(), order.end());
    do {
      if (order != grouped && pods_together(order)) rack_orders.push_back(order);
    } while (std::next_permutation(order.begin(), order.end()));
  }

  auto servers_of = [&](const std::vector<size_t>& rack_order, bool reversed) {
    std::vector<std::string> out;
    out.reserve(distinct.size());
    for (size_t r : rack_order)
      out.insert(out.end(), racks[r].servers.begin(), racks[r].servers.end());
    if (reversed) std::reverse(out.begin(), out.end());
    return out;
  };
  HopMemo memo(router, job);
  auto cost_of = [&](const std::vector<std::string>& order) {
    std::vector<topology::NodeIndex> nodes;
    nodes.reserve(order.size());
    for (const std::string& s : order) nodes.push_back(node_of.at(s));
    return CostOf(router, memo, nodes, running_load);
  };
  absl::StatusOr<RingCost> host_cost = cost_of(distinct);
  if (!host_cost.ok()) return host_cost.status();
  RingCost best_cost = *host_cost;
  std::optional<std::vector<std::string>> best;  // none: the host's order
  for (const std::vector<size_t>& rack_order : rack_orders) {
    for (bool reversed : {false, true}) {
      std::vector<std::string> order = servers_of(rack_order, reversed);
      if (order == distinct) continue;
      absl::StatusOr<RingCost> cost = cost_of(order);
      if (!cost.ok()) return cost.status();
      if (Cheaper(*cost, best_cost)) {
        best_cost = *cost;
        best = std::move(order);
      }
    }
  }
  if (!best) return servers;
  std::vector<std::string> out;
  out.reserve(servers.size());
  for (const std::string& s : *best) out.insert(out.end(), entries[s], s);
  return out;
}

}  // namespace phasor::placer
