// The affinity graph's spanning trees against Boost.Graph's: the maximum-
// weight tree is the one boost::kruskal_minimum_spanning_tree returns on the
// component with negated weights (ties included, which decide the tree the
// joint solver walks), and the enumeration visits distinct spanning trees.
#include "placer/affinity_graph.h"

#include <algorithm>
#include <iterator>
#include <random>
#include <set>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/kruskal_min_spanning_tree.hpp>
#include <boost/pending/disjoint_sets.hpp>

#include "gtest/gtest.h"

namespace phasor::placer {
namespace {

using Edge = AffinityGraph::Edge;

// Boost's Kruskal on a graph of the component alone, as the joint solver
// used it: vertices its jobs then its links (ascending), edges in the
// component's order, weight -link_weight.
std::vector<Edge> BoostTree(const AffinityGraph::Component& c, const std::vector<double>& link_weight) {
  using Weighted = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
      boost::property<boost::edge_weight_t, double, boost::property<boost::edge_index_t, size_t>>>;
  auto position = [](const std::vector<size_t>& sorted, size_t v) {
    return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
  };
  Weighted g(c.jobs.size() + c.links.size());
  for (size_t i = 0; i < c.edges.size(); ++i) {
    boost::add_edge(position(c.jobs, c.edges[i].first), c.jobs.size() + position(c.links, c.edges[i].second),
                    Weighted::edge_property_type(-link_weight[c.edges[i].second], i), g);
  }
  std::vector<boost::graph_traits<Weighted>::edge_descriptor> tree;
  boost::kruskal_minimum_spanning_tree(g, std::back_inserter(tree));
  std::vector<Edge> out;
  for (const auto& e : tree) out.push_back(c.edges[boost::get(boost::edge_index, g, e)]);
  return out;
}

// True when `tree` has vertices - 1 edges of `c` and joins every vertex.
bool Spans(const AffinityGraph::Component& c, const std::vector<Edge>& tree) {
  const size_t vertices = c.jobs.size() + c.links.size();
  if (tree.size() + 1 != vertices) return false;
  auto position = [](const std::vector<size_t>& sorted, size_t v) {
    return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
  };
  boost::disjoint_sets_with_storage<> sets(vertices);
  for (const Edge& e : tree) {
    if (std::find(c.edges.begin(), c.edges.end(), e) == c.edges.end()) return false;
    const size_t a = sets.find_set(position(c.jobs, e.first));
    const size_t b = sets.find_set(c.jobs.size() + position(c.links, e.second));
    if (a == b) return false;
    sets.link(a, b);
  }
  return true;
}

// Random candidates: `jobs` jobs, `links` links of 2..max_on_link jobs each.
std::vector<std::vector<size_t>> RandomLinks(std::mt19937_64& rng, size_t jobs, size_t links, size_t max_on_link) {
  std::vector<std::vector<size_t>> out(links);
  for (auto& on : out) {
    const size_t n = 2 + rng() % (std::min(jobs, max_on_link) - 1);
    std::vector<size_t> all(jobs);
    for (size_t j = 0; j < jobs; ++j) all[j] = j;
    std::shuffle(all.begin(), all.end(), rng);
    on.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    std::sort(on.begin(), on.end());
  }
  return out;
}

TEST(AffinityGraphTest, MaxWeightSpanningTreeIsBoostsKruskalTreeEdgeForEdge) {
  std::mt19937_64 rng(7);
  size_t compared = 0, tied = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t jobs = 2 + rng() % 40;
    const size_t links = 1 + rng() % 300;
    const AffinityGraph graph(jobs, RandomLinks(rng, jobs, links, 2 + rng() % 12));
    // Weights from a few values (ties everywhere) or all distinct.
    std::vector<double> weight(links);
    const bool few = trial % 2 == 0;
    for (double& w : weight) w = few ? 0.25 * static_cast<double>(rng() % 3) : std::uniform_real_distribution<double>(-1, 1)(rng);
    for (const AffinityGraph::Component& c : graph.components()) {
      const std::vector<Edge> ours = graph.MaxWeightSpanningTree(c, weight);
      ASSERT_TRUE(Spans(c, ours)) << "trial " << trial;
      ASSERT_EQ(ours, BoostTree(c, weight)) << "trial " << trial;
      ++compared;
      tied += few && c.has_cycle();
    }
  }
  EXPECT_GT(compared, 300u);
  EXPECT_GT(tied, 50u);  // loops with tied weights: where the order of ties decides the tree
}

TEST(AffinityGraphTest, MaxWeightSpanningTreeKeepsTheHeavyLinksWholeOnALoop) {
  // Jobs 0 and 1 share links 0 and 1 (a loop of four edges): the tree keeps
  // both edges of the heavier link and one of the lighter.
  const AffinityGraph graph(2, {{0, 1}, {0, 1}});
  ASSERT_EQ(graph.components().size(), 1u);
  const AffinityGraph::Component& c = graph.components()[0];
  const std::vector<Edge> tree = graph.MaxWeightSpanningTree(c, {0.1, 0.9});
  ASSERT_EQ(tree.size(), 3u);
  EXPECT_EQ(std::count_if(tree.begin(), tree.end(), [](const Edge& e) { return e.second == 1; }), 2);
}

TEST(AffinityGraphTest, PinnedJobsJoinNoLinksIntoOneComponent) {
  // Jobs 1, 3 and 4 pinned. Link 0 {0, 1}, link 1 {1, 2}, link 2 {3, 4},
  // link 3 {0, 3}, link 4 {2, 5}: one component without the pins.
  const std::vector<std::vector<size_t>> links = {{0, 1}, {1, 2}, {3, 4}, {0, 3}, {2, 5}};
  const AffinityGraph whole(6, links);
  ASSERT_EQ(whole.components().size(), 1u);
  EXPECT_EQ(whole.components()[0].jobs, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));

