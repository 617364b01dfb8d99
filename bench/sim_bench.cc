// Simulator benchmarks. The target: one hour of simulated time with
// 100 concurrent jobs on a 128-server fabric in under 60 s.
//
// BM_FluidHourOf100JobsOn128Servers: a leaf-spine of 128 servers (16 leaves
// of 8, 4 spines, 2:1 oversubscribed, 4 GPUs and a 50 Gbit/s NIC per server);
// 100 jobs of the measured models (data/models), each on 2-4 servers drawn
// at random (seeded) with one GPU per server, routed as rings (topology
// module), random start phases; the fluid model runs them for one hour.
// Counters: events, iterations simulated, simulated seconds per wall second.
#include <random>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "models/model_catalog.h"
#include "sim/fluid_network.h"
#include "topology/generators.h"
#include "topology/router.h"
#include "topology/traffic.h"

namespace phasor::sim {
namespace {

using models::kMeasuredNicGbps;
using models::ModelCatalog;
using models::ModelTiming;

void BM_FluidHourOf100JobsOn128Servers(benchmark::State& state) {
  absl::StatusOr<ModelCatalog> models = ModelCatalog::Load("data/models");
  if (!models.ok()) {
    state.SkipWithError("data/models not found: run from the repository root");
    return;
  }
  topology::LeafSpineOptions ls;
  ls.leaves = 16;
  ls.spines = 4;
  ls.servers_per_leaf = 8;
  ls.gpus_per_server = 4;
  ls.nic_gbps = kMeasuredNicGbps;
  ls.oversubscription = 2;
  absl::StatusOr<topology::Topology> topo = topology::MakeLeafSpine(ls);
  if (!topo.ok()) {
    state.SkipWithError("fabric");
    return;
  }
  topology::Router router(*topo);
  std::vector<SimLink> links;
  for (const topology::Link& l : topo->links()) links.push_back({l.id, l.capacity_gbps});
  std::vector<std::string> servers;
  for (topology::NodeIndex s : topo->Servers()) servers.push_back(topo->node(s).id);

  // The jobs (the same every run).
  std::mt19937_64 rng(42);
  std::vector<SimJob> jobs;
  std::vector<uint32_t> free(servers.size(), 4);
  const std::vector<std::string> names = models->MeasuredModels();
  for (int j = 0; j < 100; ++j) {
    const size_t n = 2 + rng() % 3;
    std::vector<std::string> chosen;
    while (chosen.size() < n) {
      const size_t s = rng() % servers.size();
      if (free[s] == 0 || std::find(chosen.begin(), chosen.end(), servers[s]) != chosen.end()) {
        continue;
      }
      --free[s];
      chosen.push_back(servers[s]);
    }
    const std::string model = names[rng() % names.size()];
    absl::StatusOr<ModelTiming> t = models->Lookup(model, std::string(n, '1'));
    absl::StatusOr<topology::LinkShareMap> shares =
        topology::JobLinkShares(router, absl::StrCat("j", j), chosen);
    if (!t.ok() || !shares.ok()) {
      state.SkipWithError("job setup");
      return;
    }
    SimJob job;
    job.id = absl::StrCat("j", j);
    job.compute_us = t->compute_us;
    job.comm_bytes = t->comm_bytes;
    job.nic_gbps = kMeasuredNicGbps;
    job.links = std::map<std::string, double>(shares->begin(), shares->end());
    job.iterations = 1'000'000'000;  // runs past the hour
    job.start_us = static_cast<double>(rng() >> 11) * 0x1.0p-53 * (t->compute_us + t->sync_us);
    jobs.push_back(std::move(job));
  }

  constexpr double kHourUs = 3600e6;
  uint64_t events = 0, iterations = 0;
  for (auto _ : state) {
    FluidNetworkOptions options;
    options.keep_iteration_times = false;
    FluidNetwork net(links, options);
    for (const SimJob& job : jobs) {
      if (!net.AddJob(job).ok()) {
        state.SkipWithError("AddJob");
        return;
      }
    }
    net.AdvanceUntil(kHourUs);
    events = net.events();
    iterations = 0;
    for (const JobStats& s : net.job_stats()) iterations += s.iterations_done;
    benchmark::DoNotOptimize(iterations);
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["iterations"] = static_cast<double>(iterations);
  state.counters["sim_s_per_wall_s"] =
      benchmark::Counter(3600.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FluidHourOf100JobsOn128Servers)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace phasor::sim

BENCHMARK_MAIN();
