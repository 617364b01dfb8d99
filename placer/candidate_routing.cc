#include "placer/candidate_routing.h"

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "placer/candidates.h"
#include "placer/ring_order.h"
#include "topology/topology_file.h"
#include "topology/topology_yaml.h"
#include "topology/traffic.h"

namespace phasor::placer {

void RouteCandidates(const topology::Topology& fabric, const topology::Router& router,
                     RankRequest& request, std::vector<RejectedCandidate>& unrouted, RoutedRunning* routed) {
  // The fabric's links the request defines so far, by link index (routed
  // rings name only the fabric's links; at 10,000 servers a hundred
  // thousand of their entries per request, where a name lookup each showed).
  std::vector<char> defined(fabric.links().size(), 0);
  for (const Link& link : request.links) {
    if (std::optional<topology::LinkIndex> l = fabric.FindLink(link.id)) defined[*l] = 1;
  }

  // The running part is routed once for every candidate (by the caller when
  // it gives `routed`). A job given in both of its forms is left for
  // ValidateRankRequest to name.
  RunningPlacement& running = request.running;
  RoutedRunning routed_here;
  if (routed == nullptr) {
    routed_here = RouteRunning(router, request);
    routed = &routed_here;
  }
  const bool route_running = routed->routed;
  RoutedRunning& running_routed = *routed;

  // The running jobs' mean load per directed link (by link index), which
  // phasor's ring order keeps new rings off (placer/ring_order.h).
  std::set<std::string> pinned;  // jobs with a pinned shift: running
  for (const Job& job : request.jobs) {
    if (job.pinned_shift_us) pinned.insert(job.id);
  }
  const std::vector<double> no_load;
  const std::vector<double>& running_load = request.options.ring_order == RingOrderMode::kPhasor
                                                ? RunningLoadOf(fabric, request, running_routed)
                                                : no_load;

  std::vector<Candidate> kept;
  kept.reserve(request.candidates.size());
  bool running_links_defined = false;
  for (Candidate& candidate : request.candidates) {
    if (candidate.servers.empty() && !route_running) {
      kept.push_back(std::move(candidate));
      continue;
    }
    if (request.options.ring_order == RingOrderMode::kPhasor) {
      for (auto& [job, list] : candidate.servers) {
        // A pinned job runs already (a running job in a candidate: the long
        // form): its ranks are where they are.
        if (pinned.contains(job)) continue;
        // An order that cannot be chosen (an unknown server) is left as it
        // is: routing it names the fault.
        absl::StatusOr<std::vector<std::string>> order = RingOrder(router, job, list, running_load);
        if (order.ok()) list = *std::move(order);
      }
    }
    RoutedServers own = RouteServers(router, candidate.servers);
    // The first failing job of the candidate and running together.
    std::string reason = own.reason;
    if (!running_routed.failed_job.empty() && (own.failed_job.empty() || running_routed.failed_job < own.failed_job)) {
      reason = running_routed.reason;
    }
    for (const auto& [job, links] : reason.empty() ? own.shares : topology::PlacementLinkShares{}) {
      if (reason.empty() && candidate.links.contains(job)) {
        reason = absl::StrCat("job '", job, "' is given both as links and as servers");
      }
    }
    if (!reason.empty()) {
      unrouted.push_back(RejectedCandidate{candidate.id, std::move(reason)});
      continue;
    }
    // New links in the order the candidate and running together name them
    // (a ring's links by index are in the order of their ids).
    auto add_links = [&](const topology::Router::RingShares& ring) {
      for (const auto& [link, share] : ring.by_index) {
        if (!defined[link]) {
          defined[link] = 1;
          const topology::Link& l = fabric.link(link);
          request.links.push_back(Link{l.id, l.capacity_gbps});
        }
      }
    };
    // The running jobs' links are all defined once the first candidate kept
    // named them: later candidates add only their own.
    auto theirs = running_links_defined ? running_routed.rings.end() : running_routed.rings.begin();
    for (auto& [job, links] : own.shares) {
      for (; theirs != running_routed.rings.end() && theirs->first < job; ++theirs) add_links(*theirs->second);
      add_links(*own.rings.at(job));
      candidate.links[job] = std::move(links);
    }
    for (; theirs != running_routed.rings.end(); ++theirs) add_links(*theirs->second);
    running_links_defined = true;
    for (auto& [job, list] : candidate.servers) {
      if (!pinned.contains(job)) candidate.rank_order[job] = std::move(list);
    }
    candidate.servers.clear();
    kept.push_back(std::move(candidate));
  }
  request.candidates = std::move(kept);
  if (route_running && running_routed.failed_job.empty()) {
    for (auto& [job, links] : running_routed.shares) running.links[job] = std::move(links);
    running.servers.clear();
  }
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
