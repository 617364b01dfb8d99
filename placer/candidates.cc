#include "placer/candidates.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "placer/traffic_profile.h"
#include "topology/traffic.h"

namespace phasor::placer {
namespace {

struct Leaf {
  std::vector<std::string> free;  // in the fabric's order
  std::vector<size_t> position;   // each free server's index in the fabric's order
};

// The leaves with free servers, in the fabric's order of their first server.
std::vector<Leaf> FreeByLeaf(const std::vector<RackedServer>& servers,
                             const std::set<std::string>& free_servers) {
  std::vector<Leaf> leaves;
  std::map<std::string, size_t> slot;
  for (size_t i = 0; i < servers.size(); ++i) {
    const RackedServer& server = servers[i];
    if (server.rack.empty() || !free_servers.contains(server.id)) continue;
    auto [it, added] = slot.try_emplace(server.rack, leaves.size());
    if (added) leaves.push_back({});
    leaves[it->second].free.push_back(server.id);
    leaves[it->second].position.push_back(i);
  }
  return leaves;
}

}  // namespace

absl::StatusOr<std::vector<ServerSet>> LeafCandidates(const topology::Topology& fabric,
                                                      const std::set<std::string>& free_servers,
                                                      uint32_t count, uint32_t max_candidates) {
  std::vector<RackedServer> servers;
  for (topology::NodeIndex s : fabric.Servers()) {
    const std::optional<topology::NodeIndex> leaf = fabric.LeafOf(s);
    servers.push_back({fabric.node(s).id, leaf ? fabric.node(*leaf).id : ""});
  }
  return LeafCandidates(servers, free_servers, count, max_candidates);
}

absl::StatusOr<std::vector<ServerSet>> LeafCandidates(const std::vector<RackedServer>& servers,
                                                      const std::set<std::string>& free_servers,
                                                      uint32_t count, uint32_t max_candidates) {
  if (count == 0) return absl::InvalidArgumentError("count: must be at least 1");
  if (max_candidates == 0) return absl::InvalidArgumentError("max_candidates: must be at least 1");
  const std::vector<Leaf> leaves = FreeByLeaf(servers, free_servers);
  size_t total = 0;
  for (const Leaf& l : leaves) total += l.free.size();
  if (total < count) {
    return absl::FailedPreconditionError(
        absl::StrCat(total, " free servers, the job needs ", count));
  }
  std::vector<ServerSet> out;
  std::set<std::vector<std::string>> seen;
  // A set's servers with their positions in the fabric's order (the first
  // of a server's entries: ids are unique among the fabric's servers).
  struct Taken {
    std::vector<std::pair<size_t, std::string>> servers;
    uint32_t racks = 0;
  };
  auto take = [&](Taken& set, const Leaf& leaf, size_t n) {
    for (size_t k = 0; k < n; ++k) set.servers.emplace_back(leaf.position[k], leaf.free[k]);
  };
  // Servers in the fabric's order (Slurm numbers a job's nodes in that order).
  auto add = [&](Taken set) {
    if (out.size() >= max_candidates) return;
    std::stable_sort(set.servers.begin(), set.servers.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    ServerSet sorted;
    sorted.racks = set.racks;
    sorted.servers.reserve(set.servers.size());
    for (auto& [position, id] : set.servers) sorted.servers.push_back(std::move(id));
    if (seen.insert(sorted.servers).second) out.push_back(std::move(sorted));
  };

  // 1. Single leaves, best fit first (stable: the fabric's order breaks ties).
  std::vector<size_t> by_fit;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i].free.size() >= count) by_fit.push_back(i);
  }
  std::stable_sort(by_fit.begin(), by_fit.end(), [&](size_t a, size_t b) {
    return leaves[a].free.size() < leaves[b].free.size();
  });
  for (size_t i : by_fit) {
    Taken set;
    set.racks = 1;
    take(set, leaves[i], count);
    add(std::move(set));
  }

  // 2. Spanning sets: the first leaf in turn, then the fullest leaves.
  std::vector<size_t> fullest(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) fullest[i] = i;
  std::stable_sort(fullest.begin(), fullest.end(), [&](size_t a, size_t b) {
    return leaves[a].free.size() > leaves[b].free.size();
  });
  std::vector<Taken> spanning;
  for (size_t first : fullest) {
    Taken set;
    std::vector<size_t> order = {first};
    for (size_t i : fullest) {
      if (i != first) order.push_back(i);
    }
    for (size_t i : order) {
      if (set.servers.size() == count) break;
      take(set, leaves[i], std::min<size_t>(count - set.servers.size(), leaves[i].free.size()));
      ++set.racks;
    }
    if (set.racks > 1) spanning.push_back(std::move(set));
  }
  std::stable_sort(spanning.begin(), spanning.end(),
                   [](const Taken& a, const Taken& b) { return a.racks < b.racks; });
  for (Taken& s : spanning) add(std::move(s));
  return out;
}

