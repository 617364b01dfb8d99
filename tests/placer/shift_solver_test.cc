#include "placer/shift_solver.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

#include "gtest/gtest.h"
#include "placer/link_score.h"

namespace phasor::placer {
namespace shift_solver_test {
namespace {

constexpr uint32_t kQ = 1000;

TrafficProfile SquareProfile(uint32_t bins, uint32_t up_bins, double gbps, uint32_t start = 0) {
  TrafficProfile p;
  p.period_us = bins * kQ;
  p.square = SquareWave{.up_us = up_bins * kQ, .up_gbps = gbps, .start_us = start * kQ};
  return p;
}

TrafficProfile ArrayProfile(std::vector<double> gbps) {
  TrafficProfile p;
  p.period_us = static_cast<uint32_t>(gbps.size()) * kQ;
  p.bin_us = kQ;
  p.gbps = std::move(gbps);
  return p;
}

UnifiedCircle Circle(const std::vector<TrafficProfile>& profiles) {
  std::vector<LinkDemand> demands;
  for (const TrafficProfile& p : profiles) demands.push_back({&p, 1.0});
  auto circle = BuildUnifiedCircle(demands, CircleOptions{.quantum_us = kQ, .max_bins = 1 << 16});
  EXPECT_TRUE(circle.ok()) << circle.status();
  return *std::move(circle);
}

// The score by the definition of SPEC 3.4, written independently of the
// library: L(k) = sum_j d_j[(k - s_j) mod B_j] over k < N = lcm(B_j).
double ScoreByDefinition(const std::vector<std::vector<double>>& d, double cap,
                         const std::vector<uint32_t>& s) {
  uint64_t n = 1;
  for (const auto& dj : d) n = std::lcm(n, dj.size());
  double excess = 0;
  for (uint64_t k = 0; k < n; ++k) {
    double load = 0;
    for (size_t j = 0; j < d.size(); ++j) {
      const int64_t b = static_cast<int64_t>(d[j].size());
      load += d[j][((static_cast<int64_t>(k) - s[j]) % b + b) % b];
    }
    excess += std::max(0.0, load - cap);
  }
  return 1.0 - excess / (static_cast<double>(n) * cap);
}

// Brute force over every shift of every job but the first (a common rotation
// does not change the score).
double BruteForceBest(const std::vector<std::vector<double>>& d, double cap) {
  std::vector<uint32_t> s(d.size(), 0);
  double best = -1e300;
  std::function<void(size_t)> rec = [&](size_t j) {
    if (j == d.size()) {
      best = std::max(best, ScoreByDefinition(d, cap, s));
      return;
    }
    for (uint32_t v = 0; v < d[j].size(); ++v) {
      s[j] = v;
      rec(j + 1);
    }
  };
  rec(1);
  return best;
}

std::vector<std::vector<double>> Patterns(const UnifiedCircle& c) {
  std::vector<std::vector<double>> d;
  for (const auto& j : c.jobs) d.push_back(j.gbps);
  return d;
}

TEST(SolveLinkTest, OracleEqualPeriodSquareWavesAtCapacity) {
  // Two jobs, equal T, demand C during an Up fraction u: best = 1 - max(0, 2u - 1).
  const double cap = 50;
  for (uint32_t up : {10u, 30u, 50u, 60u, 75u, 90u, 100u}) {
    const TrafficProfile a = SquareProfile(100, up, cap);
    const TrafficProfile b = SquareProfile(100, up, cap, 17);
    const UnifiedCircle circle = Circle({a, b});
    const LinkSolution sol = SolveLink(circle, cap, {}, ShiftSolverOptions{});
    const double u = up / 100.0;
    EXPECT_NEAR(sol.score, 1 - std::max(0.0, 2 * u - 1), 1e-12) << "up fraction " << u;
    EXPECT_TRUE(sol.exact);
    EXPECT_NEAR(LinkScore(circle, cap, sol.shifts), sol.score, 1e-12);
  }
}

TEST(SolveLinkTest, OracleUpPhasesThatFitTogetherScoreOne) {
  const double cap = 40;
  // Equal periods, Up phases of 45 + 55 bins in 100.
  {
    const UnifiedCircle c = Circle({SquareProfile(100, 45, 40), SquareProfile(100, 55, 40)});
    const LinkSolution sol = SolveLink(c, cap, {}, ShiftSolverOptions{});
    EXPECT_DOUBLE_EQ(sol.score, 1.0);
    EXPECT_DOUBLE_EQ(LinkScore(c, cap, sol.shifts), 1.0);
  }
  // Periods 100 and 200: job a's Up (30 bins) twice on the circle, job b's 40 in a 70-bin gap.
  {
    const UnifiedCircle c = Circle({SquareProfile(100, 30, 40), SquareProfile(200, 40, 40)});
    EXPECT_EQ(c.bins, 200u);
    const LinkSolution sol = SolveLink(c, cap, {}, ShiftSolverOptions{});
    EXPECT_DOUBLE_EQ(sol.score, 1.0);
    EXPECT_TRUE(sol.exact);
  }
}

TEST(SolveLinkTest, OracleLoneJob) {
  const TrafficProfile a = ArrayProfile({80, 20, 60, 0, 50});
  const UnifiedCircle c = Circle({a});
  const LinkSolution sol = SolveLink(c, 50, {}, ShiftSolverOptions{});
  // 1 - mean(max(0, d - C)) / C = 1 - ((30 + 10) / 5) / 50
  EXPECT_DOUBLE_EQ(sol.score, 1 - (40.0 / 5) / 50);
  EXPECT_TRUE(sol.exact);
  for (uint32_t s = 0; s < 5; ++s) EXPECT_DOUBLE_EQ(LinkScore(c, 50, {s}), sol.score);
}

TEST(SolveLinkTest, ScoreGoesBelowZeroWhenExcessExceedsCapacity) {
  const UnifiedCircle c = Circle({ArrayProfile({100, 100}), ArrayProfile({100, 100})});
  const LinkSolution sol = SolveLink(c, 50, {}, ShiftSolverOptions{});
  EXPECT_DOUBLE_EQ(sol.score, 1 - 150.0 / 50);  // excess 150 in every bin
}

TEST(SolveLinkTest, FixedShiftsAreKept) {
  const TrafficProfile a = SquareProfile(10, 5, 10);
  const TrafficProfile b = SquareProfile(10, 5, 10);
  const TrafficProfile c = SquareProfile(10, 3, 10);
  const UnifiedCircle circle = Circle({a, b, c});
  // a at 0 and b at 2 are pinned: they overlap on 3 bins whatever c does.
  const LinkSolution sol = SolveLink(circle, 10, {0u, 2u, std::nullopt}, ShiftSolverOptions{});
  EXPECT_EQ(sol.shifts[0], 0u);
  EXPECT_EQ(sol.shifts[1], 2u);
  EXPECT_TRUE(sol.exact);
  // Best c avoids both: a+b busy on [0,7); c's 3 bins fit in [7,10).
  EXPECT_EQ(sol.shifts[2], 7u);
  EXPECT_NEAR(sol.score, 1 - (3 * 10.0) / (10 * 10.0), 1e-12);
}

// Centring (ShiftSolverOptions::centre). Two square waves on one link of 50
// Gbit/s, period 100 bins of 1 ms, both at 40 Gbit/s: a's Up on [0, 30) (held
// at 0), b's 20 ms of Up. b's Up [s, s + 20) avoids a's for s in [30, 80]:
// every s there scores 1. The centre, s = 55, leaves 25 ms between b's Up end
// (75) and a's next start (100) and 25 ms after a's end (30): the largest
// smallest gap. The exact search, the heuristic and the multi-resolution path
// all answer 55.
TEST(SolveLinkTest, AmongOptimalShiftsTheCentreOfTheFeasibleIntervalIsChosen) {
  const TrafficProfile a = SquareProfile(100, 30, 40), b = SquareProfile(100, 20, 40);
  const UnifiedCircle circle = Circle({a, b});
  const LinkSolution exact = SolveLink(circle, 50, {}, ShiftSolverOptions{});
  EXPECT_TRUE(exact.exact);
  EXPECT_DOUBLE_EQ(exact.score, 1.0);
  EXPECT_EQ(exact.shifts, (std::vector<uint32_t>{0, 55}));
  ShiftSolverOptions heuristic;
  heuristic.exact_max_evaluations = 0;
  EXPECT_EQ(SolveLink(circle, 50, {}, heuristic).shifts, (std::vector<uint32_t>{0, 55}));
  auto solved = SolveLinkDemands({{&a, 1.0}, {&b, 1.0}}, 50, {}, {}, ShiftSolverOptions{});
  ASSERT_TRUE(solved.ok());
  EXPECT_EQ(solved->solution.shifts, (std::vector<uint32_t>{0, 55}));
  // Without centring the search keeps the first shift that scores 1: an edge
  // of the interval, no slack on one side.
  ShiftSolverOptions first;
  first.centre = false;
  const LinkSolution edge = SolveLink(circle, 50, {}, first);
  EXPECT_DOUBLE_EQ(edge.score, 1.0);
  EXPECT_TRUE(edge.shifts[1] == 30 || edge.shifts[1] == 80) << edge.shifts[1];
}

// A pinned job moves the interval with it: a pinned at 10 ms has Up on [10,
// 40); b fits for s in [40, 90]; centre 65. An interval that wraps: a pinned
// at 70 (Up [70, 100)), b in [100, 150] = [0, 50] mod 100; centre 25.
TEST(SolveLinkTest, CentringKeepsPinnedJobsAndWrapsAroundThePeriod) {
  const UnifiedCircle circle = Circle({SquareProfile(100, 30, 40), SquareProfile(100, 20, 40)});
  EXPECT_EQ(SolveLink(circle, 50, {10u, std::nullopt}, ShiftSolverOptions{}).shifts,
            (std::vector<uint32_t>{10, 65}));
  EXPECT_EQ(SolveLink(circle, 50, {70u, std::nullopt}, ShiftSolverOptions{}).shifts,
            (std::vector<uint32_t>{70, 25}));
}

TEST(SolveLinkTest, ExactCostUsesTheInvariances) {
  ShiftSolverOptions depth_first;
  depth_first.pair_bounds = false;
  const UnifiedCircle two = Circle({ArrayProfile(std::vector<double>(4, 1)),
                                    ArrayProfile(std::vector<double>(6, 1))});
  // N = 12, job b ranges over gcd(4, 6) = 2 shifts: 24 = B_a * B_b evaluations
  // depth first. Best first: the pair table (4 x 6 sending bins) and 2
  // configurations at 8 each: 40. The cheaper plan counts.
  EXPECT_EQ(ExactSearchCost(two, {}, depth_first), 24u);
  EXPECT_EQ(ExactSearchCost(two, {}), 24u);
  const UnifiedCircle three = Circle({ArrayProfile(std::vector<double>(4, 1)),
                                      ArrayProfile(std::vector<double>(6, 1)),
                                      ArrayProfile(std::vector<double>(9, 1))});
  // N = 36. Longest first: job 9 is held at 0, job 6 ranges over gcd(9, 6) = 3
  // shifts, job 4 over gcd(18, 4) = 2: 3 x 2 = 6 = (4 * 6 * 9) / 36
  // configurations. Depth first: 3 x (36 to place job 6 + 2 x 36 for job 4)
  // = 324. Best first: pair tables 4*6 + 4*9 + 6*9 = 114, then 6
  // configurations at 8 each = 48: 162.
  EXPECT_EQ(ExactSearchCost(three, {}, depth_first), 324u);
  EXPECT_EQ(ExactSearchCost(three, {}), 162u);
}

// A random profile: an array of random demand with idle stretches, or a square wave.
TrafficProfile RandomProfile(std::mt19937_64& rng, uint32_t bins, double peak) {
  std::uniform_real_distribution<double> unit(0, 1);
  if (unit(rng) < 0.5) {
    const uint32_t up = std::uniform_int_distribution<uint32_t>(1, bins)(rng);
    const uint32_t start = std::uniform_int_distribution<uint32_t>(0, bins - 1)(rng);
    return SquareProfile(bins, up, peak * (0.3 + 0.7 * unit(rng)), start);
  }
  std::vector<double> gbps(bins);
  const double idle = unit(rng);
  for (double& g : gbps) g = unit(rng) < idle ? 0.0 : peak * unit(rng);
  return ArrayProfile(std::move(gbps));
}

uint32_t RandomBins(std::mt19937_64& rng, size_t jobs) {
  // Two jobs: any period up to 60 bins. Three: periods from a set with small
  // common multiples, so that the brute force stays affordable.
  static const uint32_t kFriendly[] = {2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 24, 30, 40, 60};
  if (jobs == 2) return std::uniform_int_distribution<uint32_t>(1, 60)(rng);
  return kFriendly[std::uniform_int_distribution<size_t>(0, std::size(kFriendly) - 1)(rng)];
}

// The exact search against brute force on 1,200 random instances of 2 and 3
// jobs, in the given search order.
void ExpectBruteForceOptimum(const ShiftSolverOptions& options) {
  std::mt19937_64 rng(20241129);
  int exact_count = 0;
  for (int instance = 0; instance < 1200; ++instance) {
    const size_t jobs = instance % 3 == 0 ? 3 : 2;
    std::vector<TrafficProfile> profiles;
    for (size_t j = 0; j < jobs; ++j) profiles.push_back(RandomProfile(rng, RandomBins(rng, jobs), 40));
    const double cap = std::uniform_real_distribution<double>(15, 60)(rng);
    const UnifiedCircle circle = Circle(profiles);
    const LinkSolution sol = SolveLink(circle, cap, {}, options);
    const double brute = BruteForceBest(Patterns(circle), cap);
    ASSERT_NEAR(sol.score, brute, 1e-9) << "instance " << instance;
    ASSERT_NEAR(ScoreByDefinition(Patterns(circle), cap, sol.shifts), sol.score, 1e-9)
        << "instance " << instance << ": the shifts do not achieve the score";
    ASSERT_EQ(sol.shifts.size(), jobs);
    for (size_t j = 0; j < jobs; ++j) ASSERT_LT(sol.shifts[j], circle.JobBins(j));
    exact_count += sol.exact;
  }
  EXPECT_EQ(exact_count, 1200);
}

TEST(SolveLinkTest, MatchesBruteForceOnRandomSmallInstances) {
  ExpectBruteForceOptimum(ShiftSolverOptions{});
}

TEST(SolveLinkTest, DepthFirstMatchesBruteForceOnRandomSmallInstances) {
  ShiftSolverOptions depth_first;
  depth_first.pair_bounds = false;
  ExpectBruteForceOptimum(depth_first);
}

TEST(SolveLinkTest, MatchesBruteForceWithFourAndFiveJobs) {
  std::mt19937_64 rng(4455);
  static const uint32_t kSmall[] = {2, 3, 4, 6, 12};
  for (int instance = 0; instance < 120; ++instance) {
    const size_t jobs = instance % 2 == 0 ? 4 : 5;
    std::vector<TrafficProfile> profiles;
    for (size_t j = 0; j < jobs; ++j) {
      profiles.push_back(RandomProfile(rng, kSmall[rng() % std::size(kSmall)], 30));
    }
    const double cap = std::uniform_real_distribution<double>(30, 80)(rng);
    const UnifiedCircle circle = Circle(profiles);
    const double brute = BruteForceBest(Patterns(circle), cap);
    for (bool pair_bounds : {true, false}) {
      ShiftSolverOptions options;
      options.pair_bounds = pair_bounds;
      const LinkSolution sol = SolveLink(circle, cap, {}, options);
      ASSERT_TRUE(sol.exact) << "instance " << instance;
      ASSERT_NEAR(sol.score, brute, 1e-9) << "instance " << instance << " pair_bounds "
                                          << pair_bounds;
      ASSERT_NEAR(ScoreByDefinition(Patterns(circle), cap, sol.shifts), sol.score, 1e-9);
    }
  }
}

// Brute force over the free jobs only, the pinned ones at their shifts.
double BruteForceBestPinned(const std::vector<std::vector<double>>& d, double cap,
                            const std::vector<std::optional<uint32_t>>& fixed) {
  std::vector<uint32_t> s(d.size(), 0);
  double best = -1e300;
  std::function<void(size_t)> rec = [&](size_t j) {
    if (j == d.size()) {
      best = std::max(best, ScoreByDefinition(d, cap, s));
      return;
    }
    if (fixed[j]) {
      s[j] = *fixed[j];
      rec(j + 1);
      return;
    }
    for (uint32_t v = 0; v < d[j].size(); ++v) {
      s[j] = v;
      rec(j + 1);
    }
  };
  rec(0);
  return best;
}

TEST(SolveLinkTest, PinnedJobsMatchBruteForceInBothSearchOrders) {
  std::mt19937_64 rng(9090);
  for (int instance = 0; instance < 300; ++instance) {
    const size_t jobs = 3 + instance % 2;
    std::vector<TrafficProfile> profiles;
    for (size_t j = 0; j < jobs; ++j) profiles.push_back(RandomProfile(rng, RandomBins(rng, 3), 40));
    const double cap = std::uniform_real_distribution<double>(15, 60)(rng);
    const UnifiedCircle circle = Circle(profiles);
    // One or two pinned jobs at random shifts.
    std::vector<std::optional<uint32_t>> fixed(jobs);
    for (size_t pins = 1 + instance % 2, k = 0; k < pins; ++k) {
      const size_t j = rng() % jobs;
      fixed[j] = static_cast<uint32_t>(rng() % circle.JobBins(j));
    }
    const double brute = BruteForceBestPinned(Patterns(circle), cap, fixed);
    for (bool pair_bounds : {true, false}) {
      ShiftSolverOptions options;
      options.pair_bounds = pair_bounds;
      const LinkSolution sol = SolveLink(circle, cap, fixed, options);
      ASSERT_TRUE(sol.exact) << "instance " << instance;
      ASSERT_NEAR(sol.score, brute, 1e-9) << "instance " << instance << " pair_bounds " << pair_bounds;
      for (size_t j = 0; j < jobs; ++j) {
        if (fixed[j]) {
          ASSERT_EQ(sol.shifts[j], *fixed[j]) << "instance " << instance;
        }
      }
      ASSERT_NEAR(ScoreByDefinition(Patterns(circle), cap, sol.shifts), sol.score, 1e-9);
    }
  }
}

// Overloaded links of three jittered training bursts (the jobs' Up phases sum
// past the period), periods of a few hundred bins: the pairwise bound leaves
// most configurations, so the best-first search sums whole rows of them by
// one fold of the last job, and the depth-first one decides the last job's
// shifts by a fold. Against a brute force of the test's own over
// every shift of the third job and the second's shifts below gcd(B_0, B_1)
// (the first at 0; a common rotation by a multiple of B_0 reaches the rest):
// the same optimum, reached by the shifts returned.
TEST(SolveLinkTest, OverloadedBurstsMatchBruteForce) {
  std::mt19937_64 rng(3141);
  std::uniform_real_distribution<double> unit(0, 1);
  auto burst = [&](uint32_t bins) {
    std::vector<double> gbps(bins, 0.0);
    const uint32_t up = static_cast<uint32_t>(bins * (0.4 + 0.15 * unit(rng)));
    const double peak = 40 + 10 * unit(rng);
    for (uint32_t k = bins - up; k < bins; ++k) gbps[k] = peak * (0.9 + 0.1 * unit(rng));
    return ArrayProfile(std::move(gbps));
  };
  const uint32_t kPeriods[][3] = {{216, 198, 64}, {180, 150, 96}, {240, 210, 84}, {144, 120, 90}};
  for (const auto& periods : kPeriods) {
    const std::vector<TrafficProfile> profiles = {burst(periods[0]), burst(periods[1]), burst(periods[2])};
    const UnifiedCircle circle = Circle(profiles);
    const std::vector<std::vector<double>> d = Patterns(circle);
    const double cap = 50;
    double brute = -1e300;
    for (uint32_t s1 = 0; s1 < std::gcd(d[0].size(), d[1].size()); ++s1) {
      for (uint32_t s2 = 0; s2 < d[2].size(); ++s2) brute = std::max(brute, ScoreByDefinition(d, cap, {0, s1, s2}));
    }
    EXPECT_LT(brute, 0.9);  // overloaded: no shifts keep the bursts apart
    // Best first (rows folded), and depth first (the last job's sums
    // decided by one fold per visit).
    for (bool pair_bounds : {true, false}) {
      ShiftSolverOptions options;
      options.pair_bounds = pair_bounds;
      const LinkSolution sol = SolveLink(circle, cap, {}, options);
      ASSERT_TRUE(sol.exact) << periods[0] << " " << periods[1] << " " << periods[2];
      EXPECT_NEAR(sol.score, brute, 1e-9) << periods[0] << " " << periods[1] << " " << periods[2] << " "
                                          << pair_bounds;
      EXPECT_NEAR(ScoreByDefinition(d, cap, sol.shifts), sol.score, 1e-9);
    }
  }
}

TEST(SolveLinkTest, HeuristicNeverBeatsTheOptimumAndReportsItsShiftsHonestly) {
  std::mt19937_64 rng(7);
  int optimal = 0, proven = 0;
  const int kInstances = 300;
  for (int instance = 0; instance < kInstances; ++instance) {
    const size_t jobs = instance % 2 == 0 ? 3 : 2;
    std::vector<TrafficProfile> profiles;
    for (size_t j = 0; j < jobs; ++j) profiles.push_back(RandomProfile(rng, RandomBins(rng, jobs), 40));
    const double cap = std::uniform_real_distribution<double>(15, 60)(rng);
    const UnifiedCircle circle = Circle(profiles);
    ShiftSolverOptions heuristic;
    heuristic.exact_max_evaluations = 0;  // force coordinate descent
    const LinkSolution sol = SolveLink(circle, cap, {}, heuristic);
    const double brute = BruteForceBest(Patterns(circle), cap);
    ASSERT_LE(sol.score, brute + 1e-9);
    ASSERT_NEAR(ScoreByDefinition(Patterns(circle), cap, sol.shifts), sol.score, 1e-9);
    if (sol.exact) {
      ++proven;
      ASSERT_NEAR(sol.score, brute, 1e-9) << "claimed exact but is not optimal";
    }
    optimal += std::abs(sol.score - brute) < 1e-9;
  }
  // Descent with restarts finds the optimum of nearly every small instance.
  EXPECT_GE(optimal, kInstances * 95 / 100);
  EXPECT_GT(proven, 0);
}

TEST(SolveLinkTest, HeuristicOutOfBudgetStillReturnsConsistentShifts) {
  std::mt19937_64 rng(3);
  for (int instance = 0; instance < 20; ++instance) {
    std::vector<TrafficProfile> profiles;
    for (size_t j = 0; j < 3; ++j) profiles.push_back(RandomProfile(rng, RandomBins(rng, 3), 40));
    const UnifiedCircle circle = Circle(profiles);
    ShiftSolverOptions tiny;
    tiny.exact_max_evaluations = 0;
    tiny.heuristic_max_evaluations = 1;  // the greedy start alone exceeds it
    const LinkSolution sol = SolveLink(circle, 30, {}, tiny);
    ASSERT_EQ(sol.shifts.size(), 3u);
    EXPECT_NEAR(ScoreByDefinition(Patterns(circle), 30, sol.shifts), sol.score, 1e-9);
    EXPECT_LE(sol.score, BruteForceBest(Patterns(circle), 30) + 1e-9);
  }
}

TEST(CircleEvaluatorTest, FoldedExcessEqualsTheDirectSumForEveryShift) {
  std::mt19937_64 rng(17);
  for (int instance = 0; instance < 50; ++instance) {
    // A short pattern against a long circle: the case folding is for.
    std::vector<TrafficProfile> profiles = {RandomProfile(rng, 7 + rng() % 20, 40),
                                            RandomProfile(rng, 40 + rng() % 60, 40)};
    const UnifiedCircle circle = Circle(profiles);
    CircleEvaluator eval(circle, 35);
    std::vector<double> load(circle.bins, 0.0);
    eval.AddJob(1, static_cast<uint32_t>(rng() % circle.JobBins(1)), load);
    std::vector<double> all;
    eval.ExcessForAllShifts(load, 0, all);
    ASSERT_EQ(all.size(), circle.JobBins(0));
    for (uint32_t s = 0; s < circle.JobBins(0); ++s) {
      ASSERT_NEAR(all[s], eval.ExcessWith(load, 0, s, 1e300), 1e-7) << "shift " << s;
    }
  }
}

TEST(CircleEvaluatorTest, AddJobAndExcessIsAddJobThenExcessBitForBit) {
  std::mt19937_64 rng(71);
  for (int instance = 0; instance < 30; ++instance) {
    // Circles of 1-4 chunks of 1,024 bins and a tail that is no multiple of 4.
    const std::vector<TrafficProfile> profiles = {RandomProfile(rng, 37 + rng() % 40, 40),
                                                  RandomProfile(rng, 50 + rng() % 60, 40)};
    const UnifiedCircle circle = Circle(profiles);
    CircleEvaluator eval(circle, 30 + rng() % 30);
    std::vector<double> load(circle.bins, 0.0);
    eval.AddJob(1, static_cast<uint32_t>(rng() % circle.JobBins(1)), load);
    const uint32_t shift = static_cast<uint32_t>(rng() % circle.JobBins(0));
    std::vector<double> expected = load;
    eval.AddJob(0, shift, expected);
    std::vector<double> out;
    const double excess = eval.AddJobAndExcess(load, 0, shift, out);
    ASSERT_EQ(out, expected) << "instance " << instance;
    ASSERT_EQ(excess, eval.Excess(expected)) << "instance " << instance << ", " << circle.bins << " bins";
  }
}

TEST(CircleEvaluatorTest, FoldedExcessOfAFewLevelPatternEqualsTheDirectSum) {
  // Three demand levels over 12 bins (each distinct value's class function is
  // computed once) against a random load: the same as the direct sum.
  const UnifiedCircle circle = Circle({ArrayProfile({0, 30, 30, 30, 12.5, 12.5, 0, 0, 30, 7, 0, 0}),
                                       ArrayProfile(std::vector<double>(96, 1.0))});
  CircleEvaluator eval(circle, 35);
  std::mt19937_64 rng(5);
  std::vector<double> load(circle.bins);
  for (double& v : load) v = std::uniform_real_distribution<double>(0, 40)(rng);
  std::vector<double> all;
  eval.ExcessForAllShifts(load, 0, all);
  ASSERT_EQ(all.size(), 12u);
  for (uint32_t s = 0; s < 12; ++s) {
    ASSERT_NEAR(all[s], eval.ExcessWith(load, 0, s, 1e300), 1e-9) << "shift " << s;
  }
}

// ExcessForAllShifts as it was first written: every residue class of the
// whole circle's load sorted, F_r(x) from the sorted class and its suffix
// sums, and each shift's terms added in bin order. The faster one (one period
// of the others' load, the classes it has, only the values that can exceed C
// sorted, sixteen shifts summed at once) must give the same sums bit for bit.
std::vector<double> AllShiftsAsFirstWritten(const std::vector<double>& load, const std::vector<double>& d,
                                            double cap) {
  const uint64_t n = load.size(), b = d.size(), m = n / b;
  std::vector<double> sorted(n), suffix(b * (m + 1));
  for (uint64_t r = 0; r < b; ++r) {
    double* cls = sorted.data() + r * m;
    for (uint64_t i = 0; i < m; ++i) cls[i] = load[r + i * b];
    std::sort(cls, cls + m);
    double* suf = suffix.data() + r * (m + 1);
    suf[m] = 0;
    for (uint64_t i = m; i-- > 0;) suf[i] = suf[i + 1] + cls[i];
  }
  auto f = [&](uint64_t r, double x) {
    const double* cls = sorted.data() + r * m;
    const uint64_t first = static_cast<uint64_t>(std::upper_bound(cls, cls + m, cap - x) - cls);
    return suffix[r * (m + 1) + first] + static_cast<double>(m - first) * (x - cap);
  };
  std::vector<double> out(b);
  for (uint64_t s = 0; s < b; ++s) {
    double sum = 0;
    uint64_t r = s;
    for (uint64_t bin = 0; bin < b; ++bin) {
      sum += f(r, d[bin]);
      if (++r == b) r = 0;
    }
    out[s] = sum;
  }
  return out;
}

TEST(CircleEvaluatorTest, EveryShiftsExcessIsTheFirstWrittenOnesBitForBit) {
  std::mt19937_64 rng(29);
  for (int instance = 0; instance < 60; ++instance) {
    // Two or three jobs, periods commensurate or not, square waves (few load
    // values: the counted classes) or jittered bursts (sorted classes).
    std::vector<TrafficProfile> profiles;
    const int jobs = 2 + instance % 2;
    for (int j = 0; j < jobs; ++j) {
      const uint32_t bins = instance % 3 == 0 ? 24 * (1 + static_cast<uint32_t>(rng() % 3)) : 7 + rng() % 60;
      if (instance % 4 < 2) {
        profiles.push_back(SquareProfile(bins, 1 + static_cast<uint32_t>(rng() % bins), 10 + rng() % 40,
                                         static_cast<uint32_t>(rng() % bins)));
      } else {
        profiles.push_back(RandomProfile(rng, bins, 45));
      }
    }
    const UnifiedCircle circle = Circle(profiles);
    CircleEvaluator eval(circle, 50);
    std::vector<uint32_t> shifts(jobs);
    for (int j = 0; j < jobs; ++j) shifts[j] = static_cast<uint32_t>(rng() % circle.JobBins(j));
    for (int j = 0; j < jobs; ++j) {
      std::vector<double> load(circle.bins, 0.0);
      std::vector<size_t> others;
      for (int i = 0; i < jobs; ++i) {
        if (i == j) continue;
        eval.AddJob(i, shifts[i], load);
        others.push_back(i);
      }
      const std::vector<double> expected = AllShiftsAsFirstWritten(load, circle.jobs[j].gbps, 50);
      std::vector<double> whole, period, of_others;
      eval.ExcessForAllShifts(load, j, whole);
      eval.ExcessForAllShiftsAgainst(others, shifts, j, period);
      eval.ExcessForAllShiftsOfOthers(load, j, of_others);
      ASSERT_EQ(whole.size(), expected.size());
      for (size_t s = 0; s < expected.size(); ++s) {
        ASSERT_EQ(whole[s], expected[s]) << "instance " << instance << " job " << j << " shift " << s;
        ASSERT_EQ(period[s], expected[s]) << "instance " << instance << " job " << j << " shift " << s;
        ASSERT_EQ(of_others[s], expected[s]) << "instance " << instance << " job " << j << " shift " << s;
      }
      // Some of the others only (as the greedy's placed jobs): the load
      // repeats within OthersBins(j) all the same.
      std::vector<double> some(circle.bins, 0.0);
      eval.AddJob(others.back(), shifts[others.back()], some);
      const std::vector<double> expected_some = AllShiftsAsFirstWritten(some, circle.jobs[j].gbps, 50);
      eval.ExcessForAllShiftsOfOthers(some, j, of_others);
      for (size_t s = 0; s < expected_some.size(); ++s) {
        ASSERT_EQ(of_others[s], expected_some[s]) << "instance " << instance << " job " << j << " shift " << s;
      }
      // One period of the others' load is the first OthersBins(j) bins of theirs on the circle.
      std::vector<double> one_period;
      eval.OthersLoad(others, shifts, j, one_period);
      ASSERT_EQ(one_period.size(), eval.OthersBins(j));
      for (size_t k = 0; k < one_period.size(); ++k) ASSERT_EQ(one_period[k], load[k]) << "bin " << k;
      // And the whole circle's, from the patterns (the joint solver's load).
      std::vector<double> whole_load;
      eval.LoadOf(others, shifts, circle.bins, whole_load);
      ASSERT_EQ(whole_load, load) << "instance " << instance << " job " << j;
    }
  }
}

// The circle's bound on a bin's load lets TotalExcess answer 0 without
// summing when the jobs' peaks fit together: the same value, bit for bit, as
// the sum over every bin (a copy without the bound), at capacities around
// the bound and at shifts that line the peaks up.
TEST(TotalExcessTest, ThePeakBoundChangesNoValue) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<TrafficProfile> profiles;
    const size_t jobs = 2 + rng() % 3;
    for (size_t j = 0; j < jobs; ++j) {
      std::vector<double> gbps(3 + rng() % 9);
      for (double& v : gbps) v = unit(rng) < 0.4 ? 0.0 : 40 * unit(rng);
      gbps[rng() % gbps.size()] = 10 + 30 * unit(rng);
      profiles.push_back(ArrayProfile(gbps));
    }
    const UnifiedCircle circle = Circle(profiles);
    UnifiedCircle unbounded = circle;
    unbounded.peak_load_gbps = std::numeric_limits<double>::infinity();
    double peaks = 0;
    std::vector<uint32_t> aligned(jobs);  // every job's peak in bin 0
    for (size_t j = 0; j < jobs; ++j) {
      const std::vector<double>& d = circle.jobs[j].gbps;
      const auto top = std::max_element(d.begin(), d.end());
      peaks += *top;
      aligned[j] = static_cast<uint32_t>((d.size() - (top - d.begin())) % d.size());
    }
    EXPECT_EQ(circle.peak_load_gbps, peaks);
    std::vector<uint32_t> random(jobs);
    for (size_t j = 0; j < jobs; ++j) random[j] = static_cast<uint32_t>(rng() % circle.JobBins(j));
    for (double cap : {peaks * 0.5, std::nextafter(peaks, 0.0), peaks, peaks * 1.5}) {
      for (const std::vector<uint32_t>& shifts : {aligned, random}) {
        const double bounded = TotalExcess(circle, cap, shifts);
        EXPECT_EQ(std::bit_cast<uint64_t>(bounded), std::bit_cast<uint64_t>(TotalExcess(unbounded, cap, shifts)))
            << "trial " << trial << " cap " << cap;
        if (cap >= peaks) {
          EXPECT_EQ(bounded, 0.0);
        }
      }
    }
    // Lined up, the peaks meet: just below their sum the excess is not 0.
    EXPECT_GT(TotalExcess(circle, peaks * 0.999, aligned), 0.0) << "trial " << trial;
  }
}

// The mean over every tuple of bins, one per job, of max(0, sum - C): the
// expectation at independent uniformly random phases, by its definition.
double MeanExcessOverEveryTuple(const std::vector<std::vector<double>>& d, double cap) {
  std::vector<size_t> at(d.size(), 0);
  double total = 0;
  uint64_t tuples = 0;
  while (true) {
    double load = 0;
    for (size_t j = 0; j < d.size(); ++j) load += d[j][at[j]];
    total += std::max(0.0, load - cap);
    ++tuples;
    size_t j = 0;
    while (j < d.size() && ++at[j] == d[j].size()) at[j++] = 0;
    if (j == d.size()) break;
  }
  return total / static_cast<double>(tuples);
}

TEST(ExpectedExcessAtRandomPhasesTest, EqualsTheMeanOverEveryTupleOfBins) {
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> unit(0, 1);
  int nonzero = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<TrafficProfile> profiles;
    const size_t jobs = 1 + rng() % 5;
    for (size_t j = 0; j < jobs; ++j) {
      std::vector<double> gbps(2 + rng() % 9);
      // Few levels (repeated values, as square waves give) or many.
      const bool levels = rng() % 2 == 0;
      for (double& v : gbps) v = levels ? 10.0 * static_cast<double>(rng() % 3) : 40 * unit(rng);
      gbps[rng() % gbps.size()] = 5 + 30 * unit(rng);
      profiles.push_back(ArrayProfile(gbps));
    }
    const UnifiedCircle circle = Circle(profiles);
    const std::vector<std::vector<double>> d = Patterns(circle);
    for (double cap : {circle.peak_load_gbps * 0.3, circle.peak_load_gbps * 0.7, circle.peak_load_gbps}) {
      const std::optional<double> exact = ExpectedExcessAtRandomPhases(circle, cap, uint64_t{1} << 20);
      ASSERT_TRUE(exact.has_value()) << "trial " << trial;
      const double want = MeanExcessOverEveryTuple(d, cap);
      EXPECT_NEAR(*exact, want, 1e-12 * (1 + want)) << "trial " << trial << " cap " << cap;
      nonzero += want > 0;
    }
  }
  EXPECT_GT(nonzero, 300);  // most instances have excess to find
}

