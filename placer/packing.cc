#include "placer/packing.h"

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
  std::set<std::string> used;
  for (const auto& [job, servers] : placement) used.insert(servers.begin(), servers.end());
  WholeFree whole;
  std::map<std::string, bool> rack_whole;
  for (const auto& [server, rack] : view.rack_of) {
    const bool free = view.free.contains(server) && !used.contains(server);
    whole.servers += free;
    auto [it, inserted] = rack_whole.emplace(rack, free);
    if (!inserted) it->second = it->second && free;
  }
  for (const auto& [rack, rack_free] : rack_whole) whole.racks += rack_free;
  return whole;
}

bool LeavesLessPacked(const WholeFree& candidate, const WholeFree& host_first) {
  return candidate.servers < host_first.servers || candidate.racks < host_first.racks;
}

size_t KeepPacking(const PackingView& view, RankRequest& request, std::vector<RejectedCandidate>& rejected) {
  if (request.candidates.size() < 2 || request.candidates.front().servers.empty()) return 0;
  const WholeFree first = WholeFreeAfter(view, request.candidates.front().servers);
  std::vector<Candidate> kept;
  kept.reserve(request.candidates.size());
  size_t moved = 0;
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    Candidate& c = request.candidates[i];
    if (i > 0 && !c.servers.empty()) {
      const WholeFree left = WholeFreeAfter(view, c.servers);
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