  const AffinityGraph cut(6, links, {false, true, false, true, true, false});
  ASSERT_EQ(cut.components().size(), 2u);
  // Job 0 with its links 0 and 3 and the pinned jobs on them.
  const AffinityGraph::Component& a = cut.components()[0];
  EXPECT_EQ(a.jobs, (std::vector<size_t>{0, 1, 3}));
  EXPECT_EQ(a.links, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(a.edges, (std::vector<Edge>{{0, 0}, {1, 0}, {0, 3}, {3, 3}}));
  EXPECT_FALSE(a.has_cycle());
  // Jobs 2 and 5 with links 1 and 4; pinned job 1 is in both components.
  const AffinityGraph::Component& b = cut.components()[1];
  EXPECT_EQ(b.jobs, (std::vector<size_t>{1, 2, 5}));
  EXPECT_EQ(b.links, (std::vector<size_t>{1, 4}));
  // Link 2 (pinned jobs only) is in none.
  for (const AffinityGraph::Component& c : cut.components()) {
    EXPECT_EQ(std::count(c.links.begin(), c.links.end(), size_t{2}), 0);
  }

  // A free job sharing two links with one pinned job keeps that loop: its
  // one shift must suit both links against the same pin.
  const AffinityGraph loop(2, {{0, 1}, {0, 1}}, {false, true});
  ASSERT_EQ(loop.components().size(), 1u);
  EXPECT_TRUE(loop.components()[0].has_cycle());
  // Every job pinned: nothing to solve, no component.
  EXPECT_TRUE(AffinityGraph(2, {{0, 1}}, {true, true}).components().empty());
}

TEST(AffinityGraphTest, ForEachSpanningTreeVisitsDistinctSpanningTrees) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t jobs = 2 + rng() % 5;
    const AffinityGraph graph(jobs, RandomLinks(rng, jobs, 1 + rng() % 5, 4));
    for (const AffinityGraph::Component& c : graph.components()) {
      std::set<std::vector<Edge>> seen;
      const size_t visited = graph.ForEachSpanningTree(c, 1000, [&](const std::vector<Edge>& tree) {
        EXPECT_TRUE(Spans(c, tree));
        std::vector<Edge> sorted = tree;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_TRUE(seen.insert(sorted).second) << "a tree visited twice";
      });
      EXPECT_EQ(visited, seen.size());
      EXPECT_LE(visited, AffinityGraph::DropSetCount(c));
      EXPECT_GE(visited, 1u);
    }
  }
  // A loop of four edges has four spanning trees.
  const AffinityGraph square(2, {{0, 1}, {0, 1}});
  EXPECT_EQ(square.ForEachSpanningTree(square.components()[0], 1000, [](const std::vector<Edge>&) {}), 4u);
}

}  // namespace
}  // namespace phasor::placer
