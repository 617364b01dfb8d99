#include "topology/router.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "topology/generators.h"

namespace phasor::topology {
namespace router_test {
namespace {

// link id -> share, for readable expectations.
std::map<std::string, double> ById(const Topology& t, const std::vector<LinkShare>& shares) {
  std::map<std::string, double> out;
  for (const LinkShare& ls : shares) out[t.link(ls.link).id] = ls.share;
  return out;
}

Topology FatTree4() {
  FatTreeOptions o;
  o.k = 4;
  return *MakeFatTree(o);
}

TEST(RouterTest, FatTreeK4PathCountsAndShares) {
  const Topology t = FatTree4();
  Router router(t);
  // s1, s2 on p1-edge1; s3, s4 on p1-edge2; s5 on p2-edge1.
  absl::StatusOr<PathSet> between_pods = router.Paths("s1", "s5");
  ASSERT_TRUE(between_pods.ok()) << between_pods.status();
  EXPECT_EQ(between_pods->total_paths, 4);
  EXPECT_EQ(between_pods->hops, 6u);
  ASSERT_EQ(between_pods->paths.size(), 4u);
  for (const Path& p : between_pods->paths) {
    EXPECT_DOUBLE_EQ(p.share, 0.25);
    ASSERT_EQ(p.links.size(), 6u);
    EXPECT_EQ(t.link(p.links.front()).id, "s1->p1-edge1");
    EXPECT_EQ(t.link(p.links.back()).id, "p2-edge1->s5");
  }
  std::vector<std::string> first;
  for (LinkIndex l : between_pods->paths[0].links) first.push_back(t.link(l).id);
  EXPECT_EQ(first,
            (std::vector<std::string>{"s1->p1-edge1", "p1-edge1->p1-agg1", "p1-agg1->core1",
                                      "core1->p2-agg1", "p2-agg1->p2-edge1", "p2-edge1->s5"}));

  EXPECT_EQ(router.Paths("s1", "s3")->total_paths, 2);  // same pod, other edge
  EXPECT_EQ(router.Paths("s1", "s3")->hops, 4u);
  EXPECT_EQ(router.Paths("s1", "s2")->total_paths, 1);  // same edge switch
  EXPECT_EQ(router.Paths("s1", "s2")->hops, 2u);
  EXPECT_EQ(*router.Distance("s1", "s16"), 6u);
  EXPECT_EQ(*router.Distance("s7", "s7"), 0u);

  absl::StatusOr<std::vector<LinkShare>> shares = router.FlowLinkShares("s1", "s5");
  ASSERT_TRUE(shares.ok());
  const std::map<std::string, double> expected = {
      {"s1->p1-edge1", 1.0},      {"p1-edge1->p1-agg1", 0.5}, {"p1-edge1->p1-agg2", 0.5},
      {"p1-agg1->core1", 0.25},   {"p1-agg1->core2", 0.25},   {"p1-agg2->core3", 0.25},
      {"p1-agg2->core4", 0.25},   {"core1->p2-agg1", 0.25},   {"core2->p2-agg1", 0.25},
      {"core3->p2-agg2", 0.25},   {"core4->p2-agg2", 0.25},   {"p2-agg1->p2-edge1", 0.5},
      {"p2-agg2->p2-edge1", 0.5}, {"p2-edge1->s5", 1.0}};
  EXPECT_EQ(ById(t, *shares), expected);
}

TEST(RouterTest, SharesSumToHopsOnEveryPair) {
  const Topology t = FatTree4();
  Router router(t, RouterOptions{.precompute_all = true});
  for (int a = 1; a <= 16; ++a) {
    for (int b = 1; b <= 16; ++b) {
      const std::string sa = absl::StrCat("s", a), sb = absl::StrCat("s", b);
      absl::StatusOr<std::vector<LinkShare>> shares = router.FlowLinkShares(sa, sb);
      ASSERT_TRUE(shares.ok());
      double sum = 0;
      for (const LinkShare& ls : *shares) {
        EXPECT_GT(ls.share, 0);
        EXPECT_LE(ls.share, 1.0);
        sum += ls.share;
      }
      EXPECT_NEAR(sum, *router.Distance(sa, sb), 1e-12) << sa << " -> " << sb;
    }
  }
}

TEST(RouterTest, LeafSpinePaths) {
  LeafSpineOptions o;
  o.leaves = 3;
  o.spines = 4;
  o.servers_per_leaf = 2;
  const Topology t = *MakeLeafSpine(o);
  Router router(t);
  absl::StatusOr<PathSet> p = router.Paths("s1", "s6");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->total_paths, 4);
  EXPECT_EQ(p->hops, 4u);
  ASSERT_EQ(p->paths.size(), 4u);
  for (const Path& path : p->paths) EXPECT_DOUBLE_EQ(path.share, 0.25);
  std::map<std::string, double> shares = ById(t, *router.FlowLinkShares("s1", "s6"));
  EXPECT_EQ(shares.size(), 10u);
  EXPECT_DOUBLE_EQ(shares["s1->leaf1"], 1);
  EXPECT_DOUBLE_EQ(shares["leaf1->spine3"], 0.25);
  EXPECT_DOUBLE_EQ(shares["spine3->leaf3"], 0.25);
  EXPECT_DOUBLE_EQ(shares["leaf3->s6"], 1);
  // Same leaf: through the leaf only, never through a spine.
  EXPECT_EQ(ById(t, *router.FlowLinkShares("s1", "s2")),
            (std::map<std::string, double>{{"s1->leaf1", 1}, {"leaf1->s2", 1}}));
  EXPECT_TRUE(router.FlowLinkShares("s3", "s3")->empty());
}

TEST(RouterTest, UnevenFabricSplitsEvenlyOverPaths) {
  // s1 - x - {y1, y2, y3} - z - s2, and a longer detour x - w - v - z that is
  // not a shortest path.
  Topology t;
  ASSERT_TRUE(t.AddServer("s1", 1).ok());
  ASSERT_TRUE(t.AddServer("s2", 1).ok());
  for (const char* sw : {"x", "y1", "y2", "y3", "z", "w", "v"}) ASSERT_TRUE(t.AddSwitch(sw).ok());
  ASSERT_TRUE(t.AddDuplexLink("s1", "x", 10).ok());
  ASSERT_TRUE(t.AddDuplexLink("z", "s2", 10).ok());
  for (const char* y : {"y1", "y2", "y3"}) {
    ASSERT_TRUE(t.AddDuplexLink("x", y, 10).ok());
    ASSERT_TRUE(t.AddDuplexLink(y, "z", 10).ok());
  }
  ASSERT_TRUE(t.AddDuplexLink("x", "w", 10).ok());
  ASSERT_TRUE(t.AddDuplexLink("w", "v", 10).ok());
  ASSERT_TRUE(t.AddDuplexLink("v", "z", 10).ok());
  Router router(t);
  std::map<std::string, double> shares = ById(t, *router.FlowLinkShares("s1", "s2"));
  EXPECT_EQ(shares.size(), 8u);
  EXPECT_DOUBLE_EQ(shares["x->y2"], 1.0 / 3);
  EXPECT_DOUBLE_EQ(shares["y3->z"], 1.0 / 3);
  EXPECT_FALSE(shares.contains("x->w"));
}

TEST(RouterTest, EvenSplitIsPerPathNotPerHop) {
  // s1 - x - y1 - z1 - t - s2 and x - y2 - {z2, z3} - t: three shortest paths,
  // two of them through y2, so x->y2 carries 2/3 (per-hop ECMP would give 1/2).
  Topology t;
  ASSERT_TRUE(t.AddServer("s1", 1).ok());
  ASSERT_TRUE(t.AddServer("s2", 1).ok());
  for (const char* sw : {"x", "y1", "y2", "z1", "z2", "z3", "t"}) {
    ASSERT_TRUE(t.AddSwitch(sw).ok());
  }
  for (auto [a, b] : {std::pair{"s1", "x"},
                      {"x", "y1"},
                      {"x", "y2"},
                      {"y1", "z1"},
                      {"y2", "z2"},
                      {"y2", "z3"},
                      {"z1", "t"},
                      {"z2", "t"},
                      {"z3", "t"},
                      {"t", "s2"}}) {
    ASSERT_TRUE(t.AddDuplexLink(a, b, 10).ok());
  }
  Router router(t);
  EXPECT_EQ(router.Paths("s1", "s2")->total_paths, 3);
  std::map<std::string, double> shares = ById(t, *router.FlowLinkShares("s1", "s2"));
  EXPECT_DOUBLE_EQ(shares["x->y1"], 1.0 / 3);
  EXPECT_DOUBLE_EQ(shares["x->y2"], 2.0 / 3);
  EXPECT_DOUBLE_EQ(shares["y2->z3"], 1.0 / 3);
  EXPECT_DOUBLE_EQ(shares["z1->t"], 1.0 / 3);
  EXPECT_DOUBLE_EQ(shares["t->s2"], 1.0);
}

TEST(RouterTest, ServersDoNotForwardAndErrorsAreClear) {
  // s1 - a - s2 - b - s3: s2 is dual-homed, but s1 cannot reach s3 through it.
  Topology t;
  for (const char* s : {"s1", "s2", "s3", "lonely"}) ASSERT_TRUE(t.AddServer(s, 8).ok());
  ASSERT_TRUE(t.AddSwitch("a").ok());
  ASSERT_TRUE(t.AddSwitch("b").ok());
  ASSERT_TRUE(t.AddDuplexLink("s1", "a", 10).ok());
  ASSERT_TRUE(t.AddDuplexLink("s2", "a", 10).ok());
  ASSERT_TRUE(t.AddDuplexLink("s2", "b", 10).ok());
  ASSERT_TRUE(t.AddDuplexLink("s3", "b", 10).ok());
  Router router(t);
  EXPECT_EQ(*router.Distance("s1", "s2"), 2u);
  absl::Status no_route = router.FlowLinkShares("s1", "s3").status();
  EXPECT_EQ(no_route.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(no_route.message(), "server 's1' has no route to server 's3'");
  EXPECT_EQ(router.Paths("lonely", "s1").status().message(),
            "server 'lonely' has no route to server 's1'");

  absl::Status unknown = router.FlowLinkShares("s1", "s9").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "server 's9' is not in the topology");
  absl::Status sw = router.Paths("a", "s1").status();
  EXPECT_EQ(sw.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sw.message(), "'a' is a switch, not a server");
}

TEST(RouterTest, OneWayLinkRoutesOneWayOnly) {
  Topology t;
  ASSERT_TRUE(t.AddServer("s1", 1).ok());
  ASSERT_TRUE(t.AddServer("s2", 1).ok());
  ASSERT_TRUE(t.AddSwitch("x").ok());
  ASSERT_TRUE(t.AddDuplexLink("s1", "x", 10).ok());
  ASSERT_TRUE(t.AddLink("x", "s2", 10).ok());
  Router router(t);
  EXPECT_TRUE(router.FlowLinkShares("s1", "s2").ok());
  EXPECT_EQ(router.FlowLinkShares("s2", "s1").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RouterTest, FlowHashIsDeterministicAndSpreadsFlows) {
  const Topology t = FatTree4();
  RouterOptions options;
  options.ecmp = EcmpMode::kFlowHash;
  Router a(t, options), b(t, options);
  std::map<std::string, int> by_core;
  for (int i = 0; i < 400; ++i) {
    const std::string key = absl::StrCat("job", i);
    absl::StatusOr<std::vector<LinkShare>> x = a.FlowLinkShares("s1", "s13", key);
    absl::StatusOr<std::vector<LinkShare>> y = b.FlowLinkShares("s1", "s13", key);
    ASSERT_TRUE(x.ok() && y.ok());
    // A single path of 6 links, each carrying the whole flow.
    ASSERT_EQ(x->size(), 6u);
    for (const LinkShare& ls : *x) EXPECT_EQ(ls.share, 1.0);
    EXPECT_EQ(ById(t, *x), ById(t, *y));
    EXPECT_EQ(ById(t, *x), ById(t, *a.FlowLinkShares("s1", "s13", key)));
    for (const LinkShare& ls : *x) {
      const std::string& id = t.link(ls.link).id;
      if (id.rfind("core", 0) == 0) ++by_core[id.substr(0, id.find('-'))];
    }
  }
  ASSERT_EQ(by_core.size(), 4u);  // every core carries some flows
  for (const auto& [core, n] : by_core) {
    EXPECT_GT(n, 60) << core;  // 100 expected each
    EXPECT_LT(n, 140) << core;
  }
  // Paths() reports the chosen path in order, with share 1.
  absl::StatusOr<PathSet> p = a.Paths("s1", "s13", "job7");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->total_paths, 4);
  ASSERT_EQ(p->paths.size(), 1u);
  EXPECT_EQ(p->paths[0].share, 1.0);
  EXPECT_EQ(t.link(p->paths[0].links.front()).id, "s1->p1-edge1");
  EXPECT_EQ(t.link(p->paths[0].links.back()).id, "p4-edge1->s13");
  // A different seed moves some flows.
  options.hash_seed = 42;
  Router c(t, options);
  int moved = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string key = absl::StrCat("job", i);
    moved += ById(t, *a.FlowLinkShares("s1", "s13", key)) !=
             ById(t, *c.FlowLinkShares("s1", "s13", key));
  }
  EXPECT_GT(moved, 30);
}

TEST(RouterTest, PathListingIsCapped) {
  const Topology t = FatTree4();
  Router router(t, RouterOptions{.max_listed_paths = 3});
  absl::StatusOr<PathSet> p = router.Paths("s1", "s9");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->total_paths, 4);
  EXPECT_EQ(p->paths.size(), 3u);
}