absl::StatusOr<std::vector<ServerSet>> LeafCandidates(const topology::Topology& fabric,
                                                      const std::set<std::string>& free_servers,
                                                      const std::set<std::string>& eligible,
                                                      uint32_t count, uint32_t max_candidates) {
  std::set<std::string> usable;
  std::set_intersection(free_servers.begin(), free_servers.end(), eligible.begin(), eligible.end(),
                        std::inserter(usable, usable.end()));
  return LeafCandidates(fabric, usable, count, max_candidates);
}

std::vector<double> RunningLoad(
    const topology::Topology& fabric, const RankRequest& request,
    const std::map<std::string, std::map<std::string, double>>& routed) {
  absl::flat_hash_map<std::string, const TrafficProfile*> profile_of;
  for (const Job& job : request.jobs) profile_of.emplace(job.id, &job.profile);
  std::vector<double> load(fabric.links().size(), 0.0);
  auto add = [&](const std::string& job, const std::map<std::string, double>& links) {
    auto profile = profile_of.find(job);
    if (profile == profile_of.end()) return;
    const double mean = MeanGbps(*profile->second);
    for (const auto& [link, share] : links) {
      if (std::optional<topology::LinkIndex> l = fabric.FindLink(link)) load[*l] += share * mean;
    }
  };
  for (const auto& [job, links] : request.running.links) add(job, links);
  for (const auto& [job, links] : routed) add(job, links);
  return load;
}

namespace {

// A rack as OwnCandidates weighs it.
struct Rack {
  std::vector<std::string> free;  // in the fabric's order
  double uplink_load = 0;         // running load / capacity over the leaf's links up and down
  size_t order = 0;               // the fabric's order
};

// The job's shape in the host's first candidate: entries per distinct server,
// largest first.
std::vector<size_t> ShapeOf(const std::vector<std::string>& entries) {
  std::map<std::string, size_t> per_server;
  for (const std::string& s : entries) ++per_server[s];
  std::vector<size_t> shape;
  for (const auto& [server, n] : per_server) shape.push_back(n);
  std::sort(shape.rbegin(), shape.rend());
  return shape;
}

// The `choice`-th way (0 first) to take `count` servers of `racks` (free
// counts change as jobs are placed): a single rack when one holds them, best
// fit, then the least loaded uplinks; else the racks with the most free
// servers, the least loaded first among equals, used whole but for at most
// `max_partial` of them. Empty when there is no such way.
std::vector<std::string> Choose(const std::vector<Rack>& racks, size_t count, size_t choice,
                                uint32_t max_partial) {
  std::vector<size_t> fits;
  for (size_t r = 0; r < racks.size(); ++r) {
    if (racks[r].free.size() >= count) fits.push_back(r);
  }
  auto by = [&](auto key) {
    return [&, key](size_t a, size_t b) {
      const auto ka = key(racks[a]), kb = key(racks[b]);
      return ka != kb ? ka < kb : racks[a].order < racks[b].order;
    };
  };
  if (!fits.empty()) {
    std::sort(fits.begin(), fits.end(),
              by([](const Rack& r) { return std::make_pair(r.free.size(), r.uplink_load); }));
    if (choice >= fits.size()) return {};
    const Rack& rack = racks[fits[choice]];
    return {rack.free.begin(), rack.free.begin() + static_cast<std::ptrdiff_t>(count)};
  }
  // Several racks: the fullest first (fewest racks), the least loaded among
  // equals; the `choice`-th variant leaves out the `choice` least preferred of
  // the racks it would use and takes the next ones instead.
  std::vector<size_t> order(racks.size());
  for (size_t r = 0; r < racks.size(); ++r) order[r] = r;
  std::sort(order.begin(), order.end(), by([](const Rack& r) {
              return std::make_pair(-static_cast<double>(r.free.size()), r.uplink_load);
            }));
  size_t need = count, used = 0;
  while (used < order.size() && need > 0) {
    need -= std::min(need, racks[order[used]].free.size());
    ++used;
  }
  if (need > 0) return {};
  if (choice > 0) {
    // Swap the least preferred used racks for the next unused ones.
    const size_t swaps = std::min(choice, std::min(used, order.size() - used));
    if (swaps < choice) return {};
    for (size_t k = 0; k < swaps; ++k) std::swap(order[used - 1 - k], order[used + k]);
    std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(used),
              by([](const Rack& r) {
                return std::make_pair(-static_cast<double>(r.free.size()), r.uplink_load);
              }));
  }
  std::vector<std::string> out;
  uint32_t partial = 0;
  for (size_t i = 0; i < used && out.size() < count; ++i) {
    const Rack& rack = racks[order[i]];
    const size_t take = std::min(count - out.size(), rack.free.size());
    if (take < rack.free.size()) ++partial;
    out.insert(out.end(), rack.free.begin(), rack.free.begin() + static_cast<std::ptrdiff_t>(take));
  }
  if (out.size() < count || partial > max_partial) return {};
  return out;
}

}  // namespace

