#include "placer/affinity_graph.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <queue>

#include <boost/graph/connected_components.hpp>
#include <boost/pending/disjoint_sets.hpp>

namespace phasor::placer {

AffinityGraph::AffinityGraph(size_t job_count, const std::vector<std::vector<size_t>>& link_jobs,
                             const std::vector<bool>& pinned)
    : job_count_(job_count), graph_(job_count + link_jobs.size()) {
  auto is_pinned = [&](size_t j) { return !pinned.empty() && pinned[j]; };
  // A pinned job's edges join nothing: left out of the graph, added to the
  // components of its links below.
  for (size_t l = 0; l < link_jobs.size(); ++l) {
    for (size_t j : link_jobs[l]) {
      if (!is_pinned(j)) boost::add_edge(j, job_count + l, graph_);
    }
  }
  std::vector<int> component_of(boost::num_vertices(graph_));
  const int count = boost::connected_components(graph_, component_of.data());
  std::vector<Component> all(count);
  std::vector<char> has_free(count, 0);
  for (size_t j = 0; j < job_count; ++j) {
    if (!is_pinned(j)) has_free[component_of[j]] = 1;
  }
  for (size_t l = 0; l < link_jobs.size(); ++l) {
    const int c = component_of[job_count + l];
    if (!has_free[c]) continue;  // every job on it pinned
    all[c].links.push_back(l);
    for (size_t j : link_jobs[l]) {
      all[c].edges.emplace_back(j, l);
      if (is_pinned(j)) all[c].jobs.push_back(j);
    }
  }
  for (size_t j = 0; j < job_count; ++j) {
    if (!is_pinned(j)) all[component_of[j]].jobs.push_back(j);
  }
  for (Component& c : all) {
    if (c.links.empty()) continue;
    if (!pinned.empty()) {
      std::sort(c.jobs.begin(), c.jobs.end());
      c.jobs.erase(std::unique(c.jobs.begin(), c.jobs.end()), c.jobs.end());
    }
    components_.push_back(std::move(c));
  }
}

std::vector<AffinityGraph::Edge> AffinityGraph::MaxWeightSpanningTree(
    const Component& component, const std::vector<double>& link_weight) const {
  // Kruskal as Boost.Graph's kruskal_minimum_spanning_tree runs it on a graph
  // of the component with negated weights: every edge pushed, in the
  // component's order, onto a std::priority_queue ordered by std::greater of
  // the negated weight, popped into Boost's disjoint sets. The heap holds the
  // weight beside the edge's index instead of a descriptor pointing at it
  // (Boost's form spent most of a large component's solve there), and the
  // loop stops at vertices - 1 edges, after which no edge joins two sets.
  // The same comparisons in the same order: ties pop as they do in Boost,
  // so the tree is the one it returns, edge for edge.
  const size_t jobs = component.jobs.size();
  const size_t vertices = jobs + component.links.size();
  auto position = [](const std::vector<size_t>& sorted, size_t v) {
    return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
  };
  using Entry = std::pair<double, uint32_t>;  // (negated weight, index in component.edges)
  auto heaviest_on_top = [](const Entry& a, const Entry& b) { return std::greater<double>()(a.first, b.first); };
  std::vector<Entry> heap;
  heap.reserve(component.edges.size());
  std::priority_queue<Entry, std::vector<Entry>, decltype(heaviest_on_top)> queue(heaviest_on_top, std::move(heap));
  for (size_t i = 0; i < component.edges.size(); ++i) {
    queue.emplace(-link_weight[component.edges[i].second], static_cast<uint32_t>(i));
  }
  boost::disjoint_sets_with_storage<> sets(vertices);
  std::vector<Edge> out;
  out.reserve(vertices == 0 ? 0 : vertices - 1);
  while (!queue.empty() && out.size() + 1 < vertices) {
    const Edge& e = component.edges[queue.top().second];
    queue.pop();
    const size_t u = sets.find_set(position(component.jobs, e.first));
    const size_t v = sets.find_set(jobs + position(component.links, e.second));
    if (u != v) {
      out.push_back(e);
      sets.link(u, v);
    }
  }
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
    boost::disjoint_sets_with_storage<> sets(vertices);
    size_t d = 0;
    bool connected = true;
    for (size_t i = 0; i < e; ++i) {
      if (d < drop && dropped[d] == i) {
        ++d;
        continue;
      }
      const Edge& edge = component.edges[i];
      const size_t a = sets.find_set(job_vertex.at(edge.first));
      const size_t b = sets.find_set(link_vertex.at(edge.second));
      if (a == b) {
        connected = false;  // a loop remains, so the rest cannot span
        break;
      }
      sets.link(a, b);
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
