#include "placer/pair_bound.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "placer/link_score.h"

namespace phasor::placer {
namespace pair_bound_test {
namespace {

// A circle of quantum 1 us straight from bin patterns.
UnifiedCircle CircleOf(const std::vector<std::vector<double>>& patterns) {
  UnifiedCircle c;
  c.quantum_us = 1;
  c.bins = 1;
  for (const auto& p : patterns) {
    QuantizedProfile q;
    q.quantum_us = 1;
    q.gbps = p;
    c.jobs.push_back(q);
    c.bins = std::lcm(c.bins, uint64_t{p.size()});
  }
  return c;
}

// The excess over `n` bins of the jobs in `which` at `shifts`, by the
// definition: L(k) = sum_j d_j[(k - s_j) mod B_j], excess = sum max(0, L - C).
double ExcessByDefinition(const UnifiedCircle& c, double cap, const std::vector<uint32_t>& shifts,
                          const std::vector<size_t>& which) {
  double excess = 0;
  for (uint64_t k = 0; k < c.bins; ++k) {
    double load = 0;
    for (size_t j : which) {
      const int64_t b = c.JobBins(j);
      load += c.jobs[j].gbps[((static_cast<int64_t>(k) - shifts[j]) % b + b) % b];
    }
    excess += std::max(0.0, load - cap);
  }
  return excess;
}

std::vector<size_t> AllJobs(const UnifiedCircle& c) {
  std::vector<size_t> all(c.jobs.size());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// Bursty random patterns (idle bins and bursts), with `jobs` periods from `periods`.
UnifiedCircle RandomCircle(std::mt19937_64& rng, size_t jobs,
                           const std::vector<uint32_t>& periods) {
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<std::vector<double>> patterns;
  for (size_t j = 0; j < jobs; ++j) {
    std::vector<double> p(periods[rng() % periods.size()]);
    const double idle = unit(rng);
    for (double& v : p) v = unit(rng) < idle ? 0.0 : 10 + 40 * unit(rng);
    patterns.push_back(std::move(p));
  }
  return CircleOf(patterns);
}

std::vector<uint32_t> RandomShifts(std::mt19937_64& rng, const UnifiedCircle& c) {
  std::vector<uint32_t> s;
  for (size_t j = 0; j < c.jobs.size(); ++j)
    s.push_back(static_cast<uint32_t>(rng() % c.JobBins(j)));
  return s;
}

const std::vector<uint32_t> kPeriods = {3, 4, 6, 8, 9, 10, 12, 14, 15, 21};

TEST(PairwiseBoundTest, PairExcessIsThePairAloneOnTheWholeCircle) {
  std::mt19937_64 rng(11);
  for (int instance = 0; instance < 200; ++instance) {
    const UnifiedCircle c = RandomCircle(rng, 2 + instance % 3, kPeriods);
    const double cap = 30 + 30 * std::uniform_real_distribution<double>(0, 1)(rng);
    const PairwiseBound bound(c, cap);
    const std::vector<uint32_t> s = RandomShifts(rng, c);
    for (size_t i = 0; i < c.jobs.size(); ++i) {
      ASSERT_NEAR(bound.LoneExcess(i), ExcessByDefinition(c, cap, s, {i}), 1e-9);
      for (size_t j = 0; j < c.jobs.size(); ++j) {
        if (i == j) continue;
        ASSERT_NEAR(bound.PairExcess(i, j, s[i], s[j]), ExcessByDefinition(c, cap, s, {i, j}), 1e-9)
            << "instance " << instance << " pair " << i << "," << j;
      }
    }
  }
}

TEST(PairwiseBoundTest, StarBoundNeverExceedsTheExcessAndIsExactForTwoJobs) {
  std::mt19937_64 rng(12);
  int tight = 0;
  for (int instance = 0; instance < 400; ++instance) {
    const size_t jobs = 2 + instance % 4;
    const UnifiedCircle c = RandomCircle(rng, jobs, kPeriods);
    const double cap = 30 + 40 * std::uniform_real_distribution<double>(0, 1)(rng);
    const PairwiseBound bound(c, cap);
    const std::vector<uint32_t> s = RandomShifts(rng, c);
    const double excess = ExcessByDefinition(c, cap, s, AllJobs(c));
    const double star = bound.StarBound(s);
    ASSERT_LE(star, excess + 1e-9) << "instance " << instance;
    if (jobs == 2) {
      ASSERT_NEAR(star, excess, 1e-9);
    }
    tight += jobs > 2 && std::abs(star - excess) < 1e-9;
  }
  EXPECT_GT(tight, 0);  // with three or more jobs too, when no bin holds three bursts
}

TEST(PairwiseBoundTest, StarBoundCountsEveryPairOverlapAroundTheMiddleJob) {
  // Period 12, capacity 50, 40 Gbit/s bursts: a on [0, 4), b on [3, 7),
  // c on [6, 10). a and b overlap in bin 3, b and c in bin 6 (30 each);
  // no bin holds all three. Around b the star bound is 30 + 30 = 60, the
  // excess itself; around a it misses the b-c overlap (30).
  auto burst = [](uint32_t begin, uint32_t end) {
    std::vector<double> p(12, 0.0);
    for (uint32_t k = begin; k < end; ++k) p[k] = 40;
    return p;
  };
  const UnifiedCircle c = CircleOf({burst(0, 4), burst(3, 7), burst(6, 10)});
  const PairwiseBound bound(c, 50);
  EXPECT_DOUBLE_EQ(bound.PairExcess(0, 1, 0, 0), 30);
  EXPECT_DOUBLE_EQ(bound.PairExcess(1, 2, 0, 0), 30);
  EXPECT_DOUBLE_EQ(bound.PairExcess(0, 2, 0, 0), 0);
  EXPECT_DOUBLE_EQ(bound.StarBound({0, 0, 0}), 60);
  EXPECT_DOUBLE_EQ(ExcessByDefinition(c, 50, {0, 0, 0}, {0, 1, 2}), 60);
  // c two bins later, on [8, 12): only the a-b overlap remains.
  EXPECT_DOUBLE_EQ(bound.StarBound({0, 0, 2}), 30);
  EXPECT_DOUBLE_EQ(ExcessByDefinition(c, 50, {0, 0, 2}, {0, 1, 2}), 30);
}

TEST(CircleEvaluatorTest, ExcessAtEqualsTheDefinitionFolded) {
  std::mt19937_64 rng(13);
  int folded = 0;
  for (int instance = 0; instance < 300; ++instance) {
    const size_t jobs = 1 + instance % 6;
    // Periods that share little (primes and products) make long residue
    // classes, where ExcessAt folds.
    const UnifiedCircle c = RandomCircle(rng, jobs, {4, 6, 17, 19, 23, 24, 36, 40});
    if (c.bins > 200000) continue;
    const double cap = 20 + 60 * std::uniform_real_distribution<double>(0, 1)(rng);
    CircleEvaluator eval(c, cap);
    folded += eval.folded_job().has_value();
    for (int trial = 0; trial < 3; ++trial) {
      const std::vector<uint32_t> s = RandomShifts(rng, c);
      const double excess = ExcessByDefinition(c, cap, s, AllJobs(c));
      ASSERT_NEAR(eval.ExcessAt(s, std::numeric_limits<double>::infinity()), excess,
                  1e-9 * std::max(1.0, excess))
          << "instance " << instance << " folded " << eval.folded_job().has_value();
      // Under a bound it is exact when the excess fits, above the bound otherwise.
      const double bound = excess * 0.5;
      const double bounded = eval.ExcessAt(s, bound);
      if (excess > 0) {
        ASSERT_GT(bounded, bound);
      }
    }
  }
  EXPECT_GT(folded, 50);
}

TEST(CircleEvaluatorTest, FoldsTheJobWithTheLongestResidueClasses) {
  // Periods 60 and 53 share nothing: job 0's classes modulo gcd(60, 53) = 1
  // hold 60 values, job 1's 53. Job 0 is folded onto job 1's 53 bins.
  std::vector<double> a(60, 0.0), b(53, 0.0);
  for (int k = 0; k < 20; ++k) a[k] = 30;
  for (int k = 0; k < 25; ++k) b[k] = 35;
  const UnifiedCircle c = CircleOf({a, b});
  CircleEvaluator eval(c, 50);
  ASSERT_EQ(eval.folded_job(), std::optional<size_t>(0));
  for (uint32_t s = 0; s < 53; s += 7) {
    EXPECT_NEAR(eval.ExcessAt({0, s}, 1e300), ExcessByDefinition(c, 50, {0, s}, {0, 1}), 1e-9);
  }
  // Equal periods: every class holds one value, nothing is folded.
  const UnifiedCircle same = CircleOf({a, a});
  EXPECT_FALSE(CircleEvaluator(same, 50).folded_job().has_value());
}

}  // namespace
}  // namespace pair_bound_test
}  // namespace phasor::placer
