// The affinity graph of one candidate placement (SPEC section 4): a bipartite
// Boost.Graph of jobs and contended links, an edge where a job's traffic
// crosses a link. It answers the structural questions the placer asks:
// components, whether a component has a loop, and its spanning trees.
//
// Immutable after construction; const methods are thread-safe.
#ifndef PHASOR_PLACER_AFFINITY_GRAPH_H_
#define PHASOR_PLACER_AFFINITY_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

namespace phasor::placer {

class AffinityGraph {
 public:
  // An edge (job, link) in the caller's numbering of jobs and links.
  using Edge = std::pair<size_t, size_t>;

  // `link_jobs[l]` lists the jobs on contended link l (each appears once).
  // `pinned[j]` true (when given: one entry per job) marks a job whose shift
  // is fixed: it joins no two links into one component (its shift is a
  // constant on each of its links, so what the links on either side of it
  // get does not depend on the other). A pinned job is then a job of every
  // component one of whose links it crosses, and a link whose every job is
  // pinned belongs to no component (its shifts are given).
  AffinityGraph(size_t job_count, const std::vector<std::vector<size_t>>& link_jobs,
                const std::vector<bool>& pinned = {});

  struct Component {
    std::vector<size_t> jobs;   // ascending (the pinned ones on its links included)
    std::vector<size_t> links;  // ascending
    std::vector<Edge> edges;    // every (job, link) edge of its links
    // Loops: edges - vertices + 1 > 0 (the cyclomatic number).
    size_t cyclomatic_number() const { return edges.size() + 1 - jobs.size() - links.size(); }
    bool has_cycle() const { return cyclomatic_number() > 0; }
  };

  // Connected components that contain at least one link and one job that is
  // not pinned; jobs on no contended link belong to none.
  const std::vector<Component>& components() const { return components_; }

  // The maximum-weight spanning tree of `component` (Boost.Graph's Kruskal),
  // weighting each edge by `link_weight[l]` of its link.
  std::vector<Edge> MaxWeightSpanningTree(const Component& component,
                                          const std::vector<double>& link_weight) const;

  // The number of ways to drop cyclomatic_number() edges of `component`: an
  // upper bound on its spanning trees and the cost of enumerating them
  // (saturates at UINT64_MAX).
  static uint64_t DropSetCount(const Component& component);

  // Calls `visit` with the edges of distinct spanning trees of `component`,
  // at most `limit` of them, and returns how many were visited. The trees are
  // found by dropping cyclomatic_number() edges in lexicographic order of the
  // dropped set and keeping the connected results.
  size_t ForEachSpanningTree(const Component& component, size_t limit,
                             const std::function<void(const std::vector<Edge>&)>& visit) const;

 private:
  // Edges in a vector (Boost's default is a list: an allocation per edge).
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                      boost::no_property, boost::no_property, boost::vecS>;

  size_t job_count_;
  Graph graph_;  // vertices: jobs 0..J-1, then links J..J+L-1
  std::vector<Component> components_;
};

// Walks a spanning tree (SPEC section 4): from `root` with shift `root_shift`,
// crossing job j -> link l -> job k sets t_k = (t_j - t_j^l + t_k^l) mod T'_k,
// where `link_shift(l, j)` is t_j^l (in us) and `period(l, k)` is T'_k on l.
// Returns a shift per job of the component (others stay untouched in `shifts`).
void WalkSpanningTree(const std::vector<AffinityGraph::Edge>& tree, size_t root,
                      int64_t root_shift,
                      const std::function<int64_t(size_t link, size_t job)>& link_shift,
                      const std::function<int64_t(size_t link, size_t job)>& period,
                      std::vector<int64_t>& shifts);

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_AFFINITY_GRAPH_H_