TEST(RouterTest, KeepsItsTablesWithinTheirBoundAndRoutesAsAnUnboundedRouter) {
  const Topology t = FatTree4();  // 16 servers, 36 nodes: a table is a few hundred bytes
  Router unbounded(t);
  RouterOptions small;
  small.max_table_bytes = 1500;
  Router bounded(t, small);
  // Every pair twice: the bounded router forgets tables and builds them again.
  for (int round = 0; round < 2; ++round) {
    for (int a = 1; a <= 16; ++a) {
      for (int b = 1; b <= 16; ++b) {
        const std::string sa = absl::StrCat("s", a), sb = absl::StrCat("s", b);
        absl::StatusOr<std::vector<LinkShare>> want = unbounded.FlowLinkShares(sa, sb);
        absl::StatusOr<std::vector<LinkShare>> got = bounded.FlowLinkShares(sa, sb);
        ASSERT_TRUE(want.ok() && got.ok());
        EXPECT_EQ(ById(t, *got), ById(t, *want)) << sa << " -> " << sb;
        EXPECT_LE(bounded.table_bytes(), small.max_table_bytes);
      }
    }
  }
  EXPECT_GE(bounded.table_count(), 1u);
  EXPECT_LT(bounded.table_count(), 16u);  // some were forgotten
  // One per server and one per edge switch: a server entered by one link
  // from its switch takes that switch's table one hop further.
  EXPECT_EQ(unbounded.table_count(), 16u + 8u);
  EXPECT_GT(unbounded.table_bytes(), small.max_table_bytes);
}

