#include "topology/router.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/graph/adjacency_list.hpp"
#include "boost/graph/breadth_first_search.hpp"
#include "boost/graph/filtered_graph.hpp"
#include "boost/graph/reverse_graph.hpp"
#include "boost/graph/two_bit_color_map.hpp"
#include "topology/absl_compat.h"

namespace phasor::topology {
namespace {

constexpr uint32_t kUnreached = std::numeric_limits<uint32_t>::max();

using BoostGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property,
                          boost::property<boost::edge_index_t, LinkIndex>>;
using ReverseGraph = boost::reverse_graph<BoostGraph>;

// A stable 64-bit hash (FNV-1a, then the splitmix64 finaliser to spread the
// low bits): the same input gives the same value on every run and machine,
// unlike absl::Hash, which is seeded per process.
uint64_t StableHash(uint64_t seed, std::string_view a, std::string_view b) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;
  };
  for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(seed >> (8 * i)));
  for (char c : a) mix(static_cast<unsigned char>(c));
  mix(0);
  for (char c : b) mix(static_cast<unsigned char>(c));
  h += 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace

struct Router::Graph {
  BoostGraph g;
};

// For one destination server: every node's hop distance to it and its number
// of shortest paths to it, where only switches (and the destination) may be
// entered on the way.
struct Router::DestTable {
  NodeIndex dst = 0;
  std::vector<uint32_t> dist;
  std::vector<double> count;
};

namespace {

// Keeps a reversed edge (original link w->u) only when u may be entered on a
// path: u is a switch or the destination. So a BFS from the destination never
// expands through a third server.
struct EnterableTarget {
  const Topology* topology = nullptr;
  const ReverseGraph* rg = nullptr;
  NodeIndex dst = 0;
  template <typename Edge>
  bool operator()(const Edge& e) const {
    const auto u = static_cast<NodeIndex>(boost::source(e, *rg));
    return u == dst || !topology->IsServer(u);
  }
};

struct CountingVisitor : boost::default_bfs_visitor {
  std::vector<uint32_t>* dist;
  std::vector<double>* count;
  template <typename Edge, typename G>
  void examine_edge(const Edge& e, const G& g) const {
    const auto u = static_cast<NodeIndex>(boost::source(e, g));
    const auto w = static_cast<NodeIndex>(boost::target(e, g));
    // BFS pops all nodes at distance d before any at d+1, so count[u] is
    // final when u's edges are examined.
    if ((*dist)[w] == kUnreached) (*dist)[w] = (*dist)[u] + 1;
    if ((*dist)[w] == (*dist)[u] + 1) (*count)[w] += (*count)[u];
  }
};

}  // namespace

absl::StatusOr<EcmpMode> ParseEcmpMode(std::string_view name) {
  if (name == "even") return EcmpMode::kEvenSplit;
  if (name == "hash") return EcmpMode::kFlowHash;
  return absl::InvalidArgumentError(
      absl::StrCat("ecmp mode '", AsAbsl(name), "': must be 'even' or 'hash'"));
}

Router::Router(const Topology& topology, RouterOptions options)
    : topology_(topology), options_(options), graph_(std::make_unique<Graph>()), tables_(options.max_table_bytes) {
  BoostGraph& g = graph_->g;
  g = BoostGraph(topology_.nodes().size());
  for (LinkIndex l = 0; l < topology_.links().size(); ++l) {
    const Link& link = topology_.link(l);
    boost::add_edge(link.from, link.to, l, g);
  }
  if (options_.precompute_all) {
    for (NodeIndex s : topology_.Servers()) Table(s);
  }
}

Router::~Router() = default;

std::shared_ptr<const Router::DestTable> Router::BuildTable(NodeIndex dst) const {
  auto table = std::make_shared<DestTable>();
  const size_t n = topology_.nodes().size();
  table->dst = dst;
  // A server entered by one link only, from a switch (a leaf's server): every
  // shortest path to it is one to that switch and the link, so its table is
  // the switch's one hop further with the same path counts. The switch's
  // table serves every server under it instead of a search per server. (Its
  // search is the server's own from the second level on: the server is
  // expanded only in its own, towards the switch, and is entered by no path
  // in either; the counts are whole numbers, added in the same order.)
  const std::vector<LinkIndex>& in = topology_.node(dst).in;
  if (topology_.IsServer(dst) && in.size() == 1 && !topology_.IsServer(topology_.link(in[0]).from)) {
    const std::shared_ptr<const DestTable> via = Table(topology_.link(in[0]).from);
    table->dist.resize(n);
    table->count = via->count;
    for (size_t v = 0; v < n; ++v) table->dist[v] = via->dist[v] == kUnreached ? kUnreached : via->dist[v] + 1;
    table->dist[dst] = 0;
    table->count[dst] = 1;
    return table;
  }
  table->dist.assign(n, kUnreached);
  table->count.assign(n, 0);
  table->dist[dst] = 0;
  table->count[dst] = 1;

  const ReverseGraph rg(graph_->g);
  EnterableTarget pred{&topology_, &rg, dst};
  boost::filtered_graph<ReverseGraph, EnterableTarget> fg(rg, pred);
  CountingVisitor visitor;
  visitor.dist = &table->dist;
  visitor.count = &table->count;
  boost::two_bit_color_map<> colors(n);
  boost::breadth_first_search(fg, dst, boost::visitor(visitor).color_map(colors));
  return table;
}

