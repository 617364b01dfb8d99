// The ranking path's replies, pinned: every field of every reply and the
// default ranking policy's decision (tests/testing/rank_corpus.h's digest)
// for the benchmarks' requests and 400 small ones of every kind, as the
// ranking path of commit 035f093 answered them, before it was made faster.
// A change that means to change a reply updates these values in the same
// commit and says why; bench/regress.sh compares any two commits the same way.
#include "gtest/gtest.h"
#include "tests/testing/rank_corpus.h"

namespace phasor::testing {
namespace rank_golden_test {
namespace {

TEST(RankGoldenTest, TheBenchmarksRequestsAreAnsweredAsBefore) {
  EXPECT_EQ(RankAndPolicyDigest(ArrivalInstance(42, false)), 0x62fa6f8721a88485ULL);
  EXPECT_EQ(RankAndPolicyDigest(ArrivalInstance(42, true)), 0x755578ee059b97f7ULL);
  placer::RankRequest depth_first = ArrivalInstance(42, false);
  depth_first.options.solver.pair_bounds = false;
  EXPECT_EQ(RankAndPolicyDigest(depth_first), 0xf41bdfd0beb1a260ULL);
  EXPECT_EQ(RankAndPolicyDigest(ShuffledInstance(42)), 0x9965bc001a5271efULL);
}

TEST(RankGoldenTest, SmallRequestsOfEveryKindAreAnsweredAsBefore) {
  Digest all;
  for (uint64_t i = 0; i < 400; ++i) all.Add(RankAndPolicyDigest(SmallInstance(i)));
  EXPECT_EQ(all.value(), 0x0976c6d507980db8ULL);
}

}  // namespace
}  // namespace rank_golden_test
}  // namespace phasor::testing
