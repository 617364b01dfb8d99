// Placer benchmarks (issue: the placer core). Targets on the 2-core machine:
//   BM_SolveLink2JobsExact400Bins  under 1 ms (the exact 2-job solve, 400 bins per period)
//   BM_Rank16x64x3Arrival          under 50 ms on one core (16 candidates x 64 contended
//                                  links x 3 jobs per link; BM_Rank16x64x3Shuffled is the
//                                  stress variant; ...DepthFirst the same without the
//                                  pairwise bounds, for the ratio)
// Run: build/bench/placer_bench (see bench/run.sh).
#include <numeric>
#include <random>

#include "benchmark/benchmark.h"
#include "placer/link_score.h"
#include "placer/ranker.h"
#include "placer/shift_solver.h"

namespace phasor::placer {
namespace {

constexpr double kCapacity = 50.0;

// A training-like profile: compute (idle), then an all-reduce burst of
// `up_fraction` of the period at `gbps`, with 1 ms bins.
TrafficProfile Burst(uint32_t period_ms, double up_fraction, double gbps, std::mt19937_64& rng) {
  TrafficProfile p;
  p.period_us = period_ms * 1000;
  p.bin_us = 1000;
  p.gbps.assign(period_ms, 0.0);
  const uint32_t up = std::max<uint32_t>(1, static_cast<uint32_t>(period_ms * up_fraction));
  std::uniform_real_distribution<double> jitter(0.9, 1.0);
  for (uint32_t k = period_ms - up; k < period_ms; ++k) p.gbps[k] = gbps * jitter(rng);
  return p;
}

std::vector<TrafficProfile> RandomJobs(size_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<uint32_t> period(100, 500);
  std::uniform_real_distribution<double> up(0.2, 0.5), gbps(30, 50);
  std::vector<TrafficProfile> jobs;
  for (size_t j = 0; j < count; ++j) jobs.push_back(Burst(period(rng), up(rng), gbps(rng), rng));
  return jobs;
}

void SolveOnce(benchmark::State& state, const std::vector<TrafficProfile>& jobs) {
  std::vector<LinkDemand> demands;
  for (const TrafficProfile& p : jobs) demands.push_back({&p, 1.0});
  const UnifiedCircle circle = *BuildUnifiedCircle(demands, CircleOptions{});
  LinkSolution sol;
  for (auto _ : state) {
    sol = SolveLink(circle, kCapacity, {}, ShiftSolverOptions{});
    benchmark::DoNotOptimize(sol);
  }
  state.counters["bins"] = static_cast<double>(circle.bins);
  state.counters["quantum_us"] = circle.quantum_us;
  state.counters["exact"] = sol.exact;
  state.counters["evaluations"] = static_cast<double>(sol.evaluations);
}

// The exact 2-job solve at 400 bins per period (equal periods: 400 x 400 evaluations).
void BM_SolveLink2JobsExact400Bins(benchmark::State& state) {
  std::mt19937_64 rng(1);
  SolveOnce(state, {Burst(400, 0.55, 45, rng), Burst(400, 0.6, 40, rng)});
}
BENCHMARK(BM_SolveLink2JobsExact400Bins)->Unit(benchmark::kMicrosecond);

// N jobs with random periods of 100-500 ms at a 1 ms quantum (the circle
// coarsens when the periods' lcm exceeds 65536 bins). Arg: jobs; the instance
// index varies the seed.
void BM_SolveLinkRandomPeriods(benchmark::State& state) {
  std::mt19937_64 rng(100 + state.range(1));
  SolveOnce(state, RandomJobs(state.range(0), rng));
}
BENCHMARK(BM_SolveLinkRandomPeriods)
    ->ArgNames({"jobs", "instance"})
    ->ArgsProduct({{2, 3, 4, 8}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond);

// N jobs sharing one period (same model, same batch): the circle stays at
// 1 ms bins and the search space is largest.
void BM_SolveLinkEqualPeriods(benchmark::State& state) {
  std::mt19937_64 rng(7);
  std::vector<TrafficProfile> jobs;
  std::uniform_real_distribution<double> up(0.1, 0.3);
  for (int j = 0; j < state.range(0); ++j) jobs.push_back(Burst(state.range(1), up(rng), 40, rng));
  SolveOnce(state, jobs);
}
BENCHMARK(BM_SolveLinkEqualPeriods)
    ->ArgNames({"jobs", "period_ms"})
    ->ArgsProduct({{2, 3, 4, 8}, {200, 400}})
    ->Unit(benchmark::kMillisecond);

// 16 candidates x 64 contended links x 3 jobs per link, two ways.
//
// Arrival (the plugin's everyday request): 128 running jobs hold 64 links,
// two per link; the host scheduler proposes 16 placements for two arriving
// jobs, each crossing 32 of the links, so every link carries 3 jobs. Link
// contents repeat across candidates (the running jobs do not move), which the
// ranker's per-request memo exploits.
//
// Shuffled (a stress test): a pool of 64 jobs; every candidate puts each job
// on 3 links with different partners, so each candidate's affinity graph is
// one tangled component with 65 independent loops and no link content repeats.
//
// Periods are drawn uniformly from 100-500 ms in both, the hard case for the
// unified circle (large lcm, coarsened quantum); the Catalogue variant of
// Arrival draws them from measured model iteration times instead.
// Iteration times (ms) measured for imagenet, yolov3 and bert, deepspeech2
// at two batch sizes each (data/models, from the Pollux traces): a cluster
// runs a handful of models, so periods repeat.
constexpr uint32_t kCatalogueMs[] = {147, 208, 267, 451, 455, 558};

std::vector<TrafficProfile> CatalogueJobs(size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> up(0.2, 0.5), gbps(30, 50);
  std::vector<TrafficProfile> jobs;
  for (size_t j = 0; j < count; ++j) {
    jobs.push_back(Burst(kCatalogueMs[rng() % std::size(kCatalogueMs)], up(rng), gbps(rng), rng));
  }
  return jobs;
}

RankRequest ArrivalInstance(uint64_t seed, bool catalogue) {
  std::mt19937_64 rng(seed);
  RankRequest r;
  const std::vector<TrafficProfile> profiles = catalogue ? CatalogueJobs(130, rng) : RandomJobs(130, rng);
  for (size_t j = 0; j < profiles.size(); ++j) {
    r.jobs.push_back({.id = "job" + std::to_string(j), .profile = profiles[j], .pinned_shift_us = {}});
  }
  for (int l = 0; l < 64; ++l) {
    r.links.push_back({.id = "link" + std::to_string(l), .capacity_gbps = kCapacity});
  }
  for (int c = 0; c < 16; ++c) {
    Candidate cand{.id = "cand" + std::to_string(c), .links = {}, .servers = {}};
    for (int l = 0; l < 64; ++l) {
      const std::string link = "link" + std::to_string(l);
      cand.links[r.jobs[2 * l].id][link] = 1.0;
      cand.links[r.jobs[2 * l + 1].id][link] = 1.0;
    }
    // The arriving jobs 128 and 129 split the links between them: candidate c
    // gives job 128 the links whose bit pattern (rotated by c) says so.
    std::vector<int> order(64);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int i = 0; i < 64; ++i) {
      const std::string link = "link" + std::to_string(order[i]);
      cand.links[r.jobs[i < 32 ? 128 : 129].id][link] = 1.0;
    }
    r.candidates.push_back(std::move(cand));
  }
  return r;
}

RankRequest ShuffledInstance(uint64_t seed) {
  std::mt19937_64 rng(seed);
  RankRequest r;
  const std::vector<TrafficProfile> profiles = RandomJobs(64, rng);
  for (size_t j = 0; j < profiles.size(); ++j) {
    r.jobs.push_back({.id = "job" + std::to_string(j), .profile = profiles[j], .pinned_shift_us = {}});
  }
  for (int l = 0; l < 64; ++l) {
    r.links.push_back({.id = "link" + std::to_string(l), .capacity_gbps = kCapacity});
  }
  for (int c = 0; c < 16; ++c) {
    Candidate cand{.id = "cand" + std::to_string(c), .links = {}, .servers = {}};
    std::vector<size_t> slots;  // 192 slots: every job three times
    for (size_t j = 0; j < 64; ++j) slots.insert(slots.end(), 3, j);
    // Shuffle until no link gets the same job twice.
    for (bool clash = true; clash;) {
      std::shuffle(slots.begin(), slots.end(), rng);
      clash = false;
      for (int l = 0; l < 64 && !clash; ++l) {
        clash = slots[3 * l] == slots[3 * l + 1] || slots[3 * l] == slots[3 * l + 2] ||
                slots[3 * l + 1] == slots[3 * l + 2];
      }
    }
    for (int l = 0; l < 64; ++l) {
      for (int k = 0; k < 3; ++k) {
        cand.links[r.jobs[slots[3 * l + k]].id]["link" + std::to_string(l)] = 1.0;
      }
    }
    r.candidates.push_back(std::move(cand));
  }
  return r;
}

void RankOnce(benchmark::State& state, const RankRequest& r) {
  size_t cycles = 0, links = 0, exact = 0;
  for (auto _ : state) {
    const Ranking ranking = Rank(r);
    cycles = links = exact = 0;
    for (const RankedCandidate& c : ranking.ranked) {
      cycles += c.cycle;
      exact += c.exact;
      links += c.links.size();
    }
    benchmark::DoNotOptimize(ranking);
  }
  state.counters["candidates"] = static_cast<double>(r.candidates.size());
  state.counters["contended_links"] = static_cast<double>(links);
  state.counters["with_loops"] = static_cast<double>(cycles);
  state.counters["exact"] = static_cast<double>(exact);
}

void BM_Rank16x64x3Arrival(benchmark::State& state) { RankOnce(state, ArrivalInstance(42, false)); }
BENCHMARK(BM_Rank16x64x3Arrival)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

// The same with periods from the model catalogue instead of uniform ones.
void BM_Rank16x64x3ArrivalCatalogue(benchmark::State& state) {
  RankOnce(state, ArrivalInstance(42, true));
}
BENCHMARK(BM_Rank16x64x3ArrivalCatalogue)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

// Arrival again with the plain depth-first exact search (no pairwise bounds):
// the ratio to BM_Rank16x64x3Arrival is what the best-first search buys.
void BM_Rank16x64x3ArrivalDepthFirst(benchmark::State& state) {
  RankRequest r = ArrivalInstance(42, false);
  r.options.solver.pair_bounds = false;
  RankOnce(state, r);
}
BENCHMARK(BM_Rank16x64x3ArrivalDepthFirst)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

void BM_Rank16x64x3Shuffled(benchmark::State& state) { RankOnce(state, ShuffledInstance(42)); }
BENCHMARK(BM_Rank16x64x3Shuffled)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

}  // namespace
}  // namespace phasor::placer

BENCHMARK_MAIN();