std::shared_ptr<const Router::DestTable> Router::Table(NodeIndex dst) const {
  {
    absl::MutexLock lock(&mu_);
    if (std::optional<std::shared_ptr<const DestTable>> known = tables_.Find(dst)) return *std::move(known);
  }
  // Built outside the lock (two threads may build one table; either is kept).
  std::shared_ptr<const DestTable> built = BuildTable(dst);
  const size_t bytes = sizeof(DestTable) + built->dist.size() * sizeof(uint32_t) +
                       built->count.size() * sizeof(double);
  absl::MutexLock lock(&mu_);
  tables_.Put(dst, built, bytes);
  return built;
}

size_t Router::table_count() const {
  absl::MutexLock lock(&mu_);
  return tables_.size();
}

size_t Router::table_bytes() const {
  absl::MutexLock lock(&mu_);
  return tables_.total_cost();
}

std::shared_ptr<const Router::RingShares> Router::FindRing(const std::string& key) const {
  absl::MutexLock lock(&ring_mu_);
  return rings_.Find(key).value_or(nullptr);
}

void Router::KeepRing(const std::string& key, std::shared_ptr<const RingShares> shares) const {
  const size_t cost = shares->by_id.size() + 1;
  absl::MutexLock lock(&ring_mu_);
  rings_.Put(key, std::move(shares), cost);
}

absl::StatusOr<NodeIndex> Router::ResolveServer(std::string_view id) const {
  std::optional<NodeIndex> n = topology_.FindNode(id);
  if (!n)
    return absl::NotFoundError(absl::StrCat("server '", AsAbsl(id), "' is not in the topology"));
  if (!topology_.IsServer(*n)) {
    return absl::InvalidArgumentError(absl::StrCat("'", AsAbsl(id), "' is a switch, not a server"));
  }
  return *n;
}

