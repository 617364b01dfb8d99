#include "sim/topology_scenario.h"

#include "absl/strings/str_cat.h"
#include "topology/topology_file.h"
#include "topology/topology_yaml.h"
#include "topology/traffic.h"

namespace phasor::sim {

absl::Status ResolveServers(const topology::Router& router, Scenario& scenario) {
  const topology::Topology& topo = router.topology();
  scenario.links.clear();
  for (const topology::Link& link : topo.links()) {
    scenario.links.push_back({link.id, link.capacity_gbps});
  }
  scenario.report_idle_links = false;
  for (size_t i = 0; i < scenario.jobs.size(); ++i) {
    ScenarioJob& job = scenario.jobs[i];
    const std::string field = absl::StrCat("jobs[", i, "]");
    if (job.servers.empty()) {
      if (!job.links.empty()) {
        return absl::InvalidArgumentError(
            field + ".links: with --topology a job gives servers, not links");
      }
      continue;
    }
    if (!job.links.empty()) {
      return absl::InvalidArgumentError(field + ": give servers or links, not both");
    }
    absl::StatusOr<topology::LinkShareMap> shares =
        topology::JobLinkShares(router, job.id, job.servers);
    if (!shares.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".servers: ", shares.status().message()));
    }
    job.links = std::map<std::string, double>(shares->begin(), shares->end());
  }
  return absl::OkStatus();
}

absl::Status ResolveServersFromFile(const std::string& path, Scenario& scenario) {
  absl::StatusOr<topology::Topology> topo = topology::LoadTopologyFile(path);
  if (!topo.ok()) return topo.status();
  topology::Router router(*topo);
  return ResolveServers(router, scenario);
}

}  // namespace phasor::sim
