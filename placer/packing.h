// The host's packing, kept (SPEC section 5, the ranking policy's
// `keep_packing`). A host scheduler that packs leaves whole servers and whole
// racks free so that the next large job fits in a server, or in a rack where
// it crosses no uplink. A candidate that leaves fewer whole free servers, or
// fewer whole free racks, than the host's first choice trades that objective
// for a predicted network gain, and the fragments it leaves cost later jobs
// more than the gain (docs/simulator.md, "Packing by rack"); such a candidate
// is not ranked. The rule reads servers, not links: it applies to candidates
// in server form, against the servers the host says are wholly free.
//
// One home for the rule: the trace replay, phasord (RankRequest.free_servers)
// and the Slurm controller call these functions.
//
// Pure functions; thread-safe.
#ifndef PHASOR_PLACER_PACKING_H_
#define PHASOR_PLACER_PACKING_H_

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "topology/topology.h"

namespace phasor::placer {

struct WholeFree {
  size_t servers = 0;  // servers with no GPU in use
  size_t racks = 0;    // racks (leaf switches) whose every server is whole free
};

// The cluster as the rule sees it.
struct PackingView {
  std::map<std::string, std::string> rack_of;  // every server of the cluster -> its rack
  std::set<std::string> free;                  // the servers wholly free now
};

// The view of `fabric` (a server's rack is its leaf switch, Topology::LeafOf)
// with `free_servers` wholly free. InvalidArgument naming free_servers[i] for
// an empty id, an id given twice, or one that is not a server of the fabric.
absl::StatusOr<PackingView> PackingViewOf(const topology::Topology& fabric,
                                          const std::vector<std::string>& free_servers);

// What stays whole after `placement` (job -> servers) takes its servers.
// Servers the view does not know are ignored. Costs the whole view; to judge
// several placements against one view, PackingCounts.
WholeFree WholeFreeAfter(const PackingView& view, const std::map<std::string, std::vector<std::string>>& placement);

// A view's counts, taken once (each rack's servers and whole free ones), so
// that each placement's WholeFreeAfter costs only the servers it takes (at
// 10,000 servers and a few candidates, a walk of the cluster per candidate
// was most of the Slurm controller's submit path). The view must outlive it.
class PackingCounts {
 public:
  explicit PackingCounts(const PackingView& view);
  // WholeFreeAfter(view, placement), the same counts.
  WholeFree After(const std::map<std::string, std::vector<std::string>>& placement) const;

 private:
  struct RackCount {
    size_t servers = 0, free = 0;
  };
  const PackingView* view_;
  WholeFree before_;                        // with nothing taken
  std::map<std::string, RackCount> racks_;  // by rack id
};

// True when `candidate` leaves fewer whole free servers or fewer whole free
// racks than `host_first`.
bool LeavesLessPacked(const WholeFree& candidate, const WholeFree& host_first);

// Moves every candidate after the first of `request` that gives servers and
// leaves less packed than the first to `rejected`, in order, with the reason
// ("packing: leaves 2 whole free servers and 0 whole free racks; the host's
// first leaves 3 and 1"); returns how many. Nothing moves when the first
// candidate gives no servers; candidates in link form stay (the rule cannot
// judge them).
size_t KeepPacking(const PackingView& view, RankRequest& request, std::vector<RejectedCandidate>& rejected);
// The same with the view's counts taken before (a caller that keeps them
// while the free servers stay the same).
size_t KeepPacking(const PackingCounts& counts, RankRequest& request, std::vector<RejectedCandidate>& rejected);

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_PACKING_H_