std::vector<Candidate> OwnCandidates(const topology::Topology& fabric, const Candidate& host_first,
                                     const std::vector<std::string>& free_servers,
                                     const std::vector<double>& running_load,
                                     const OwnCandidateOptions& options) {
  if (options.count == 0 || host_first.servers.empty() || !host_first.links.empty()) return {};
  // The free servers by rack, racks in the fabric's order.
  const absl::flat_hash_set<std::string_view> free(free_servers.begin(), free_servers.end());
  std::vector<Rack> base;
  std::map<topology::NodeIndex, size_t> rack_of_leaf;
  for (topology::NodeIndex s : fabric.Servers()) {
    const topology::Node& server = fabric.node(s);
    if (!free.contains(server.id)) continue;
    const std::optional<topology::NodeIndex> leaf = fabric.LeafOf(s);
    if (!leaf) continue;
    auto [it, added] = rack_of_leaf.try_emplace(*leaf, base.size());
    if (added) {
      Rack rack;
      rack.order = base.size();
      for (const std::vector<topology::LinkIndex>* links :
           {&fabric.node(*leaf).out, &fabric.node(*leaf).in}) {
        for (topology::LinkIndex l : *links) {
          const topology::Link& link = fabric.link(l);
          if (fabric.IsServer(link.from) || fabric.IsServer(link.to)) continue;
          if (l < running_load.size()) rack.uplink_load += running_load[l] / link.capacity_gbps;
        }
      }
      base.push_back(std::move(rack));
    }
    base[it->second].free.push_back(server.id);
  }
  // Candidates as sets: each job's servers without their order.
  auto as_set = [](const std::map<std::string, std::vector<std::string>>& servers) {
    std::map<std::string, std::vector<std::string>> out = servers;
    for (auto& [job, list] : out) std::sort(list.begin(), list.end());
    return out;
  };
  std::vector<Candidate> out;
  std::set<std::map<std::string, std::vector<std::string>>> seen = {as_set(host_first.servers)};
  for (size_t k = 0; out.size() < options.count && k < options.count + 4; ++k) {
    // The racks as the jobs placed so far leave them: `base` until a job
    // takes servers that a later job must not get.
    std::optional<std::vector<Rack>> left;
    Candidate c;
    bool placed = true;
    for (auto it = host_first.servers.begin(); it != host_first.servers.end(); ++it) {
      const auto& [job, entries] = *it;
      const std::vector<Rack>& racks = left ? *left : base;
      const std::vector<size_t> shape = ShapeOf(entries);
      // Only the first job takes the k-th choice; the rest take the first.
      const std::vector<std::string> servers =
          Choose(racks, shape.size(), it == host_first.servers.begin() ? k : 0, options.max_partial_racks);
      if (servers.empty()) {
        placed = false;
        break;
      }
      std::vector<std::string>& list = c.servers[job];
      for (size_t i = 0; i < servers.size(); ++i) list.insert(list.end(), shape[i], servers[i]);
      if (std::next(it) == host_first.servers.end()) break;
      if (!left) left = base;
      const std::set<std::string> taken(servers.begin(), servers.end());
      for (Rack& rack : *left)
        std::erase_if(rack.free, [&](const std::string& s) { return taken.contains(s); });
    }
    if (!placed) continue;
    if (!seen.insert(as_set(c.servers)).second) continue;
    c.id = absl::StrCat("phasor-", out.size() + 1);
    c.proposed_by_phasor = true;
    out.push_back(std::move(c));
  }
  return out;
}

