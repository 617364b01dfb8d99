// The fundamental period and the confidence on generated switch counters
// (tests/probe/synthetic_counters.h: irregular 0.5 s readings, outages,
// cumulative rows, noise), the calibration of the confidence, and the
// bundled Zhejiang ports against the documented threshold.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "probe/counter_series.h"
#include "probe/profile_extractor.h"
#include "probe/switch_csv.h"
#include "tests/probe/synthetic_counters.h"

namespace phasor::probe {
namespace period_detection_test {
namespace {

using testing::RateModel;
using testing::SamplingModel;
using testing::SyntheticSwitchCsv;

ExtractedProfile FromCsv(const std::string& csv) {
  auto r = ParseSwitchCsv(csv, "generated.csv");
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  EXPECT_GE(r->cumulative_rows, 1u);  // the outages were followed by cumulative rows
  auto b = Resample(r->series.at(0).intervals, ResampleOptions{});
  EXPECT_TRUE(b.ok()) << b.status();
  auto p = ExtractProfile(*b);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : ExtractedProfile{};
}

void ExpectPeriod(const RateModel& m, uint32_t seed, const std::string& what) {
  const ExtractedProfile p = FromCsv(SyntheticSwitchCsv(m, SamplingModel{}, seed));
  ASSERT_TRUE(p.periodic) << what << ": " << p.reason;
  EXPECT_NEAR(p.period_exact_us, m.period_s * 1e6, 0.01 * m.period_s * 1e6) << what;
  EXPECT_GE(p.confidence, 0.1) << what;
}

TEST(PeriodDetectionTest, DutyCyclesFromTenToSixtyPercent) {
  uint32_t seed = 1;
  for (double duty : {0.1, 0.2, 0.4, 0.6}) {
    RateModel m;
    m.duty = duty;
    ExpectPeriod(m, ++seed, "duty " + std::to_string(duty));
  }
}

TEST(PeriodDetectionTest, NoisyReadings) {
  for (double noise : {0.4, 1.0}) {
    RateModel m;
    m.period_s = 4.1;
    m.noise = noise;
    ExpectPeriod(m, 20, "noise " + std::to_string(noise));
  }
}

TEST(PeriodDetectionTest, WeakFundamentalUnderAStrongerSuperPeriod) {
  // Periodic evaluation: a 3 s burst every 41 s over 7.3 s iterations. Lags
  // near the super-period (43.5 s: 0.45) correlate better than the
  // iteration's (0.36).
  RateModel m;
  m.period_s = 7.3;
  m.duty = 0.25;
  m.up_gbps = 40;
  m.super_period_s = 41;
  m.super_len_s = 3;
  m.super_gbps = 60;
  ExpectPeriod(m, 30, "7.3 s under 41 s");
}

TEST(PeriodDetectionTest, GradientAccumulationEveryFourthIteration) {
  // Every fourth 2.7 s iteration carries the all-reduce burst: the 10.8 s
  // lag correlates almost four times as well as the iteration's (0.78 and
  // 0.21).
  RateModel m;
  m.period_s = 2.7;
  m.duty = 0.3;
  m.up_gbps = 30;
  m.super_period_s = 4 * 2.7;
  m.super_len_s = 0.8;
  m.super_gbps = 80;
  ExpectPeriod(m, 40, "2.7 s with a burst every 4th");
}

TEST(PeriodDetectionTest, ElevenSecondJobsAreNotReportedAtTheirSuperPeriod) {
  // The production case: ~11 s iterations, a ~57 s super-period that
  // correlates three times as well (0.79 and 0.25), 0.5 s readings with gaps.
  for (uint32_t seed : {50u, 51u, 52u}) {
    RateModel m;
    m.period_s = 11.0 + 0.1 * (seed - 50);
    m.duty = 0.3;
    m.up_gbps = 45;
    m.super_period_s = 57;
    m.super_len_s = 6;
    m.super_gbps = 80;
    ExpectPeriod(m, seed, "11 s under 57 s, seed " + std::to_string(seed));
  }
}

TEST(PeriodDetectionTest, ConstantRateWithNoiseHasNoPattern) {
  RateModel m;
  m.up_gbps = m.down_gbps = 20;
  m.noise = 0.3;
  const ExtractedProfile p = FromCsv(SyntheticSwitchCsv(m, SamplingModel{}, 60));
  EXPECT_FALSE(p.periodic);
  EXPECT_LT(p.confidence, 0.05);
  EXPECT_NE(p.reason.find("no periodic pattern"), std::string::npos);
}

// A square wave (40 Gbit/s swing, 50% duty) plus white noise per bin such
// that the wave carries `share` of the variance.
BinnedSeries WithShare(double share, uint32_t seed) {
  BinnedSeries s;
  s.bin_us = 1000;
  std::mt19937 rng(seed);
  const double wave_var = 20.0 * 20.0;
  std::normal_distribution<double> noise(0, std::sqrt(wave_var * (1 - share) / share));
  const double to_bytes = 1000 * 1000.0 / 8;
  for (int i = 0; i < 20000; ++i) {
    const bool up = std::fmod(i + 0.5, 97.0) < 48.5;
    s.bytes.push_back(std::max(0.0, 400 + (up ? 20 : -20) + noise(rng)) * to_bytes);
  }
  return s;
}

TEST(ConfidenceTest, IsTheShareOfVarianceThePatternCarries) {
  // Calibration: the confidence estimates the share of the variance the
  // periodic pattern carries (docs/probe.md).
  uint32_t seed = 70;
  for (double share : {0.2, 0.5, 0.9}) {
    auto p = ExtractProfile(WithShare(share, ++seed));
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(p->periodic) << share << ": " << p->reason;
    EXPECT_NEAR(p->period_exact_us, 97'000, 970) << share;
    EXPECT_NEAR(p->confidence, share, 0.03) << share;
  }
}

TEST(ConfidenceTest, BelowTheThresholdIsNoPattern) {
  // 5% of the variance periodic: a real but negligible pattern.
  auto p = ExtractProfile(WithShare(0.05, 80));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->periodic);
  EXPECT_NEAR(p->confidence, 0.05, 0.03);
  EXPECT_NE(p->reason.find("explains too little"), std::string::npos) << p->reason;
}

class BundledPortsTest : public ::testing::Test {
 protected:
  static ExtractedProfile Port(const std::string& name) {
    auto r = ReadSwitchCsv("data/network/zhejiang_a100/leaf1_ports/Leaf-1_" + name + ".csv.gz");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    for (const auto& s : r->series) {
      if (!s.subject.ends_with("/out")) continue;
      auto b = Resample(s.intervals, ResampleOptions{});
      auto p = ExtractProfile(*b);
      EXPECT_TRUE(p.ok());
      return *p;
    }
    return {};
  }
};

TEST_F(BundledPortsTest, BusyPortsAreClearlyAboveTheThresholdTheUplinkBelow) {
  const double threshold = ExtractorOptions{}.min_confidence;
  EXPECT_EQ(threshold, 0.1);
  for (const char* port : {"2_1", "3_1", "3_2", "7_1"}) {
    const ExtractedProfile p = Port(port);
    ASSERT_TRUE(p.periodic) << port << ": " << p.reason;
    EXPECT_NEAR(p.period_exact_us, 3.0e6, 0.01 * 3.0e6) << port;
    EXPECT_GT(p.confidence, 1.5 * threshold) << port;
  }
  const ExtractedProfile uplink = Port("33");
  EXPECT_FALSE(uplink.periodic);
  EXPECT_LT(uplink.confidence, 0.5 * threshold);
}

}  // namespace
}  // namespace period_detection_test
}  // namespace phasor::probe
