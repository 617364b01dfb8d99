// The closed loop's decisions and the measured link score (daemon/closed_loop.h).
#include "daemon/closed_loop.h"

#include "gtest/gtest.h"
#include "placer/link_score.h"

namespace phasor::daemon {
namespace closed_loop_test {
namespace {

TEST(PhaseErrorTest, SignedAndWithinHalfAPeriod) {
  // Slots at 1000 + 100 + n * 400.
  EXPECT_EQ(PhaseErrorUs(1000, 400, 100, 1100), 0);
  EXPECT_EQ(PhaseErrorUs(1000, 400, 100, 1130), 30);
  EXPECT_EQ(PhaseErrorUs(1000, 400, 100, 1070), -30);
  EXPECT_EQ(PhaseErrorUs(1000, 400, 100, 1100 + 5 * 400 + 200), 200);  // half a period: positive
  EXPECT_EQ(PhaseErrorUs(1000, 400, 100, 1100 + 5 * 400 + 201), -199);
  EXPECT_EQ(PhaseErrorUs(1000, 400, 100, 1100 - 7 * 400 - 10), -10);  // before the origin
}

TEST(RealignerTest, AboveThresholdAtMostOncePerInterval) {
  Realigner r(/*threshold_us=*/2000, /*min_interval_ms=*/1000);
  EXPECT_FALSE(r.ShouldRealign("a", 2000, 0));
  EXPECT_FALSE(r.ShouldRealign("a", -2000, 0));
  EXPECT_TRUE(r.ShouldRealign("a", 2001, 10));
  EXPECT_FALSE(r.ShouldRealign("a", 5000, 10 + 999'999));
  EXPECT_TRUE(r.ShouldRealign("b", -5000, 20));  // per job
  EXPECT_TRUE(r.ShouldRealign("a", 5000, 10 + 1'000'000));
}

TEST(MeasuredLinkScoreTest, IsThePlacersFormulaOnExactSegments) {
  // 30 ms of 60 Gbit/s in a 100 ms period on a 50 Gbit/s link: 10 Gbit/s over
  // for 30% of the time, so the mean excess is 3 Gbit/s = 6% of capacity.
  placer::TrafficProfile p;
  p.period_us = 100000;
  p.square = placer::SquareWave{30000, 60.0, 0, 0.0};
  const MeasuredLinkScore m = ScoreMeasuredLink(p, 50);
  EXPECT_DOUBLE_EQ(m.score, placer::ScoreFromExcess(10.0 * 30000, 100000, 50));
  EXPECT_NEAR(m.score, 0.94, 1e-12);
  EXPECT_NEAR(m.excess, 0.06, 1e-12);
  EXPECT_DOUBLE_EQ(ScoreMeasuredLink(p, 100).score, 1.0);
}

}  // namespace
}  // namespace closed_loop_test
}  // namespace phasor::daemon
