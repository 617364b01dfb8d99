#include "placer/affinity_graph.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include <boost/graph/connected_components.hpp>
#include <boost/graph/kruskal_min_spanning_tree.hpp>

namespace phasor::placer {
namespace {

// Union-find over the component's vertices, for the spanning-tree enumeration.
class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t Find(size_t v) {
    while (parent_[v] != v) v = parent_[v] = parent_[parent_[v]];
    return v;
  }
  bool Unite(size_t a, size_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return false;
    parent_[a] = b;
    return true;
  }

 private:
  std::vector<size_t> parent_;
};

}  // namespace

AffinityGraph::AffinityGraph(size_t job_count, const std::vector<std::vector<size_t>>& link_jobs)
    : job_count_(job_count), graph_(job_count + link_jobs.size()) {
  for (size_t l = 0; l < link_jobs.size(); ++l) {
    for (size_t j : link_jobs[l]) boost::add_edge(j, job_count + l, graph_);
  }
  std::vector<int> component_of(boost::num_vertices(graph_));
  const int count = boost::connected_components(graph_, component_of.data());
  std::vector<Component> all(count);
  for (size_t l = 0; l < link_jobs.size(); ++l) {
    Component& c = all[component_of[job_count + l]];
    c.links.push_back(l);
    for (size_t j : link_jobs[l]) c.edges.emplace_back(j, l);
  }
  for (size_t j = 0; j < job_count; ++j) all[component_of[j]].jobs.push_back(j);
  for (Component& c : all) {
    if (!c.links.empty()) components_.push_back(std::move(c));
  }
}

std::vector<AffinityGraph::Edge> AffinityGraph::MaxWeightSpanningTree(
    const Component& component, const std::vector<double>& link_weight) const {
  // Kruskal minimises: negate the weights on a graph of the component alone.
  // Each edge carries its index in component.edges, so the tree maps back
  // without a search. Vertices: the component's jobs, then its links, each
  // in ascending order (both lists are sorted).
  using Weighted = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
      boost::property<boost::edge_weight_t, double, boost::property<boost::edge_index_t, size_t>>>;
  const size_t jobs = component.jobs.size();
  auto position = [](const std::vector<size_t>& sorted, size_t v) {
    return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
  };
  Weighted g(jobs + component.links.size());
  for (size_t i = 0; i < component.edges.size(); ++i) {
    const Edge& e = component.edges[i];
    boost::add_edge(position(component.jobs, e.first), jobs + position(component.links, e.second),
                    Weighted::edge_property_type(-link_weight[e.second], i), g);
  }
  std::vector<boost::graph_traits<Weighted>::edge_descriptor> tree;
  tree.reserve(boost::num_vertices(g));
  boost::kruskal_minimum_spanning_tree(g, std::back_inserter(tree));
  const auto index = boost::get(boost::edge_index, g);
  std::vector<Edge> out;
  out.reserve(tree.size());
  for (const auto& e : tree) out.push_back(component.edges[boost::get(index, e)]);
  return out;
}

uint64_t AffinityGraph::DropSetCount(const Component& component) {
  const uint64_t e = component.edges.size();
  const uint64_t k = std::min<uint64_t>(component.cyclomatic_number(), e - component.cyclomatic_number());
  // C(e, k) as a running product in long double (exact far beyond the
  // thresholds the callers compare it with), saturating.
  long double c = 1;
  for (uint64_t i = 1; i <= k; ++i) {
    c = c * static_cast<long double>(e - k + i) / static_cast<long double>(i);
    if (c > 1e18L) return std::numeric_limits<uint64_t>::max();
  }
  return static_cast<uint64_t>(c + 0.5L);
}

size_t AffinityGraph::ForEachSpanningTree(
    const Component& component, size_t limit,
    const std::function<void(const std::vector<Edge>&)>& visit) const {
  const size_t drop = component.cyclomatic_number();
  const size_t e = component.edges.size();
  std::map<size_t, size_t> job_vertex, link_vertex;
  for (size_t j : component.jobs) job_vertex.emplace(j, job_vertex.size());
  for (size_t l : component.links) link_vertex.emplace(l, job_vertex.size() + link_vertex.size());
  const size_t vertices = job_vertex.size() + link_vertex.size();

  // Choose `drop` edges to remove, as an increasing index sequence.
  std::vector<size_t> dropped(drop);
  std::iota(dropped.begin(), dropped.end(), 0);
  size_t visited = 0;
  std::vector<Edge> tree;
  while (visited < limit) {
    tree.clear();
    DisjointSets sets(vertices);
    size_t d = 0;
    bool connected = true;
    for (size_t i = 0; i < e; ++i) {
      if (d < drop && dropped[d] == i) {
        ++d;
        continue;
      }
      const Edge& edge = component.edges[i];
      if (!sets.Unite(job_vertex.at(edge.first), link_vertex.at(edge.second))) {
        connected = false;  // a loop remains, so the rest cannot span
        break;
      }
      tree.push_back(edge);
    }
    if (connected) {
      visit(tree);
      ++visited;
    }
    // Next combination.
    size_t i = drop;
    while (i > 0 && dropped[i - 1] == e - drop + i - 1) --i;
    if (i == 0) break;
    ++dropped[i - 1];
    for (size_t k = i; k < drop; ++k) dropped[k] = dropped[k - 1] + 1;
  }
  return visited;
}

void WalkSpanningTree(const std::vector<AffinityGraph::Edge>& tree, size_t root,
                      int64_t root_shift,
                      const std::function<int64_t(size_t link, size_t job)>& link_shift,
                      const std::function<int64_t(size_t link, size_t job)>& period,
                      std::vector<int64_t>& shifts) {
  // Adjacency in the tree's order, by job and by link index.
  size_t job_end = root + 1, link_end = 0;
  for (const auto& [j, l] : tree) {
    job_end = std::max(job_end, j + 1);
    link_end = std::max(link_end, l + 1);
  }
  std::vector<std::vector<size_t>> jobs_of_link(link_end), links_of_job(job_end);
  for (const auto& [j, l] : tree) {
    jobs_of_link[l].push_back(j);
    links_of_job[j].push_back(l);
  }
  std::vector<char> job_done(job_end, 0), link_done(link_end, 0);
  std::vector<size_t> frontier = {root};
  shifts[root] = root_shift;
  job_done[root] = 1;
  while (!frontier.empty()) {
    const size_t j = frontier.back();
    frontier.pop_back();
    for (size_t l : links_of_job[j]) {
      if (link_done[l]) continue;
      link_done[l] = 1;
      for (size_t k : jobs_of_link[l]) {
        if (job_done[k]) continue;
        job_done[k] = 1;
        const int64_t t_prime = period(l, k);
        const int64_t t = shifts[j] - link_shift(l, j) + link_shift(l, k);
        shifts[k] = ((t % t_prime) + t_prime) % t_prime;
        frontier.push_back(k);
      }
    }
  }
}

}  // namespace phasor::placer
