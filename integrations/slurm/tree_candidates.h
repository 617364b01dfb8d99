// Candidate node sets for a job, enumerated the way Slurm's topology/tree
// plugin picks nodes (fewest switches first), plus alternatives that a
// network-aware ranking may prefer.
//
// Assumptions (those of topology/tree): the fabric is a tree of switches
// (topology.conf); a server hangs off one leaf switch (its first switch
// neighbour); every free node is equally good to Slurm apart from where it
// sits. Nodes under one leaf differ only in their own server links, which no
// other job shares, so the candidates differ in which leaves they use and
// how many nodes they take from each.
//
// Order of the result:
//   1. one candidate per leaf switch with enough free nodes, best fit first
//      (fewest free nodes, then the fabric's order), as topology/tree does;
//   2. spanning candidates, fewest leaves first: starting from each leaf in
//      turn, filling from the leaves with the most free nodes.
// Within a leaf, nodes are taken in the fabric's order. Duplicates are
// dropped; at most `max_candidates` are returned.
//
// Pure function; thread-safe.
#ifndef PHASOR_INTEGRATIONS_SLURM_TREE_CANDIDATES_H_
#define PHASOR_INTEGRATIONS_SLURM_TREE_CANDIDATES_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/topology.h"

namespace phasor::slurm {

struct NodeSet {
  std::vector<std::string> nodes;  // in the fabric's order
  uint32_t leaves = 0;             // leaf switches used
};

// InvalidArgument for count 0 or max_candidates 0; FailedPrecondition
// ("N free nodes, the job needs M") when fewer than `count` free nodes sit
// under a leaf switch of `fabric`. Free nodes the fabric does not know are
// ignored.
absl::StatusOr<std::vector<NodeSet>> EnumerateTreeCandidates(const topology::Topology& fabric,
                                                             const std::set<std::string>& free_nodes,
                                                             uint32_t count, uint32_t max_candidates);

// The same among the free nodes the job may use: `eligible` (the nodes its
// partition, constraint, reservation, GRES, ... allow: job_request.h)
// filters `free_nodes`, as topology/tree only weighs the nodes a job can
// use. FailedPrecondition ("N free nodes, the job needs M") counts the
// eligible free nodes.
absl::StatusOr<std::vector<NodeSet>> EnumerateTreeCandidates(const topology::Topology& fabric,
                                                             const std::set<std::string>& free_nodes,
                                                             const std::set<std::string>& eligible,
                                                             uint32_t count, uint32_t max_candidates);

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_TREE_CANDIDATES_H_
