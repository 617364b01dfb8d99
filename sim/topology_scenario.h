// Fixed-placement scenarios in server form (`phasor simulate --topology`):
// each job's "servers" (rank order) become link shares through the topology
// module's router and ring all-reduce traffic model (SPEC section 6), and the
// scenario's links become the topology's directed links.
//
// Pure functions; thread-safe.
#ifndef PHASOR_SIM_TOPOLOGY_SCENARIO_H_
#define PHASOR_SIM_TOPOLOGY_SCENARIO_H_

#include <string>

#include "absl/status/status.h"
#include "sim/scenario.h"
#include "topology/router.h"

namespace phasor::sim {

// Replaces scenario.links by the router's topology links and sets the links
// of every job that names servers (a job with servers must not also give
// links). Errors: InvalidArgument "jobs[i].servers: ..." naming the job and
// the topology module's reason (unknown server, no route).
absl::Status ResolveServers(const topology::Router& router, Scenario& scenario);

// The same with a topology YAML file, routed with the default router options
// (even ECMP split). NotFound / InvalidArgument from the YAML loader.
absl::Status ResolveServersFromFile(const std::string& path, Scenario& scenario);

}  // namespace phasor::sim

#endif  // PHASOR_SIM_TOPOLOGY_SCENARIO_H_
