#include "placer/candidate_routing.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/topology_file.h"
#include "topology/topology_yaml.h"
#include "topology/traffic.h"

namespace phasor::placer {

void RouteCandidates(const topology::Topology& fabric, const topology::Router& router,
                     RankRequest& request, std::vector<RejectedCandidate>& unrouted) {
  std::set<std::string> defined;
  for (const Link& link : request.links) defined.insert(link.id);

  std::vector<Candidate> kept;
  kept.reserve(request.candidates.size());
  for (Candidate& candidate : request.candidates) {
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
      unrouted.push_back(RejectedCandidate{candidate.id, std::move(reason)});
      continue;
    }
    for (auto& [job, links] : *shares) {
      for (const auto& [link, share] : links) {
        if (defined.insert(link).second) {
          request.links.push_back(Link{link, fabric.link(*fabric.FindLink(link)).capacity_gbps});
        }
      }
      candidate.links[job] = std::move(links);
    }
    candidate.servers.clear();
    kept.push_back(std::move(candidate));
  }
  request.candidates = std::move(kept);
}

absl::Status RouteCandidatesFromFile(const std::string& topology_path, RankRequest& request,
                                     std::vector<RejectedCandidate>& unrouted) {
  absl::StatusOr<topology::Topology> fabric = topology::LoadTopologyFile(topology_path);
  if (!fabric.ok()) return fabric.status();
  const topology::Router router(*fabric);
  RouteCandidates(*fabric, router, request, unrouted);
  return absl::OkStatus();
}

}  // namespace phasor::placer
