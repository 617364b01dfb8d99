#include "integrations/slurm/tree_candidates.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "absl/strings/str_cat.h"

namespace phasor::slurm {
namespace {

struct Leaf {
  topology::NodeIndex index = 0;
  std::vector<std::string> free;  // in the fabric's order
};

// The leaves with free nodes, in the fabric's order of their first server.
std::vector<Leaf> FreeByLeaf(const topology::Topology& fabric, const std::set<std::string>& free_nodes) {
  std::vector<Leaf> leaves;
  std::map<topology::NodeIndex, size_t> slot;
  for (topology::NodeIndex s : fabric.Servers()) {
    const topology::Node& server = fabric.node(s);
    if (!free_nodes.contains(server.id)) continue;
    const std::optional<topology::NodeIndex> leaf = fabric.LeafOf(s);
    if (!leaf) continue;
    auto [it, added] = slot.try_emplace(*leaf, leaves.size());
    if (added) leaves.push_back({*leaf, {}});
    leaves[it->second].free.push_back(server.id);
  }
  return leaves;
}

}  // namespace

absl::StatusOr<std::vector<NodeSet>> EnumerateTreeCandidates(const topology::Topology& fabric,
                                                             const std::set<std::string>& free_nodes,
                                                             uint32_t count, uint32_t max_candidates) {
  if (count == 0) return absl::InvalidArgumentError("count: must be at least 1");
  if (max_candidates == 0) return absl::InvalidArgumentError("max_candidates: must be at least 1");
  const std::vector<Leaf> leaves = FreeByLeaf(fabric, free_nodes);
  size_t total = 0;
  for (const Leaf& l : leaves) total += l.free.size();
  if (total < count) {
    return absl::FailedPreconditionError(absl::StrCat(total, " free nodes, the job needs ", count));
  }
  std::vector<NodeSet> out;
  std::set<std::vector<std::string>> seen;
  std::map<std::string, topology::NodeIndex> position;
  for (const Leaf& l : leaves) {
    for (const std::string& n : l.free) position[n] = *fabric.FindNode(n);
  }
  // Nodes in the fabric's order (Slurm numbers a job's nodes in that order).
  auto add = [&](NodeSet set) {
    if (out.size() >= max_candidates) return;
    std::sort(set.nodes.begin(), set.nodes.end(),
              [&](const std::string& a, const std::string& b) { return position[a] < position[b]; });
    if (seen.insert(set.nodes).second) out.push_back(std::move(set));
  };

  // 1. Single leaves, best fit first (stable: the fabric's order breaks ties).
  std::vector<size_t> by_fit;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i].free.size() >= count) by_fit.push_back(i);
  }
  std::stable_sort(by_fit.begin(), by_fit.end(),
                   [&](size_t a, size_t b) { return leaves[a].free.size() < leaves[b].free.size(); });
  for (size_t i : by_fit) add({{leaves[i].free.begin(), leaves[i].free.begin() + count}, 1});

  // 2. Spanning sets: the first leaf in turn, then the fullest leaves.
  std::vector<size_t> fullest(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) fullest[i] = i;
  std::stable_sort(fullest.begin(), fullest.end(),
                   [&](size_t a, size_t b) { return leaves[a].free.size() > leaves[b].free.size(); });
  std::vector<NodeSet> spanning;
  for (size_t first : fullest) {
    NodeSet set;
    std::vector<size_t> order = {first};
    for (size_t i : fullest) {
      if (i != first) order.push_back(i);
    }
    for (size_t i : order) {
      if (set.nodes.size() == count) break;
      const size_t take = std::min<size_t>(count - set.nodes.size(), leaves[i].free.size());
      set.nodes.insert(set.nodes.end(), leaves[i].free.begin(), leaves[i].free.begin() + take);
      ++set.leaves;
    }
    if (set.leaves > 1) spanning.push_back(std::move(set));
  }
  std::stable_sort(spanning.begin(), spanning.end(),
                   [](const NodeSet& a, const NodeSet& b) { return a.leaves < b.leaves; });
  for (NodeSet& s : spanning) add(std::move(s));
  return out;
}

absl::StatusOr<std::vector<NodeSet>> EnumerateTreeCandidates(const topology::Topology& fabric,
                                                             const std::set<std::string>& free_nodes,
                                                             const std::set<std::string>& eligible,
                                                             uint32_t count, uint32_t max_candidates) {
  std::set<std::string> usable;
  std::set_intersection(free_nodes.begin(), free_nodes.end(), eligible.begin(), eligible.end(),
                        std::inserter(usable, usable.end()));
  return EnumerateTreeCandidates(fabric, usable, count, max_candidates);
}

}  // namespace phasor::slurm
