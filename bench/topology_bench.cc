// Topology benchmarks (issue 3). A 10,000-GPU fabric (1,250 servers x 8 GPUs)
// as leaf-spine (50 leaves of 25 servers, 8 spines, non-blocking) and as a
// k=18 fat-tree (1,250 of its 1,458 server ports used); 500 jobs whose GPU
// counts are drawn (seeded) from the Philly trace's job-size distribution
// (data/traces/philly_num_gpus.csv), placed on servers taken in a random
// order (so multi-server jobs cross the fabric), then mapped to link loads
// (ring all-reduce shares per job, inverted to link -> jobs).
//
// Target: mapping the 500 jobs to link loads in under 1 s, including the
// routing tables a fresh router computes (the ".../cold" runs).
//
//   BM_Build/{leaf_spine,fat_tree}           generating the fabric
//   BM_Loads/<fabric>/<jobs>/cold            new Router + 500 jobs -> LinkLoads
//   BM_Loads/<fabric>/<jobs>/warm            the same with the router's tables cached
// <jobs>: "all" draws from every job in the trace (93% use one GPU and load
// no link); "multi" draws only from jobs of 2 or more GPUs (the harder case).
//
// Run: build/bench/topology_bench (from the repository root, for the data file).
#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "topology/generators.h"
#include "topology/router.h"
#include "topology/traffic.h"

namespace phasor::topology {
namespace {

constexpr uint32_t kServers = 1250;
constexpr uint32_t kGpusPerServer = 8;
constexpr int kJobs = 500;
constexpr uint64_t kSeed = 20171001;

Topology LeafSpine10k() {
  LeafSpineOptions o;
  o.leaves = 50;
  o.spines = 8;
  o.servers_per_leaf = 25;
  o.gpus_per_server = kGpusPerServer;
  o.nic_gbps = 200;
  return *MakeLeafSpine(o);
}

Topology FatTree10k() {
  FatTreeOptions o;
  o.k = 18;
  o.servers = kServers;
  o.gpus_per_server = kGpusPerServer;
  o.nic_gbps = 200;
  return *MakeFatTree(o);
}

// (num_gpus, jobs) rows of the trace's job-size histogram.
std::vector<std::pair<uint32_t, uint64_t>> JobSizes() {
  std::vector<std::pair<uint32_t, uint64_t>> rows;
  std::ifstream in("data/traces/philly_num_gpus.csv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    uint32_t gpus = 0;
    uint64_t jobs = 0;
    char comma = 0;
    if (fields >> gpus >> comma >> jobs) rows.emplace_back(gpus, jobs);
  }
  return rows;
}

// 500 placements: sizes drawn from the histogram (only jobs of >= 2 GPUs when
// `multi`); GPUs allocated from servers in a random order, one list entry per
// GPU (as Pollux-style allocations give them). When the fabric is full,
// allocation starts over on the same order (the bench measures routing, not a
// scheduler).
Placement MakePlacement(const Topology& t, bool multi) {
  static const std::vector<std::pair<uint32_t, uint64_t>> rows = JobSizes();
  std::vector<uint32_t> sizes;
  std::vector<double> weights;
  for (const auto& [gpus, jobs] : rows) {
    if (multi && gpus < 2) continue;
    sizes.push_back(gpus);
    weights.push_back(static_cast<double>(jobs));
  }
  if (sizes.empty()) return {};  // data file missing: the benchmark reports an error
  std::mt19937_64 rng(kSeed);
  std::discrete_distribution<size_t> draw(weights.begin(), weights.end());
  std::vector<NodeIndex> order = t.Servers();
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<uint32_t> used(order.size(), 0);
  size_t cursor = 0;
  Placement placement;
  for (int j = 0; j < kJobs; ++j) {
    std::vector<std::string>& servers = placement["job" + std::to_string(j)];
    for (uint32_t need = sizes[draw(rng)]; need > 0; --need) {
      if (used[cursor] == kGpusPerServer) {
        cursor = (cursor + 1) % order.size();
        if (cursor == 0) std::fill(used.begin(), used.end(), 0);
      }
      ++used[cursor];
      servers.push_back(t.node(order[cursor]).id);
    }
  }
  return placement;
}

void BM_Build(benchmark::State& state) {
  const bool fat_tree = state.range(0) == 1;
  for (auto _ : state) {
    Topology t = fat_tree ? FatTree10k() : LeafSpine10k();
    benchmark::DoNotOptimize(t.links().size());
  }
  const Topology t = fat_tree ? FatTree10k() : LeafSpine10k();
  state.counters["servers"] = static_cast<double>(t.num_servers());
  state.counters["gpus"] = static_cast<double>(t.num_gpus());
  state.counters["links"] = static_cast<double>(t.links().size());
}

void BM_Loads(benchmark::State& state) {
  const bool fat_tree = state.range(0) == 1;
  const bool multi = state.range(1) == 1;
  const bool warm = state.range(2) == 1;
  const Topology t = fat_tree ? FatTree10k() : LeafSpine10k();
  const Placement placement = MakePlacement(t, multi);
  if (placement.empty()) {
    state.SkipWithError("data/traces/philly_num_gpus.csv not found (run from the repository root)");
    return;
  }
  uint64_t gpus = 0;
  for (const auto& [job, servers] : placement) gpus += servers.size();

  Router warm_router(t);
  size_t loaded_links = 0;
  for (auto _ : state) {
    if (warm) {
      absl::StatusOr<PlacementLinkShares> shares = PlacementShares(warm_router, placement);
      LinkLoads loads = ToLinkLoads(*shares);
      loaded_links = loads.size();
      benchmark::DoNotOptimize(loads);
    } else {
      Router router(t);
      absl::StatusOr<PlacementLinkShares> shares = PlacementShares(router, placement);
      LinkLoads loads = ToLinkLoads(*shares);
      loaded_links = loads.size();
      benchmark::DoNotOptimize(loads);
    }
  }
  state.counters["job_gpus"] = static_cast<double>(gpus);
  state.counters["loaded_links"] = static_cast<double>(loaded_links);
}

BENCHMARK(BM_Build)->ArgName("fat_tree")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Loads)
    ->ArgNames({"fat_tree", "multi", "warm"})
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace phasor::topology

BENCHMARK_MAIN();
