#include "cmd/phasor/rank_topology.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/router.h"
#include "topology/topology_yaml.h"
#include "topology/traffic.h"

namespace phasor::cmd {

absl::Status RouteCandidates(const std::string& topology_path, placer::RankRequest& request,
                             std::vector<placer::RejectedCandidate>& unrouted) {
  absl::StatusOr<topology::Topology> fabric = topology::LoadTopologyYaml(topology_path);
  if (!fabric.ok()) return fabric.status();
  const topology::Router router(*fabric);

  std::set<std::string> defined;
  for (const placer::Link& link : request.links) defined.insert(link.id);

  std::vector<placer::Candidate> kept;
  kept.reserve(request.candidates.size());
  for (placer::Candidate& candidate : request.candidates) {
    if (candidate.servers.empty()) {
      kept.push_back(std::move(candidate));
      continue;
    }
    absl::StatusOr<topology::PlacementLinkShares> shares =
        topology::PlacementShares(router, candidate.servers);
    std::string reason;
    if (!shares.ok()) reason = std::string(shares.status().message());
    for (const auto& [job, links] : shares.ok() ? *shares : topology::PlacementLinkShares{}) {
      if (reason.empty() && candidate.links.contains(job)) {
        reason = absl::StrCat("job '", job, "' is given both as links and as servers");
      }
    }
    if (!reason.empty()) {
      unrouted.push_back(placer::RejectedCandidate{candidate.id, std::move(reason)});
      continue;
    }
    for (auto& [job, links] : *shares) {
      for (const auto& [link, share] : links) {
        if (defined.insert(link).second) {
          request.links.push_back(
              placer::Link{link, fabric->link(*fabric->FindLink(link)).capacity_gbps});
        }
      }
      candidate.links[job] = std::move(links);
    }
    candidate.servers.clear();
    kept.push_back(std::move(candidate));
  }
  request.candidates = std::move(kept);
  return absl::OkStatus();
}

}  // namespace phasor::cmd
