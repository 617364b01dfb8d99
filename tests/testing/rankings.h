// GoogleTest expectations on placer rankings, shared by the tests that check
// a ranking survives a trip (protobuf, the wire, phasord).
#ifndef PHASOR_TESTS_TESTING_RANKINGS_H_
#define PHASOR_TESTS_TESTING_RANKINGS_H_

#include "gtest/gtest.h"
#include "placer/ranker.h"

namespace phasor::testing {

// Field-by-field equality of two rankings (doubles compared exactly).
inline void ExpectRankingsEqual(const placer::Ranking& x, const placer::Ranking& y) {
  ASSERT_EQ(x.ranked.size(), y.ranked.size());
  for (size_t i = 0; i < x.ranked.size(); ++i) {
    const placer::RankedCandidate& a = x.ranked[i];
    const placer::RankedCandidate& b = y.ranked[i];
    EXPECT_EQ(a.candidate, b.candidate);
    EXPECT_EQ(a.score, b.score);
    EXPECT_EQ(a.min_link_score, b.min_link_score);
    EXPECT_EQ(a.cycle, b.cycle);
    EXPECT_EQ(a.exact, b.exact);
    EXPECT_EQ(a.shifts_us, b.shifts_us);
    ASSERT_EQ(a.links.size(), b.links.size());
    for (size_t k = 0; k < a.links.size(); ++k) {
      EXPECT_EQ(a.links[k].id, b.links[k].id);
      EXPECT_EQ(a.links[k].score, b.links[k].score);
      EXPECT_EQ(a.links[k].optimal_score, b.links[k].optimal_score);
      EXPECT_EQ(a.links[k].capacity_gbps, b.links[k].capacity_gbps);
      EXPECT_EQ(a.links[k].jobs, b.links[k].jobs);
      EXPECT_EQ(a.links[k].quantum_us, b.links[k].quantum_us);
      EXPECT_EQ(a.links[k].circle_bins, b.links[k].circle_bins);
      EXPECT_EQ(a.links[k].exact, b.links[k].exact);
      EXPECT_EQ(a.links[k].rounding_error_us, b.links[k].rounding_error_us);
    }
  }
  ASSERT_EQ(x.rejected.size(), y.rejected.size());
  for (size_t i = 0; i < x.rejected.size(); ++i) {
    EXPECT_EQ(x.rejected[i].candidate, y.rejected[i].candidate);
    EXPECT_EQ(x.rejected[i].reason, y.rejected[i].reason);
  }
}

}  // namespace phasor::testing

#endif  // PHASOR_TESTS_TESTING_RANKINGS_H_
