#include "topology/traffic.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "topology/absl_compat.h"

namespace phasor::topology {

absl::StatusOr<std::vector<LinkShare>> HopLinkShares(const Router& router, std::string_view job,
                                                     NodeIndex src, NodeIndex dst) {
  const Topology& topology = router.topology();
  const std::string flow_key =
      absl::StrCat(AsAbsl(job), ":", topology.node(src).id, "->", topology.node(dst).id);
  return router.FlowLinkShares(src, dst, flow_key);
}

absl::StatusOr<std::vector<RingHop>> RingHops(const Router& router, std::string_view job,
                                              const std::vector<std::string>& servers) {
  const Topology& topology = router.topology();
  // Resolve and collapse repeated servers to their first appearance.
  std::vector<NodeIndex> ring;
  absl::flat_hash_set<NodeIndex> seen;
  for (const std::string& id : servers) {
    std::optional<NodeIndex> n = topology.FindNode(id);
    if (!n) return absl::NotFoundError(absl::StrCat("server '", id, "' is not in the topology"));
    if (!topology.IsServer(*n)) {
      return absl::InvalidArgumentError(absl::StrCat("'", id, "' is a switch, not a server"));
    }
    if (seen.insert(*n).second) ring.push_back(*n);
  }
  std::vector<RingHop> hops;
  if (ring.size() < 2) return hops;
  hops.reserve(ring.size());
  for (size_t i = 0; i < ring.size(); ++i) {
    const NodeIndex src = ring[i];
    const NodeIndex dst = ring[(i + 1) % ring.size()];
    absl::StatusOr<std::vector<LinkShare>> links = HopLinkShares(router, job, src, dst);
    if (!links.ok()) return links.status();
    hops.push_back(RingHop{src, dst, *std::move(links)});
  }
  return hops;
}

absl::StatusOr<std::shared_ptr<const Router::RingShares>> JobRing(const Router& router, std::string_view job,
                                                                  const std::vector<std::string>& servers) {
  // The key: the job (kFlowHash hashes it into each hop's flow key) and the
  // servers, each length-prefixed so no two inputs share a key.
  std::string key = absl::StrCat(job.size(), ":", AsAbsl(job));
  for (const std::string& s : servers) absl::StrAppend(&key, "|", s.size(), ":", s);
  if (std::shared_ptr<const Router::RingShares> known = router.FindRing(key)) return known;
  absl::StatusOr<std::vector<RingHop>> hops = RingHops(router, job, servers);
  if (!hops.ok()) return hops.status();
  absl::flat_hash_map<LinkIndex, double> summed;
  for (const RingHop& hop : *hops) {
    for (const LinkShare& ls : hop.links) summed[ls.link] += ls.share;
  }
  std::map<std::string, LinkIndex> index_of;
  for (const auto& [link, share] : summed) index_of.emplace(router.topology().link(link).id, link);
  auto out = std::make_shared<Router::RingShares>();
  out->by_index.reserve(index_of.size());
  for (const auto& [id, link] : index_of) {
    const double share = summed.at(link);
    out->by_id.emplace_hint(out->by_id.end(), id, share);
    out->by_index.emplace_back(link, share);
  }
  router.KeepRing(key, out);
  return out;
}

absl::StatusOr<LinkShareMap> JobLinkShares(const Router& router, std::string_view job,
                                           const std::vector<std::string>& servers) {
  absl::StatusOr<std::shared_ptr<const Router::RingShares>> ring = JobRing(router, job, servers);
  if (!ring.ok()) return ring.status();
  return (*ring)->by_id;
}

absl::StatusOr<PlacementLinkShares> PlacementShares(const Router& router,
                                                    const Placement& placement) {
  PlacementLinkShares out;
  for (const auto& [job, servers] : placement) {
    absl::StatusOr<LinkShareMap> shares = JobLinkShares(router, job, servers);
    if (!shares.ok()) {
      return absl::Status(shares.status().code(),
                          absl::StrCat("job '", job, "': ", shares.status().message()));
    }
    out.emplace(job, *std::move(shares));
  }
  return out;
}

LinkLoads ToLinkLoads(const PlacementLinkShares& shares) {
  LinkLoads out;
  for (const auto& [job, links] : shares) {
    for (const auto& [link, share] : links) out[link].push_back(JobShare{job, share});
  }
  return out;
}

}  // namespace phasor::topology
