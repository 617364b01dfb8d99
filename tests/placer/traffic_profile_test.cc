#include "placer/traffic_profile.h"

#include <numeric>
#include <ostream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace phasor::placer {
namespace traffic_profile_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TrafficProfile Array(uint32_t period_us, uint32_t bin_us, std::vector<double> gbps) {
  TrafficProfile p;
  p.period_us = period_us;
  p.bin_us = bin_us;
  p.gbps = std::move(gbps);
  return p;
}

TrafficProfile Square(uint32_t period_us, SquareWave s) {
  TrafficProfile p;
  p.period_us = period_us;
  p.square = s;
  return p;
}

double Bytes(const QuantizedProfile& q) {
  return std::accumulate(q.gbps.begin(), q.gbps.end(), 0.0) * q.quantum_us;
}

TEST(QuantizedPeriodTest, RoundsToNearestMultipleAndNeverBelowOneQuantum) {
  EXPECT_EQ(QuantizedPeriodUs(200000, 1000), 200000u);
  EXPECT_EQ(QuantizedPeriodUs(200499, 1000), 200000u);
  EXPECT_EQ(QuantizedPeriodUs(200500, 1000), 201000u);
  EXPECT_EQ(QuantizedPeriodUs(300, 1000), 1000u);
  EXPECT_EQ(QuantizedPeriodUs(1, 1000), 1000u);
}

TEST(QuantizeTest, SameBinWidthIsIdentity) {
  const QuantizedProfile q = Quantize(Array(3000, 1000, {40, 40, 0}), 1000);
  EXPECT_EQ(q.period_us, 3000u);
  EXPECT_EQ(q.rounding_error_us, 0);
  EXPECT_THAT(q.gbps, ElementsAre(40, 40, 0));
}

TEST(QuantizeTest, FineBinsAverageIntoQuanta) {
  const QuantizedProfile q = Quantize(Array(4000, 500, {10, 30, 0, 0, 8, 8, 4, 0}), 1000);
  EXPECT_THAT(q.gbps, ElementsAre(20, 0, 8, 2));
}

TEST(QuantizeTest, CoarseBinsSplitAcrossQuanta) {
  const QuantizedProfile q = Quantize(Array(4000, 2000, {10, 30}), 1000);
  EXPECT_THAT(q.gbps, ElementsAre(10, 10, 30, 30));
}

TEST(QuantizeTest, ShareScalesDemand) {
  const QuantizedProfile q = Quantize(Array(2000, 1000, {40, 10}), 1000, 0.25);
  EXPECT_THAT(q.gbps, ElementsAre(10, 2.5));
}

TEST(QuantizeTest, PartialLastBinCoversOnlyTheRestOfThePeriod) {
  // period 2500 with 1000 us bins: the last bin is 500 us long.
  const TrafficProfile p = Array(2500, 1000, {10, 10, 40});
  ASSERT_TRUE(ValidateProfile(p).ok());
  const QuantizedProfile q = Quantize(p, 500);
  EXPECT_THAT(q.gbps, ElementsAre(10, 10, 10, 10, 40));
}

TEST(QuantizeTest, RoundedPeriodPreservesBytesPerIteration) {
  // 2400 us rounds down to 2000 us: bytes are kept, the iteration is squeezed.
  const TrafficProfile p = Array(2400, 800, {30, 0, 15});
  const QuantizedProfile q = Quantize(p, 1000);
  EXPECT_EQ(q.period_us, 2000u);
  EXPECT_EQ(q.rounding_error_us, -400);
  ASSERT_EQ(q.gbps.size(), 2u);
  // Source [0,1200) -> bin 0: 800*30 + 400*0 = 24000; [1200,2400) -> 400*0 + 800*15 = 12000.
  EXPECT_DOUBLE_EQ(q.gbps[0], 24.0);
  EXPECT_DOUBLE_EQ(q.gbps[1], 12.0);
  EXPECT_DOUBLE_EQ(Bytes(q), MeanGbps(p) * p.period_us);
}

TEST(QuantizeTest, SquareWaveIsExactAtQuantumBoundaries) {
  const QuantizedProfile q = Quantize(Square(5000, {.up_us = 2000, .up_gbps = 50}), 1000);
  EXPECT_THAT(q.gbps, ElementsAre(50, 50, 0, 0, 0));
}

TEST(QuantizeTest, SquareWaveBetweenBoundariesIsAveraged) {
  const QuantizedProfile q =
      Quantize(Square(4000, {.up_us = 1500, .up_gbps = 40, .start_us = 500}), 1000);
  EXPECT_THAT(q.gbps, ElementsAre(20, 40, 0, 0));
}

TEST(QuantizeTest, SquareWaveWrapsAroundThePeriod) {
  const QuantizedProfile q = Quantize(
      Square(4000, {.up_us = 2000, .up_gbps = 40, .start_us = 3000, .down_gbps = 1}), 1000);
  EXPECT_THAT(q.gbps, ElementsAre(40, 1, 1, 40));
}

TEST(SegmentsTest, SquareWaveSegmentsCoverThePeriod) {
  const auto segs = Segments(Square(10, {.up_us = 4, .up_gbps = 2, .start_us = 8}));
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs.front().begin_us, 0);
  EXPECT_EQ(segs.back().end_us, 10);
  EXPECT_DOUBLE_EQ(MeanGbps(Square(10, {.up_us = 4, .up_gbps = 2, .start_us = 8})), 0.8);
}

TEST(ValidateProfileTest, AcceptsBothForms) {
  EXPECT_TRUE(ValidateProfile(Array(3000, 1000, {1, 2, 3})).ok());
  EXPECT_TRUE(ValidateProfile(Square(3000, {.up_us = 1000, .up_gbps = 5})).ok());
}

struct BadProfile {
  const char* name;
  TrafficProfile profile;
  const char* field;
};
// gtest shows a case by its name, not its bytes.
void PrintTo(const BadProfile& c, std::ostream* os) { *os << c.name; }

class ValidateProfileBadTest : public ::testing::TestWithParam<BadProfile> {};

TEST_P(ValidateProfileBadTest, NamesTheField) {
  const absl::Status status = ValidateProfile(GetParam().profile);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr(GetParam().field));
}

INSTANTIATE_TEST_SUITE_P(
    All, ValidateProfileBadTest,
    ::testing::Values(
        BadProfile{"PeriodZero", Array(0, 1000, {1}), "period_us"},
        BadProfile{"BinZero", Array(1000, 0, {1}), "bin_us"},
        BadProfile{"Empty", Array(1000, 1000, {}), "gbps"},
        BadProfile{"WrongBinCount", Array(3000, 1000, {1, 2}), "gbps"},
        BadProfile{"Negative", Array(2000, 1000, {1, -2}), "gbps[1]"},
        BadProfile{"NaN", Array(2000, 1000, {std::nan(""), 1}), "gbps[0]"},
        BadProfile{"UpTooLong", Square(1000, {.up_us = 2000, .up_gbps = 1}), "square.up_us"},
        BadProfile{"StartOutside", Square(1000, {.up_us = 10, .up_gbps = 1, .start_us = 1000}),
                   "square.start_us"},
        BadProfile{"NegativeUp", Square(1000, {.up_us = 10, .up_gbps = -1}), "square.up_gbps"},
        BadProfile{"NegativeDown",
                   Square(1000, {.up_us = 10, .up_gbps = 1, .start_us = 0, .down_gbps = -1}),
                   "square.down_gbps"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace traffic_profile_test
}  // namespace phasor::placer