// Shortest paths from src to dst by a search of the test's own, forwards
// over out-links, entering no server but dst: (hops, path count).
std::pair<uint32_t, double> SearchPaths(const Topology& t, NodeIndex src, NodeIndex dst) {
  std::vector<int64_t> dist(t.nodes().size(), -1);
  std::vector<double> count(t.nodes().size(), 0);
  std::vector<NodeIndex> frontier = {src};
  dist[src] = 0;
  count[src] = 1;
  for (size_t at = 0; at < frontier.size(); ++at) {
    const NodeIndex u = frontier[at];
    if (u != src && t.IsServer(u)) continue;  // servers do not forward
    for (LinkIndex l : t.node(u).out) {
      const NodeIndex v = t.link(l).to;
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        frontier.push_back(v);
      }
      if (dist[v] == dist[u] + 1) count[v] += count[u];
    }
  }
  return {static_cast<uint32_t>(dist[dst]), count[dst]};
}

// A leaf's server takes its switch's table one hop further: every pair's
// hops and path count are what a search from the source finds, on a fat
// tree and on a leaf-spine whose one server is also wired to a second leaf
// (two links in: searched on its own).
TEST(RouterTest, ServerTablesFromTheirSwitchCountEveryShortestPath) {
  LeafSpineOptions o;
  o.leaves = 3;
  o.spines = 4;
  o.servers_per_leaf = 3;
  Topology dual = *MakeLeafSpine(o);
  const NodeIndex other_leaf = dual.link(dual.node(*dual.FindNode("s4")).in[0]).from;
  ASSERT_TRUE(dual.AddDuplexLink("s1", dual.node(other_leaf).id, 100).ok());
  ASSERT_EQ(dual.node(*dual.FindNode("s1")).in.size(), 2u);
  for (const Topology* t : {&dual}) {
    Router router(*t);
    for (NodeIndex a : t->Servers()) {
      for (NodeIndex b : t->Servers()) {
        if (a == b) continue;
        const auto [hops, paths] = SearchPaths(*t, a, b);
        absl::StatusOr<PathSet> got = router.Paths(t->node(a).id, t->node(b).id);
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_EQ(got->hops, hops) << t->node(a).id << " -> " << t->node(b).id;
        EXPECT_EQ(got->total_paths, paths) << t->node(a).id << " -> " << t->node(b).id;
      }
    }
  }
  const Topology fat = FatTree4();
  Router router(fat);
  for (NodeIndex a : fat.Servers()) {
    for (NodeIndex b : fat.Servers()) {
      if (a == b) continue;
      const auto [hops, paths] = SearchPaths(fat, a, b);
      absl::StatusOr<PathSet> got = router.Paths(fat.node(a).id, fat.node(b).id);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->hops, hops);
      EXPECT_EQ(got->total_paths, paths);
    }
  }
}

TEST(RouterTest, ParsesEcmpMode) {
  EXPECT_EQ(*ParseEcmpMode("even"), EcmpMode::kEvenSplit);
  EXPECT_EQ(*ParseEcmpMode("hash"), EcmpMode::kFlowHash);
  EXPECT_EQ(ParseEcmpMode("random").status().message(),
            "ecmp mode 'random': must be 'even' or 'hash'");
}

}  // namespace
}  // namespace router_test
}  // namespace phasor::topology
