#include "probe/profile_extractor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace phasor::probe {
namespace profile_extractor_test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A square wave sampled in bins of `bin_us`: `up_gbps` for `up` of each
// period starting at `start_us` (relative to the series start), `down_gbps`
// otherwise, with Gaussian noise, each bin the exact average over its span.
BinnedSeries Square(double period_us, double up, double up_gbps, double down_gbps, double start_us,
                    uint32_t bin_us, size_t n, double noise_gbps, uint32_t seed) {
  BinnedSeries s;
  s.t0_epoch_us = 1'700'000'000'000'000;
  s.bin_us = bin_us;
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, noise_gbps);
  const double to_bytes = bin_us * 1000.0 / 8;
  for (size_t i = 0; i < n; ++i) {
    // Fraction of the bin in the Up phase, integrated on a fine grid.
    int up_steps = 0;
    constexpr int kSteps = 50;
    for (int k = 0; k < kSteps; ++k) {
      const double t = (i + (k + 0.5) / kSteps) * bin_us - start_us;
      double ph = std::fmod(t, period_us);
      if (ph < 0) ph += period_us;
      up_steps += ph < up * period_us;
    }
    const double f = static_cast<double>(up_steps) / kSteps;
    const double gbps = std::max(0.0, f * up_gbps + (1 - f) * down_gbps + noise(rng));
    s.bytes.push_back(gbps * to_bytes);
  }
  return s;
}

TEST(ProfileExtractorTest, SquareWaveWithNoiseAndGaps) {
  const double period_us = 123'400;
  BinnedSeries s = Square(period_us, 0.3, 40, 2, 50'000, 1000, 6000, 4.0, 1);
  std::mt19937 rng(7);
  for (auto& x : s.bytes) {
    if (rng() % 20 == 0) x = kNaN;  // 5% scattered gaps
  }
  for (size_t i = 2000; i < 2400; ++i) s.bytes[i] = kNaN;  // a 0.4 s outage
  auto p = ExtractProfile(s);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->periodic) << p->reason;
  EXPECT_NEAR(p->period_exact_us, period_us, 0.005 * period_us);
  EXPECT_EQ(p->period_us, static_cast<uint32_t>(std::lround(p->period_exact_us)));
  EXPECT_NEAR(p->up_fraction, 0.3, 0.02);
  EXPECT_GT(p->confidence, 0.8);
  EXPECT_EQ(p->gbps.size(), (p->period_us + 999) / 1000);
  EXPECT_NEAR(p->gbps[1], 40, 3);                  // starts in the Up phase
  EXPECT_NEAR(p->gbps[p->gbps.size() - 3], 2, 3);  // the last bin may hold an edge
  EXPECT_NEAR(p->peak_gbps, 40, 4);
  // t0 is an Up start: (t0 - first Up start) is a multiple of the period.
  const double rel = static_cast<double>(p->t0_epoch_us - s.t0_epoch_us) - 50'000;
  const double cycles = rel / period_us;
  EXPECT_NEAR(cycles, std::round(cycles), 2000.0 / period_us);
  EXPECT_LE(p->t0_epoch_us, s.t0_epoch_us + 6000 * 1000);
  EXPECT_GT(p->t0_epoch_us, s.t0_epoch_us + 6000 * 1000 - 2 * period_us);
}

TEST(ProfileExtractorTest, ManyPeriodsAndUpFractions) {
  // Periods that are not multiples of the bin, Up fractions from short to long.
  const std::vector<std::pair<double, double>> cases = {
      {20'300, 0.5}, {57'700, 0.15}, {99'900, 0.7}, {250'000, 0.4}, {12'350, 0.35}};
  uint32_t seed = 10;
  for (const auto& [period, up] : cases) {
    BinnedSeries s = Square(period, up, 25, 0, 0, 1000, 5000, 3.0, ++seed);
    auto p = ExtractProfile(s);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(p->periodic) << period << ": " << p->reason;
    EXPECT_NEAR(p->period_exact_us, period, 0.005 * period) << period;
    EXPECT_NEAR(p->up_fraction, up, 0.02) << period;
  }
}

TEST(ProfileExtractorTest, CoarseSamplingSubBinPeriod) {
  // 2.9 s period sampled every 0.5 s, as on the Zhejiang switch counters.
  BinnedSeries s = Square(2'900'000, 0.4, 60, 5, 0, 500'000, 7200, 5.0, 3);
  auto p = ExtractProfile(s);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->periodic) << p->reason;
  EXPECT_NEAR(p->period_exact_us, 2'900'000, 0.005 * 2'900'000);
  EXPECT_EQ(p->gbps.size(), 6u);
}

TEST(ProfileExtractorTest, WhiteNoiseHasNoPattern) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    BinnedSeries s;
    s.bin_us = 1000;
    std::mt19937 rng(seed);
    std::exponential_distribution<double> e(1.0 / 1e6);
    for (int i = 0; i < 5000; ++i) s.bytes.push_back(e(rng));
    auto p = ExtractProfile(s);
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(p->periodic) << seed << " period " << p->period_us << " conf " << p->confidence;
    EXPECT_NE(p->reason.find("no periodic pattern"), std::string::npos);
    EXPECT_TRUE(p->gbps.empty());
  }
}

