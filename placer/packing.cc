#include "placer/packing.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace phasor::placer {

absl::StatusOr<PackingView> PackingViewOf(const topology::Topology& fabric,
                                          const std::vector<std::string>& free_servers) {
  PackingView view;
  for (topology::NodeIndex s : fabric.Servers()) {
    const std::optional<topology::NodeIndex> leaf = fabric.LeafOf(s);
    view.rack_of[fabric.node(s).id] = leaf ? fabric.node(*leaf).id : "";
  }
  for (size_t i = 0; i < free_servers.size(); ++i) {
    const std::string& id = free_servers[i];
    const std::string field = absl::StrCat("free_servers[", i, "]");
    if (id.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty server id"));
    if (!view.rack_of.contains(id)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": '", id, "' is not a server of the fabric"));
    }
    if (!view.free.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": '", id, "' is given twice"));
    }
  }
  return view;
}

WholeFree WholeFreeAfter(const PackingView& view, const std::map<std::string, std::vector<std::string>>& placement) {
  return PackingCounts(view).After(placement);
}

PackingCounts::PackingCounts(const PackingView& view) : view_(&view) {
  for (const auto& [server, rack] : view.rack_of) {
    RackCount& count = racks_[rack];
    ++count.servers;
    if (view.free.contains(server)) ++count.free;
  }
  for (const auto& [rack, count] : racks_) {
    before_.servers += count.free;
    before_.racks += count.free == count.servers;
  }
}

WholeFree PackingCounts::After(const std::map<std::string, std::vector<std::string>>& placement) const {
  // The whole free servers the placement takes (each once), by rack.
  std::set<std::string> taken;
  for (const auto& [job, servers] : placement) {
    for (const std::string& s : servers) {
      if (view_->free.contains(s)) taken.insert(s);
    }
  }
  WholeFree whole = before_;
  std::map<std::string, size_t> taken_of_rack;
  for (const std::string& s : taken) {
    auto rack = view_->rack_of.find(s);
    if (rack == view_->rack_of.end()) continue;  // not a server of the view: ignored
    --whole.servers;
    ++taken_of_rack[rack->second];
  }
  for (const auto& [rack, n] : taken_of_rack) {
    const RackCount& count = racks_.at(rack);
    if (count.free == count.servers) --whole.racks;  // it was whole, and is no longer
  }
  return whole;
}

bool LeavesLessPacked(const WholeFree& candidate, const WholeFree& host_first) {
  return candidate.servers < host_first.servers || candidate.racks < host_first.racks;
}

size_t KeepPacking(const PackingView& view, RankRequest& request, std::vector<RejectedCandidate>& rejected) {
  if (request.candidates.size() < 2 || request.candidates.front().servers.empty()) return 0;
  return KeepPacking(PackingCounts(view), request, rejected);
}

size_t KeepPacking(const PackingCounts& counts, RankRequest& request, std::vector<RejectedCandidate>& rejected) {
  if (request.candidates.size() < 2 || request.candidates.front().servers.empty()) return 0;
  const WholeFree first = counts.After(request.candidates.front().servers);
  std::vector<Candidate> kept;
  kept.reserve(request.candidates.size());
  size_t moved = 0;
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    Candidate& c = request.candidates[i];
    if (i > 0 && !c.servers.empty()) {
      const WholeFree left = counts.After(c.servers);
      if (LeavesLessPacked(left, first)) {
        rejected.push_back({c.id, absl::StrCat("packing: leaves ", left.servers, " whole free servers and ",
                                               left.racks, " whole free racks; the host's first leaves ",
                                               first.servers, " and ", first.racks)});
        ++moved;
        continue;
      }
    }
    kept.push_back(std::move(c));
  }
  request.candidates = std::move(kept);
  return moved;
}

}  // namespace phasor::placer