TEST(ExpectedExcessAtRandomPhasesTest, GivesUpPastItsStepsAndNeedsNoneWhenThePeaksFit) {
  std::mt19937_64 rng(37);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<TrafficProfile> profiles;
  for (int j = 0; j < 4; ++j) {
    std::vector<double> gbps(20);
    for (double& v : gbps) v = 1 + 40 * unit(rng);  // 20 distinct values each
    profiles.push_back(ArrayProfile(gbps));
  }
  const UnifiedCircle circle = Circle(profiles);
  // Two jobs enumerated (400 combinations), the other two walked (40 values):
  // 16,000 steps.
  EXPECT_FALSE(ExpectedExcessAtRandomPhases(circle, 50, 15'999).has_value());
  ASSERT_TRUE(ExpectedExcessAtRandomPhases(circle, 50, 16'000).has_value());
  EXPECT_NEAR(*ExpectedExcessAtRandomPhases(circle, 50, 16'000), MeanExcessOverEveryTuple(Patterns(circle), 50),
              1e-12 * 100);
  // At or above the peaks' sum nothing is enumerated: 0 within any budget.
  EXPECT_EQ(ExpectedExcessAtRandomPhases(circle, circle.peak_load_gbps, 0), 0.0);
}

TEST(SameUpToRotationTest, MatchesTheScoreInvariance) {
  std::mt19937_64 rng(23);
  const UnifiedCircle circle = Circle({RandomProfile(rng, 4, 40), RandomProfile(rng, 6, 40),
                                       RandomProfile(rng, 9, 40)});
  const std::vector<uint32_t> base = {1, 2, 3};
  for (uint32_t r = 0; r < circle.bins; ++r) {  // every common rotation
    const std::vector<uint32_t> rotated = {(1 + r) % 4, (2 + r) % 6, (3 + r) % 9};
    EXPECT_TRUE(SameUpToRotation(circle, rotated, base));
    EXPECT_NEAR(LinkScore(circle, 30, rotated), LinkScore(circle, 30, base), 1e-12);
  }
  EXPECT_FALSE(SameUpToRotation(circle, {1, 3, 3}, base));  // job 1 alone moved by 1
  EXPECT_FALSE(SameUpToRotation(circle, {1, 2, 4}, base));
  EXPECT_TRUE(SameUpToRotation(circle, {1, 2, 3}, base));
}

TEST(SolveLinkDemandsTest, MultiResolutionReachesTheOracleWhenExactIsUnaffordable) {
  // Three equal-period square waves, Up phases 30 + 40 + 50 = 120 of 240 ms:
  // they fit together (score 1). Exact search costs 240^3 evaluations; with a
  // budget of 100,000 the solve goes through a coarser circle, then refines.
  const TrafficProfile a = SquareProfile(240, 30, 50), b = SquareProfile(240, 40, 50, 7),
                       c = SquareProfile(240, 50, 50, 100);
  ShiftSolverOptions options;
  options.exact_max_evaluations = 100'000;
  const UnifiedCircle fine = Circle({a, b, c});
  ASSERT_GT(ExactSearchCost(fine, {}), options.exact_max_evaluations);
  auto solved = SolveLinkDemands({{&a, 1.0}, {&b, 1.0}, {&c, 1.0}}, 50, {}, {}, options);
  ASSERT_TRUE(solved.ok()) << solved.status();
  EXPECT_EQ(solved->circle.quantum_us, 1000u);
  EXPECT_DOUBLE_EQ(solved->solution.score, 1.0);
  EXPECT_TRUE(solved->solution.exact);  // it meets the lower bound: proven
  EXPECT_DOUBLE_EQ(LinkScore(solved->circle, 50, solved->solution.shifts), 1.0);
}

TEST(SolveLinkDemandsTest, MultiResolutionNeverClaimsMoreThanItAchieves) {
  std::mt19937_64 rng(31);
  ShiftSolverOptions options;
  options.exact_max_evaluations = 2'000;
  for (int instance = 0; instance < 40; ++instance) {
    std::vector<TrafficProfile> profiles;
    for (int j = 0; j < 3; ++j) profiles.push_back(RandomProfile(rng, RandomBins(rng, 3), 40));
    std::vector<LinkDemand> demands;
    for (const TrafficProfile& p : profiles) demands.push_back({&p, 1.0});
    auto solved = SolveLinkDemands(demands, 35, {}, {}, options);
    ASSERT_TRUE(solved.ok());
    const double brute = BruteForceBest(Patterns(solved->circle), 35);
    EXPECT_LE(solved->solution.score, brute + 1e-9);
    EXPECT_NEAR(ScoreByDefinition(Patterns(solved->circle), 35, solved->solution.shifts),
                solved->solution.score, 1e-9);
    if (solved->solution.exact) {
      EXPECT_NEAR(solved->solution.score, brute, 1e-9);
    }
  }
}

TEST(SolveLinkDemandsTest, KeepsFixedShiftsGivenInMicroseconds) {
  const TrafficProfile a = SquareProfile(100, 40, 50), b = SquareProfile(100, 40, 50),
                       c = SquareProfile(100, 20, 50);
  auto solved = SolveLinkDemands({{&a, 1.0}, {&b, 1.0}, {&c, 1.0}}, 50,
                                 {10000u, 50000u, std::nullopt}, {}, ShiftSolverOptions{});
  ASSERT_TRUE(solved.ok());
  EXPECT_EQ(solved->solution.shifts[0], 10u);
  EXPECT_EQ(solved->solution.shifts[1], 50u);
  // a busy on [10, 50), b on [50, 90): c's 20 ms fit in [90, 110) mod 100.
  EXPECT_EQ(solved->solution.shifts[2], 90u);
  EXPECT_DOUBLE_EQ(solved->solution.score, 1.0);
}

TEST(BuildUnifiedCircleTest, CoarsensTheQuantumUntilTheCircleFits) {
  // Periods of 101 and 103 ms: lcm = 10403 bins at 1 ms; max_bins 4000 forces 2 ms
  // (51 and 52 bins: lcm 2652).
  const TrafficProfile a = SquareProfile(101, 10, 10);
  const TrafficProfile b = SquareProfile(103, 10, 10);
  auto c = BuildUnifiedCircle({{&a, 1.0}, {&b, 1.0}}, {.quantum_us = 1000, .max_bins = 4000});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->quantum_us, 2000u);
  EXPECT_EQ(c->bins, 2652u);
  EXPECT_EQ(c->jobs[0].rounding_error_us, 1000);   // 101 ms -> 102 ms
  EXPECT_EQ(c->jobs[1].rounding_error_us, 1000);   // 103 ms -> 104 ms
  auto fine = BuildUnifiedCircle({{&a, 1.0}, {&b, 1.0}}, {.quantum_us = 1000, .max_bins = 1 << 16});
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->quantum_us, 1000u);
  EXPECT_EQ(fine->bins, 10403u);
}

TEST(BuildUnifiedCircleTest, RejectsUnusableOptions) {
  const TrafficProfile a = SquareProfile(10, 1, 1);
  EXPECT_EQ(BuildUnifiedCircle({{&a, 1.0}}, {.quantum_us = 0, .max_bins = 10}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildUnifiedCircle({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shift_solver_test
}  // namespace phasor::placer