TEST(ProfileExtractorTest, IdleConstantAndShortSeries) {
  BinnedSeries s;
  s.bin_us = 1000;
  s.bytes.assign(3000, 0.0);
  auto p = ExtractProfile(s);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->periodic);
  EXPECT_EQ(p->reason, "no periodic pattern: idle");
  s.bytes.assign(3000, 5e6);
  p = ExtractProfile(s);
  EXPECT_FALSE(p->periodic);
  EXPECT_EQ(p->reason, "no periodic pattern: constant rate");
  EXPECT_NEAR(p->mean_gbps, 40.0, 1e-9);
  s = Square(100'000, 0.5, 10, 0, 0, 1000, 250, 0, 1);  // 2.5 periods < min_cycles 3
  p = ExtractProfile(s);
  EXPECT_FALSE(p->periodic) << p->period_us;
  s.bytes.assign(100, kNaN);
  p = ExtractProfile(s);
  EXPECT_EQ(p->reason, "no data: every bin is a gap");
}

TEST(ProfileExtractorTest, PrefersThePeriodOverItsMultiples) {
  // Bursts of unequal height every 50 ms: the 100 ms lag also correlates.
  BinnedSeries s = Square(50'000, 0.2, 30, 0, 0, 1000, 4000, 2.0, 5);
  auto p = ExtractProfile(s);
  ASSERT_TRUE(p.ok() && p->periodic);
  EXPECT_NEAR(p->period_exact_us, 50'000, 250);
}

// Regression (probe_sysfs_fuzz): on a period of about three bins, the
// window searched around 2T reached back to T's own peak, which was then
// taken as 2T; the period halved at every refinement step down to about
// 1e-19 bins, and folding at it divided by zero (NaN phase bin index).
TEST(ProfileExtractorTest, RegressionShortPeriodDoesNotCollapse) {
  int periodic = 0;
  for (double bins : {2.87, 3.0, 3.3, 3.6}) {
    for (uint32_t seed = 1; seed <= 10; ++seed) {
      const double period_us = bins * 10'000;
      BinnedSeries s = Square(period_us, 0.4, 8, 0, 0, 10'000, 40, 1.5, seed);
      absl::StatusOr<ExtractedProfile> p = ExtractProfile(s);
      ASSERT_TRUE(p.ok()) << p.status().message();
      if (!p->periodic) continue;
      ++periodic;
      // The period or (so few bins per period alias) a multiple, never a
      // fraction: at least the two-bin minimum lag.
      const double ratio = p->period_exact_us / period_us;
      const double k = std::round(ratio);
      EXPECT_GE(k, 1) << bins << " bins, seed " << seed << ": " << p->period_exact_us;
      EXPECT_NEAR(ratio, k, 0.05 * k) << bins << " bins, seed " << seed << ": " << p->period_exact_us;
      EXPECT_GE(p->period_us, 20'000u);
      if (bins == 3.0) {
        EXPECT_EQ(k, 1) << "seed " << seed;  // a whole number of bins: the period itself
      }
    }
  }
  EXPECT_GT(periodic, 20);  // most of these are clear patterns
}

TEST(ProfileExtractorTest, BadInput) {
  BinnedSeries s;
  s.bin_us = 0;
  s.bytes = {1, 2};
  EXPECT_EQ(ExtractProfile(s).status().message(), "bin_us: must be positive");
  s.bin_us = 10;
  s.bytes = {};
  EXPECT_EQ(ExtractProfile(s).status().message(), "bytes: the series is empty");
  s.bytes = {1, -2};
  EXPECT_EQ(ExtractProfile(s).status().message(), "bytes[1]: -2 is not a count");
  s.bytes = {1, 2};
  ExtractorOptions o;
  o.min_cycles = 1;
  EXPECT_EQ(ExtractProfile(s, o).status().message(), "min_cycles: must be >= 2");
}

TEST(ProfileExtractorTest, AutocorrelationOfAlternatingSeries) {
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(i % 2 ? 1.0 : 0.0);
  const auto r = Autocorrelation(v, 4);
  EXPECT_NEAR(r[0], 1.0, 1e-9);
  EXPECT_NEAR(r[1], -1.0, 1e-9);
  EXPECT_NEAR(r[2], 1.0, 1e-9);
}

}  // namespace
}  // namespace profile_extractor_test
}  // namespace phasor::probe
