// A data-parallel job's ring order (SPEC sections 5 and 6): ring all-reduce
// sends from each server to the next in rank order, so the order decides
// which links the ring's hops cross. A host that assigns ranks without
// looking at the fabric (Kubernetes: pod index on whatever node each pod
// landed on) interleaves racks: k hops then cross a rack's uplinks, k times
// the job's traffic on each. An order that keeps each rack's servers together
// crosses every rack boundary once (MonkeyTree, 2026); keeping each pod's
// racks together does the same one tier up.
//
// RingOrder chooses, for one job's servers:
//   - each server's entries (GPUs, replicas) together, at the place of its
//     first entry in the chosen order;
//   - the servers of a rack (leaf switch) together, racks of one pod (the
//     leaves that reach the same switches up) together, each group in the
//     order the host named its first member;
//   - among those orders (racks and pods permuted while that stays small, and
//     reversed), the one whose ring loads the links the running jobs load
//     least: sum over links of share x (running load / capacity), then the
//     least traffic on switch links; the host's own order when it is as good.
//
// Assumptions: the traffic model of topology/traffic.h (one ring over the
// distinct servers, every hop the job's NIC-level profile); the host's
// launcher gives rank i to the i-th entry of the order returned (the
// integrations deliver it: docs/placer.md, "Ring order").
//
// Pure function given the router; thread-safe as the Router is.
#ifndef PHASOR_PLACER_RING_ORDER_H_
#define PHASOR_PLACER_RING_ORDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "topology/router.h"
#include "topology/topology.h"

namespace phasor::placer {

struct RingOrderOptions {
  // Orders tried beyond the grouped one: rack (and pod) permutations while
  // their number stays at or below this, each also reversed (default 24:
  // every order of up to four racks).
  uint32_t max_permutations = 24;
};

// The ring order of `servers` (a candidate's entries for job `job`, in the
// host's rank order; repeats allowed), a permutation of the same entries.
// `running_load` is the running jobs' mean load on each directed link of the
// fabric, by link index, in Gbit/s (empty: none). Errors as
// topology::JobLinkShares's (an unknown server, a switch, no route).
absl::StatusOr<std::vector<std::string>> RingOrder(const topology::Router& router,
                                                   std::string_view job,
                                                   const std::vector<std::string>& servers,
                                                   const std::vector<double>& running_load,
                                                   const RingOrderOptions& options = {});

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_RING_ORDER_H_