absl::Status Router::CheckReachable(const DestTable& table, NodeIndex src, NodeIndex dst) const {
  if (table.dist[src] == kUnreached) {
    return absl::FailedPreconditionError(absl::StrCat("server '", topology_.node(src).id,
                                                      "' has no route to server '",
                                                      topology_.node(dst).id, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LinkShare>> Router::FlowLinkShares(std::string_view src,
                                                              std::string_view dst,
                                                              std::string_view flow_key) const {
  absl::StatusOr<NodeIndex> s = ResolveServer(src);
  if (!s.ok()) return s.status();
  absl::StatusOr<NodeIndex> d = ResolveServer(dst);
  if (!d.ok()) return d.status();
  return FlowLinkShares(*s, *d, flow_key);
}

absl::StatusOr<std::vector<LinkShare>> Router::FlowLinkShares(NodeIndex src, NodeIndex dst,
                                                              std::string_view flow_key) const {
  if (src >= topology_.nodes().size() || dst >= topology_.nodes().size()) {
    return absl::NotFoundError("node index out of range");
  }
  if (!topology_.IsServer(src) || !topology_.IsServer(dst)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", topology_.node(topology_.IsServer(src) ? dst : src).id,
                     "' is a switch, not a server"));
  }
  std::vector<LinkShare> out;
  if (src == dst) return out;
  std::shared_ptr<const DestTable> table = Table(dst);
  if (absl::Status st = CheckReachable(*table, src, dst); !st.ok()) return st;
  const std::vector<uint32_t>& dist = table->dist;
  const std::vector<double>& count = table->count;

  // The links on shortest paths out of u, toward dst.
  auto next_links = [&](NodeIndex u, std::vector<LinkIndex>& links) {
    links.clear();
    for (LinkIndex l : topology_.node(u).out) {
      const NodeIndex v = topology_.link(l).to;
      if (dist[v] != kUnreached && dist[v] + 1 == dist[u] && (v == dst || !topology_.IsServer(v))) {
        links.push_back(l);
      }
    }
  };
  std::vector<LinkIndex> links;

  if (options_.ecmp == EcmpMode::kFlowHash) {
    NodeIndex u = src;
    while (u != dst) {
      next_links(u, links);
      // Order by link id so the choice depends on the model, not on the
      // order in which the file listed the links.
      std::sort(links.begin(), links.end(), [&](LinkIndex a, LinkIndex b) {
        return topology_.link(a).id < topology_.link(b).id;
      });
      const uint64_t h = StableHash(options_.hash_seed, flow_key, topology_.node(u).id);
      const LinkIndex chosen = links[h % links.size()];
      out.push_back(LinkShare{chosen, 1.0});
      u = topology_.link(chosen).to;
    }
    std::sort(out.begin(), out.end(),
              [](const LinkShare& a, const LinkShare& b) { return a.link < b.link; });
    return out;
  }

  // Even split: a link u->v on a shortest path carries paths_from_src(u) *
  // count(v) of the count(src) paths. Walk the shortest-path DAG level by
  // level from src, accumulating paths_from_src.
  const double total = count[src];
  std::vector<std::pair<NodeIndex, double>> frontier = {{src, 1.0}};
  std::vector<std::pair<NodeIndex, double>> next;
  absl::flat_hash_map<NodeIndex, size_t> slot;
  while (!frontier.empty() && frontier.front().first != dst) {
    next.clear();
    slot.clear();
    for (const auto& [u, from_src] : frontier) {
      next_links(u, links);
      for (LinkIndex l : links) {
        const NodeIndex v = topology_.link(l).to;
        out.push_back(LinkShare{l, from_src * count[v] / total});
        auto [it, inserted] = slot.emplace(v, next.size());
        if (inserted) {
          next.emplace_back(v, from_src);
        } else {
          next[it->second].second += from_src;
        }
      }
    }
    frontier.swap(next);
  }
  std::sort(out.begin(), out.end(),
            [](const LinkShare& a, const LinkShare& b) { return a.link < b.link; });
  return out;
}

absl::StatusOr<PathSet> Router::Paths(std::string_view src, std::string_view dst,
                                      std::string_view flow_key) const {
  absl::StatusOr<NodeIndex> s = ResolveServer(src);
  if (!s.ok()) return s.status();
  absl::StatusOr<NodeIndex> d = ResolveServer(dst);
  if (!d.ok()) return d.status();
  PathSet set;
  if (*s == *d) {
    set.total_paths = 1;
    set.paths.push_back(Path{{}, 1.0});
    return set;
  }
  std::shared_ptr<const DestTable> table = Table(*d);
  if (absl::Status st = CheckReachable(*table, *s, *d); !st.ok()) return st;
  set.total_paths = table->count[*s];
  set.hops = table->dist[*s];

  if (options_.ecmp == EcmpMode::kFlowHash) {
    absl::StatusOr<std::vector<LinkShare>> shares = FlowLinkShares(*s, *d, flow_key);
    if (!shares.ok()) return shares.status();
    // Put the chosen links in path order: follow them from src.
    Path path{{}, 1.0};
    NodeIndex u = *s;
    while (u != *d) {
      for (const LinkShare& ls : *shares) {
        if (topology_.link(ls.link).from == u) {
          path.links.push_back(ls.link);
          u = topology_.link(ls.link).to;
          break;
        }
      }
    }
    set.paths.push_back(std::move(path));
    return set;
  }

  // Depth-first over the shortest-path DAG, links in id order at each node,
  // so paths come out in lexicographic order of their link ids.
  const std::vector<uint32_t>& dist = table->dist;
  const double share = 1.0 / set.total_paths;
  std::vector<LinkIndex> current;
  auto dfs = [&](auto&& self, NodeIndex u) -> void {
    if (set.paths.size() >= options_.max_listed_paths) return;
    if (u == *d) {
      set.paths.push_back(Path{current, share});
      return;
    }
    std::vector<LinkIndex> links;
    for (LinkIndex l : topology_.node(u).out) {
      const NodeIndex v = topology_.link(l).to;
      if (dist[v] != kUnreached && dist[v] + 1 == dist[u] && (v == *d || !topology_.IsServer(v))) {
        links.push_back(l);
      }
    }
    std::sort(links.begin(), links.end(), [&](LinkIndex a, LinkIndex b) {
      return topology_.link(a).id < topology_.link(b).id;
    });
    for (LinkIndex l : links) {
      current.push_back(l);
      self(self, topology_.link(l).to);
      current.pop_back();
    }
  };
  dfs(dfs, *s);
  return set;
}

absl::StatusOr<uint32_t> Router::Distance(std::string_view src, std::string_view dst) const {
  absl::StatusOr<NodeIndex> s = ResolveServer(src);
  if (!s.ok()) return s.status();
  absl::StatusOr<NodeIndex> d = ResolveServer(dst);
  if (!d.ok()) return d.status();
  if (*s == *d) return 0u;
  std::shared_ptr<const DestTable> table = Table(*d);
  if (absl::Status st = CheckReachable(*table, *s, *d); !st.ok()) return st;
  return table->dist[*s];
}

}  // namespace phasor::topology
