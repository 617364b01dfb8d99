// Issue 12: no input crashes, hangs or exhausts the placer. The three crashes
// found from outside, the input ranges and the per-request limits.
#include <cmath>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/link_score.h"
#include "placer/rank_json.h"
#include "placer/ranker.h"
#include "placer/traffic_profile.h"

namespace phasor::placer {
namespace rank_safety_test {
namespace {

constexpr uint32_t kU32Max = std::numeric_limits<uint32_t>::max();

TrafficProfile Square(uint32_t period_us, uint32_t up_us, double gbps) {
  TrafficProfile p;
  p.period_us = period_us;
  p.square = SquareWave{.up_us = up_us, .up_gbps = gbps, .start_us = 0, .down_gbps = 0};
  return p;
}

// Two jobs on one link, candidate c0.
RankRequest TwoJobs(const TrafficProfile& a, const TrafficProfile& b, double cap = 50) {
  RankRequest r;
  r.links.push_back({.id = "l", .capacity_gbps = cap});
  r.jobs.push_back({.id = "a", .profile = a, .pinned_shift_us = {}});
  r.jobs.push_back({.id = "b", .profile = b, .pinned_shift_us = {}});
  r.candidates.push_back({.id = "c0", .links = {{"a", {{"l", 1.0}}}, {"b", {{"l", 1.0}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  return r;
}

// --- The three crashes of issue 12 -----------------------------------------

// Was SIGFPE: the nearest multiple of the quantum wrapped in 32 bits to 705,
// 705 / 1000 = 0 bins, and the circle divided by it.
TEST(RankSafetyTest, QuantizedPeriodNearUint32MaxDoesNotWrap) {
  EXPECT_EQ(QuantizedPeriodUs(kU32Max, 1000), 4'294'967'000u);
  EXPECT_EQ(QuantizedPeriodUs(kU32Max, kU32Max), kU32Max);
  EXPECT_EQ(QuantizedPeriodUs(kU32Max, kU32Max - 1), kU32Max - 1);
  EXPECT_EQ(QuantizedPeriodUs(3'600'000'000, 2'400'000'000), 2'400'000'000u);  // 4.8e9 would wrap
  EXPECT_EQ(QuantizedPeriodUs(5, 0), 5u);  // a quantum of 0 counts as 1
  EXPECT_EQ(QuantizedPeriodUs(200'000, 1000), 200'000u);  // unchanged where it fits
  EXPECT_EQ(QuantizedPeriodUs(1'499, 1000), 1000u);
  EXPECT_EQ(QuantizedPeriodUs(1'500, 1000), 2000u);
}

TEST(RankSafetyTest, PeriodOrQuantumNearUint32MaxIsRejectedNamingTheField) {
  RankRequest r = TwoJobs(Square(kU32Max, 1000, 10), Square(200'000, 1000, 10));
  EXPECT_EQ(ValidateRankRequest(r),
            absl::InvalidArgumentError("jobs[0].profile.period_us: 4294967295 is outside 1..3600000000"));
  r = TwoJobs(Square(200'000, 1000, 10), Square(200'000, 1000, 10));
  r.options.circle.quantum_us = kU32Max;
  EXPECT_EQ(ValidateRankRequest(r),
            absl::InvalidArgumentError("options.quantum_us: 4294967295 is outside 1..3600000000"));
}

// The largest legal period with a quantum whose nearest multiple passes 2^32.
TEST(RankSafetyTest, LongestPeriodWithHugeQuantumRanks) {
  RankRequest r = TwoJobs(Square(3'600'000'000, 1'000'000'000, 40), Square(3'599'999'999, 1'000'000'000, 40));
  r.options.circle.quantum_us = 2'400'000'000;
  ASSERT_TRUE(ValidateRankRequest(r).ok());
  absl::StatusOr<Ranking> ranking = RankWithin(r, RankLimits{});
  ASSERT_TRUE(ranking.ok()) << ranking.status();
  ASSERT_EQ(ranking->ranked.size(), 1u);
  const LinkResult& link = ranking->ranked[0].links.at(0);
  EXPECT_EQ(link.quantum_us, 2'400'000'000u);
  EXPECT_EQ(link.circle_bins, 1u);
  EXPECT_TRUE(std::isfinite(ranking->ranked[0].score));
}

// Was SIGSEGV: up_gbps near DBL_MAX made the load infinite, the solver found
// no shifts and the ranker indexed the empty solution.
TEST(RankSafetyTest, DemandNearDblMaxIsRejectedNamingTheField) {
  const RankRequest r = TwoJobs(Square(200'000, 90'000, 1.7e308), Square(200'000, 80'000, 40));
  EXPECT_EQ(ValidateRankRequest(r),
            absl::InvalidArgumentError("jobs[0].profile.square.up_gbps: 1.7e+308 is outside 0..1e+06"));
}

TEST(RankSafetyTest, LargestDemandsOnSmallestCapacityGiveFiniteScores) {
  RankRequest r = TwoJobs(Square(200'000, 150'000, kMaxGbps), Square(200'000, 150'000, kMaxGbps),
                          kMinCapacityGbps);
  ASSERT_TRUE(ValidateRankRequest(r).ok());
  absl::StatusOr<Ranking> ranking = RankWithin(r, RankLimits{});
  ASSERT_TRUE(ranking.ok()) << ranking.status();
  ASSERT_EQ(ranking->ranked.size(), 1u);
  const RankedCandidate& c = ranking->ranked[0];
  EXPECT_TRUE(std::isfinite(c.score));
  ASSERT_EQ(c.shifts_us.size(), 2u);
  // At best 100 ms of overlap at 2e6 Gbit/s and 100 ms of one job at 1e6.
  const double cap = kMinCapacityGbps;
  EXPECT_NEAR(c.score, 1.0 - (0.5 * (2 * kMaxGbps - cap) + 0.5 * (kMaxGbps - cap)) / cap, 1.0);
}

// Was out of memory (17.6 GB): a 1 us quantum with periods near 2^32 us.
// Within the ranges the circle coarsens to max_bins; asking for a circle of
// 2^32 bins is over the limit, answered before anything is allocated.
TEST(RankSafetyTest, MicrosecondQuantumWithHourLongPeriodsStaysWithinMaxBins) {
  RankRequest r = TwoJobs(Square(3'600'000'000, 1'000'000'000, 40), Square(3'599'999'999, 900'000'000, 40));
  r.options.circle.quantum_us = 1;
  absl::StatusOr<Ranking> ranking = RankWithin(r, RankLimits{});
  ASSERT_TRUE(ranking.ok()) << ranking.status();
  ASSERT_EQ(ranking->ranked.size(), 1u);
  EXPECT_LE(ranking->ranked[0].links.at(0).circle_bins, r.options.circle.max_bins);

  r.options.circle.max_bins = uint64_t{1} << 32;
  EXPECT_EQ(RankWithin(r, RankLimits{}).status(),
            absl::ResourceExhaustedError("options.max_bins: 4294967296 exceeds the limit max_job_bins (1048576)"));
}

// --- Ranges -------------------------------------------------------------

struct BadField {
  std::string name;
  std::function<void(RankRequest&)> mutate;
  std::string message;
};

class RankRangeTest : public ::testing::TestWithParam<BadField> {};

TEST_P(RankRangeTest, OutOfRangeIsInvalidArgumentNamingTheField) {
  RankRequest r = TwoJobs(Square(200'000, 90'000, 45), Square(200'000, 80'000, 40));
  ASSERT_TRUE(ValidateRankRequest(r).ok());
  GetParam().mutate(r);
  EXPECT_EQ(ValidateRankRequest(r), absl::InvalidArgumentError(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Fields, RankRangeTest,
    ::testing::Values(
        BadField{"CapacityAboveMax", [](RankRequest& r) { r.links[0].capacity_gbps = 2e6; },
                 "links[0].capacity_gbps: 2e+06 is outside 0.001..1e+06"},
        BadField{"CapacityBelowMin", [](RankRequest& r) { r.links[0].capacity_gbps = 1e-300; },
                 "links[0].capacity_gbps: 1e-300 is outside 0.001..1e+06"},
        BadField{"DownGbpsAboveMax", [](RankRequest& r) { r.jobs[1].profile.square->down_gbps = 1e7; },
                 "jobs[1].profile.square.down_gbps: 1e+07 is outside 0..1e+06"},
        BadField{"BinAboveMax",
                 [](RankRequest& r) {
                   r.jobs[0].profile = TrafficProfile{.period_us = 2000, .bin_us = 1000, .gbps = {1, 3e6}, .square = {}, .t0_epoch_us = {}};
                 },
                 "jobs[0].profile.gbps[1]: 3e+06 is outside 0..1e+06"},
        BadField{"EpochNegative", [](RankRequest& r) { r.jobs[0].profile.t0_epoch_us = -1; },
                 "jobs[0].profile.t0_epoch_us: -1 is outside 0..9007199254740992"},
        BadField{"EpochTooLate",
                 [](RankRequest& r) { r.jobs[0].profile.t0_epoch_us = std::numeric_limits<int64_t>::max(); },
                 "jobs[0].profile.t0_epoch_us: 9223372036854775807 is outside 0..9007199254740992"},
        BadField{"MaxBinsAbove2To32", [](RankRequest& r) { r.options.circle.max_bins = (uint64_t{1} << 32) + 1; },
                 "options.max_bins: 4294967297 is outside 1..4294967296"},
        BadField{"RestartsAboveMax", [](RankRequest& r) { r.options.solver.restarts = 1001; },
                 "options.restarts: 1001 is outside 0..1000"},
        BadField{"SweepsAboveMax", [](RankRequest& r) { r.options.solver.max_sweeps = kU32Max; },
                 "options.max_sweeps: 4294967295 is outside 0..1000"},
        BadField{"JointSweepsAboveMax", [](RankRequest& r) { r.options.joint.max_sweeps = 1001; },
                 "options.joint_max_sweeps: 1001 is outside 0..1000"},
        BadField{"SpanningTreesAboveMax", [](RankRequest& r) { r.options.joint.max_spanning_trees = kU32Max; },
                 "options.max_spanning_trees: 4294967295 is outside 0..1000000"}),
    [](const ::testing::TestParamInfo<BadField>& param_info) { return param_info.param.name; });

TEST(RankJsonSafetyTest, IssueInputsAreOneLineErrors) {
  const std::string period = R"({"links": [{"id": "l", "capacity_gbps": 50}],
    "jobs": [{"id": "a", "profile": {"period_us": 4294967295, "square": {"up_us": 1, "up_gbps": 1}}}],
    "candidates": []})";
  EXPECT_EQ(ParseRankRequest(period).status(),
            absl::InvalidArgumentError("jobs[0].profile.period_us: 4294967295 is outside 1..3600000000"));
  const std::string gbps = R"({"links": [{"id": "l", "capacity_gbps": 50}],
    "jobs": [{"id": "a", "profile": {"period_us": 1000, "square": {"up_us": 1, "up_gbps": 1.7e308}}}],
    "candidates": []})";
  EXPECT_EQ(ParseRankRequest(gbps).status(),
            absl::InvalidArgumentError("jobs[0].profile.square.up_gbps: 1.7e+308 is outside 0..1e+06"));
}

// Was undefined behaviour: 2^64 as a double passed "<= double(UINT64_MAX)"
// (which rounds up to 2^64) and was converted to uint64_t.
TEST(RankJsonSafetyTest, FloatJustPastUint64IsRejectedBeforeTheCast) {
  EXPECT_EQ(ParseRankRequest(R"({"jobs": [], "candidates": [], "options": {"seed": 18446744073709551616.0}})")
                .status(),
            absl::InvalidArgumentError("options.seed: must be a non-negative integer, got 1.8446744073709552e+19"));
  absl::StatusOr<RankRequest> r =
      ParseRankRequest(R"({"jobs": [], "candidates": [], "options": {"seed": 9007199254740992.0}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->options.solver.seed, 9007199254740992u);
}

// --- Limits -------------------------------------------------------------

TEST(RankLimitsTest, EachLimitIsResourceExhaustedNamingIt) {
  const RankRequest base = TwoJobs(Square(200'000, 90'000, 45), Square(200'000, 80'000, 40));
  ASSERT_TRUE(CheckRankLimits(base, RankLimits{}).ok());

  RankLimits limits;
  limits.max_candidates = 0;
  EXPECT_EQ(CheckRankLimits(base, limits),
            absl::ResourceExhaustedError("candidates: 1 exceeds the limit max_candidates (0)"));

  limits = {};
  limits.max_jobs_x_links = 1;
  EXPECT_EQ(CheckRankLimits(base, limits),
            absl::ResourceExhaustedError("jobs x links: 2 x 1 exceed the limit max_jobs_x_links (1)"));

  limits = {};
  limits.max_job_bins = 1000;
  EXPECT_EQ(CheckRankLimits(base, limits),
            absl::ResourceExhaustedError("options.max_bins: 65536 exceeds the limit max_job_bins (1000)"));

  RankRequest array = base;
  array.jobs[0].profile = TrafficProfile{
      .period_us = 2000, .bin_us = 1, .gbps = std::vector<double>(2000, 1.0), .square = {}, .t0_epoch_us = {}};
  array.options.circle.max_bins = 1000;
  limits = {};
  limits.max_job_bins = 1000;
  EXPECT_EQ(CheckRankLimits(array, limits),
            absl::ResourceExhaustedError("jobs[0].profile.gbps bins: 2000 exceeds the limit max_job_bins (1000)"));

  // Two jobs of 200 bins on a 65536-bin circle: 2 x 65536 + 2 x 200 bins.
  limits = {};
  limits.max_link_bins = 100'000;
  EXPECT_EQ(CheckRankLimits(base, limits),
            absl::ResourceExhaustedError("candidates[0].links (link 'l'): up to 131472 bins for 2 jobs "
                                         "exceed the limit max_link_bins (100000)"));

  RankRequest budget = base;
  budget.options.solver.exact_max_evaluations = uint64_t{1} << 40;
  EXPECT_EQ(CheckRankLimits(budget, RankLimits{}),
            absl::ResourceExhaustedError("options.exact_max_evaluations: 1099511627776 exceeds the limit "
                                         "max_evaluations (100000000)"));
  budget = base;
  budget.options.joint.max_evaluations = 2'000'000'000;
  EXPECT_EQ(CheckRankLimits(budget, RankLimits{}),
            absl::ResourceExhaustedError("options.joint_max_evaluations: 2000000000 exceeds the limit "
                                         "max_evaluations (100000000)"));
}

TEST(RankLimitsTest, JobsAndLinksProductCannotWrap) {
  RankRequest r;
  r.links.resize(3);
  r.jobs.resize(2);
  RankLimits limits;
  limits.max_jobs_x_links = 5;
  EXPECT_EQ(CheckRankLimits(r, limits),
            absl::ResourceExhaustedError("jobs x links: 2 x 3 exceed the limit max_jobs_x_links (5)"));
}

TEST(RankLimitsTest, OneJobOnALinkIsNotContended) {
  RankRequest r = TwoJobs(Square(200'000, 90'000, 45), Square(200'000, 80'000, 40));
  r.candidates[0].links["b"] = {{"l", 0.0}};  // b does not cross l
  RankLimits limits;
  limits.max_link_bins = 1;
  EXPECT_TRUE(CheckRankLimits(r, limits).ok());
}

// The per-link counts start again at each candidate: a and b alone on l in
// two different candidates never make l contended, while both on l in a
// third do (and a link no request link defines is counted by its name).
TEST(RankLimitsTest, LinkCountsAreKeptPerCandidate) {
  RankRequest r = TwoJobs(Square(200'000, 90'000, 45), Square(200'000, 80'000, 40));
  r.candidates = {{.id = "c0", .links = {{"a", {{"l", 1.0}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false},
                  {.id = "c1", .links = {{"b", {{"l", 1.0}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false},
                  {.id = "c2", .links = {{"a", {{"x", 1.0}}}, {"b", {{"l", 1.0}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false}};
  RankLimits limits;
  limits.max_link_bins = 1;
  EXPECT_TRUE(CheckRankLimits(r, limits).ok());
  r.candidates.push_back({.id = "c3", .links = {{"a", {{"x", 1.0}}}, {"b", {{"x", 0.5}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  EXPECT_EQ(CheckRankLimits(r, limits),
            absl::ResourceExhaustedError("candidates[3].links (link 'x'): up to 131472 bins for 2 jobs "
                                         "exceed the limit max_link_bins (1)"));
  r.candidates.push_back(r.candidates[3]);
  r.candidates[3].links["b"] = {{"l", 1.0}};
  EXPECT_EQ(CheckRankLimits(r, limits),
            absl::ResourceExhaustedError("candidates[4].links (link 'x'): up to 131472 bins for 2 jobs "
                                         "exceed the limit max_link_bins (1)"));
}

TEST(RankLimitsTest, DeadlineStopsTheRequestWithResourceExhausted) {
  const RankRequest r = TwoJobs(Square(200'000, 90'000, 45), Square(200'000, 80'000, 40));
  // A clock that moves 1 s per reading: the first check after the start is late.
  absl::Time t = absl::UnixEpoch();
  auto clock = [&t] {
    t += absl::Seconds(1);
    return t;
  };
  RankLimits limits;
  limits.deadline_ms = 500;
  EXPECT_EQ(RankWithin(r, limits, clock).status(),
            absl::ResourceExhaustedError(
                "deadline_ms: the request did not finish within the limit deadline_ms (500)"));
  // A still clock: the same request ranks as Rank does.
  absl::StatusOr<Ranking> ranking = RankWithin(r, limits, [] { return absl::UnixEpoch(); });
  ASSERT_TRUE(ranking.ok());
  EXPECT_EQ(ranking->ranked.at(0).score, Rank(r).ranked.at(0).score);
  EXPECT_EQ(ranking->ranked.at(0).shifts_us, Rank(r).ranked.at(0).shifts_us);
}

}  // namespace
}  // namespace rank_safety_test
}  // namespace phasor::placer