std::map<std::string, std::vector<std::string>> PlacementKey(
    const std::map<std::string, std::vector<std::string>>& servers) {
  std::map<std::string, std::vector<std::string>> key = servers;
  for (auto& [job, list] : key) std::sort(list.begin(), list.end());
  return key;
}

RoutedServers RouteServers(const topology::Router& router,
                           const std::map<std::string, std::vector<std::string>>& servers) {
  RoutedServers out;
  for (const auto& [job, list] : servers) {
    absl::StatusOr<std::shared_ptr<const topology::Router::RingShares>> ring = topology::JobRing(router, job, list);
    if (!ring.ok()) {
      out.failed_job = job;
      out.reason = absl::StrCat("job '", job, "': ", ring.status().message());
      return out;
    }
    out.shares.emplace(job, (*ring)->by_id);
    out.rings.emplace(job, *std::move(ring));
  }
  return out;
}

RoutedRunning RouteRunning(const topology::Router& router, const RankRequest& request) {
  RoutedRunning out;
  const RunningPlacement& running = request.running;
  bool both = false;
  for (const auto& [job, servers] : running.servers) both |= running.links.contains(job);
  out.routed = !running.servers.empty() && !both;
  out.complete = running.servers.empty();
  if (!out.routed) return out;
  static_cast<RoutedServers&>(out) = RouteServers(router, running.servers);
  out.complete = out.failed_job.empty();
  return out;
}

const std::vector<double>& RunningLoadOf(const topology::Topology& fabric, const RankRequest& request,
                                         RoutedRunning& running) {
  if (running.load) return *running.load;
  // RunningLoad(fabric, request, running.shares), its routed jobs' links
  // taken by index (the same sums in the same order: at 10,000 servers a
  // hundred jobs load a hundred thousand links, each a name to look up).
  running.load = RunningLoad(fabric, request);
  absl::flat_hash_map<std::string_view, const TrafficProfile*> profile_of;
  for (const Job& job : request.jobs) profile_of.emplace(job.id, &job.profile);
  std::vector<double>& load = *running.load;
  for (const auto& [job, ring] : running.rings) {
    auto profile = profile_of.find(job);
    if (profile == profile_of.end()) continue;
    const double mean = MeanGbps(*profile->second);
    for (const auto& [link, share] : ring->by_index) load[link] += share * mean;
  }
  return load;
}

void AddOwnCandidates(const topology::Topology& fabric, const topology::Router& router,
                      RankRequest& request, RoutedRunning* running) {
  if (request.free_servers.empty() || request.options.own_candidates == 0 ||
      request.candidates.empty())
    return;
  // Every running job that routes (one that does not leaves every candidate
  // unrouted later; its load is left out here).
  std::vector<double> routed_here;
  const std::vector<double>* load = &routed_here;
  if (running != nullptr && running->complete) {
    load = &RunningLoadOf(fabric, request, *running);
  } else {
    std::map<std::string, std::map<std::string, double>> routed;
    for (const auto& [job, servers] : request.running.servers) {
      absl::StatusOr<topology::LinkShareMap> shares = topology::JobLinkShares(router, job, servers);
      if (shares.ok()) routed.emplace(job, *std::move(shares));
    }
    routed_here = RunningLoad(fabric, request, routed);
  }
  OwnCandidateOptions options;
  options.count = request.options.own_candidates;
  std::vector<Candidate> own =
      OwnCandidates(fabric, request.candidates.front(), request.free_servers, *load, options);
  // Ids the host did not use; a placement the host proposed already (the
  // same servers for every job, in any order) is not proposed again.
  std::set<std::string> taken;
  std::set<std::map<std::string, std::vector<std::string>>> proposed;
  for (const Candidate& c : request.candidates) {
    taken.insert(c.id);
    if (!c.servers.empty()) proposed.insert(PlacementKey(c.servers));
  }
  for (Candidate& c : own) {
    if (!proposed.insert(PlacementKey(c.servers)).second) continue;
    while (taken.contains(c.id)) c.id += "'";
    taken.insert(c.id);
    request.candidates.push_back(std::move(c));
  }
}

}  // namespace phasor::placer
