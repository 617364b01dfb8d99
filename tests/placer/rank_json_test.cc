#include "placer/rank_json.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace phasor::placer {
namespace rank_json_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The input example of SPEC section 5.
constexpr const char* kSpecExample = R"({
  "links": [ {"id": "tor1-up", "capacity_gbps": 50.0} ],
  "jobs": [ {"id": "a", "profile": {"period_us": 200000, "bin_us": 1000, "gbps": [40.0, 40.0, 0.0]}},
            {"id": "b", "profile": {"period_us": 300000, "square": {"up_us": 90000, "up_gbps": 40.0}},
             "pinned_shift_us": 12000} ],
  "candidates": [ {"id": "c0", "links": {"a": {"tor1-up": 1.0}, "b": {"tor1-up": 1.0}}} ],
  "options": {"quantum_us": 1000, "max_bins": 65536} })";

TEST(RankJsonTest, ParsesTheSpecExampleExceptItsShortGbpsArray) {
  // The example's `gbps` has 3 bins for a 200 ms period of 1 ms bins: the
  // parser insists on ceil(period / bin) values and says so.
  auto r = ParseRankRequest(kSpecExample);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), StartsWith("jobs[0].profile.gbps: has 3 bins"));
}

TEST(RankJsonTest, ParsesAValidRequestFully) {
  nlohmann::json doc = nlohmann::json::parse(kSpecExample);
  doc["jobs"][0]["profile"]["period_us"] = 3000;
  doc["jobs"][0]["profile"]["t0_epoch_us"] = 1732870000000000;
  auto r = RankRequestFromJson(doc);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->links.size(), 1u);
  EXPECT_EQ(r->links[0].id, "tor1-up");
  EXPECT_EQ(r->links[0].capacity_gbps, 50.0);
  ASSERT_EQ(r->jobs.size(), 2u);
  EXPECT_EQ(r->jobs[0].profile.gbps, (std::vector<double>{40, 40, 0}));
  EXPECT_EQ(r->jobs[0].profile.t0_epoch_us, 1732870000000000);
  ASSERT_TRUE(r->jobs[1].profile.square.has_value());
  EXPECT_EQ(r->jobs[1].profile.square->up_us, 90000u);
  EXPECT_EQ(r->jobs[1].pinned_shift_us, 12000u);
  EXPECT_EQ(r->candidates[0].links.at("b").at("tor1-up"), 1.0);
  EXPECT_EQ(r->options.circle.max_bins, 65536u);
}

// Regression (placer_rank_json_fuzz, bench/fuzz.sh): a number too large for
// a double made the re-parse (for the error position) throw out_of_range,
// which nothing caught: `phasor rank` ended in std::terminate.
TEST(RankJsonTest, RegressionANumberOverflowIsMalformedJson) {
  absl::StatusOr<RankRequest> r = ParseRankRequest(R"({"links": [{"id": "l", "capacity_gbps": 1.1e1111}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("malformed JSON ("));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("number overflow parsing '1.1e1111'"));
}

TEST(RankJsonTest, OutputUsesTheContractsFieldNames) {
  nlohmann::json doc = nlohmann::json::parse(kSpecExample);
  doc["jobs"][0]["profile"]["period_us"] = 3000;
  doc["candidates"].push_back({{"id", "c3"}, {"links", {{"z", {{"tor1-up", 1.0}}}}}});
  auto r = RankRequestFromJson(doc);
  ASSERT_TRUE(r.ok()) << r.status();
  const nlohmann::ordered_json out = RankingToJson(Rank(*r));
  ASSERT_EQ(out["ranked"].size(), 1u);
  const auto& c = out["ranked"][0];
  std::vector<std::string> keys;
  for (const auto& [k, v] : c.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"candidate", "score", "min_link_score", "cycle", "exact",
                                            "shifts_us", "links"}));
  EXPECT_EQ(c["shifts_us"]["b"], 12000);  // pinned
  const auto& l = c["links"][0];
  EXPECT_EQ(l["id"], "tor1-up");
  EXPECT_EQ(l["jobs"], nlohmann::ordered_json({"a", "b"}));
  EXPECT_EQ(l["quantum_us"], 1000);
  EXPECT_TRUE(l.contains("score"));
  EXPECT_EQ(out["rejected"][0]["candidate"], "c3");
  EXPECT_EQ(out["rejected"][0]["reason"], "job 'z' is not defined");
}

TEST(RankJsonTest, ProfileRoundTrips) {
  TrafficProfile p;
  p.period_us = 2500;
  p.bin_us = 1000;
  p.gbps = {1.5, 0, 7};
  p.t0_epoch_us = 42;
  auto back = TrafficProfileFromJson(nlohmann::json::parse(TrafficProfileToJson(p).dump()), "p");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->period_us, p.period_us);
  EXPECT_EQ(back->gbps, p.gbps);
  EXPECT_EQ(back->t0_epoch_us, 42);
  TrafficProfile s;
  s.period_us = 100;
  s.square = SquareWave{.up_us = 10, .up_gbps = 3, .start_us = 90, .down_gbps = 0.5};
  auto sback = TrafficProfileFromJson(nlohmann::json::parse(TrafficProfileToJson(s).dump()), "p");
  ASSERT_TRUE(sback.ok()) << sback.status();
  EXPECT_EQ(sback->square->start_us, 90u);
  EXPECT_EQ(sback->square->down_gbps, 0.5);
}

struct BadJson {
  const char* name;
  const char* patch;  // merged into a valid request (JSON merge patch), or raw text when not JSON
  const char* message_start;
};
// gtest shows a case by its name, not its bytes.
void PrintTo(const BadJson& c, std::ostream* os) { *os << c.name; }

class RankJsonBadTest : public ::testing::TestWithParam<BadJson> {};

constexpr const char* kValid = R"({
  "links": [{"id": "l", "capacity_gbps": 50}],
  "jobs": [{"id": "a", "profile": {"period_us": 3000, "bin_us": 1000, "gbps": [40, 40, 0]}}],
  "candidates": [{"id": "c0", "links": {"a": {"l": 1.0}}}]})";

TEST_P(RankJsonBadTest, NamesTheField) {
  std::string text = GetParam().patch;
  nlohmann::json patch = nlohmann::json::parse(text, nullptr, false);
  if (!patch.is_discarded()) {
    nlohmann::json doc = nlohmann::json::parse(kValid);
    doc.merge_patch(patch);
    text = doc.dump();
  }
  auto r = ParseRankRequest(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), StartsWith(GetParam().message_start));
}

INSTANTIATE_TEST_SUITE_P(
    All, RankJsonBadTest,
    ::testing::Values(
        BadJson{"Malformed", "{\"links\": [", "input: malformed JSON"},
        BadJson{"NotObject", "[1, 2]", "input: must be a JSON object"},
        BadJson{"MissingJobs", R"({"jobs": null})", "jobs: is required"},
        BadJson{"LinksNotArray", R"({"links": {"id": "l"}})", "links: must be an array"},
        BadJson{"NegativeCapacity", R"({"links": [{"id": "l", "capacity_gbps": -1}]})",
                "links[0].capacity_gbps: must be > 0"},
        BadJson{"CapacityString", R"({"links": [{"id": "l", "capacity_gbps": "fast"}]})",
                "links[0].capacity_gbps: must be a number"},
        BadJson{"EmptyProfile", R"({"jobs": [{"id": "a", "profile": {"period_us": 3000}}]})",
                "jobs[0].profile: the profile is empty"},
        BadJson{"EmptyGbps",
                R"({"jobs": [{"id": "a", "profile": {"period_us": 3000, "bin_us": 1000, "gbps": []}}]})",
                "jobs[0].profile.gbps: the profile is empty"},
        BadJson{"PeriodZero",
                R"({"jobs": [{"id": "a", "profile": {"period_us": 0, "bin_us": 1000, "gbps": [1]}}]})",
                "jobs[0].profile.period_us"},
        BadJson{"PeriodNegative",
                R"({"jobs": [{"id": "a", "profile": {"period_us": -5, "bin_us": 1000, "gbps": [1]}}]})",
                "jobs[0].profile.period_us: must be >= 0"},
        BadJson{"PeriodFraction",
                R"({"jobs": [{"id": "a", "profile": {"period_us": 1.5, "bin_us": 1000, "gbps": [1]}}]})",
                "jobs[0].profile.period_us: must be a non-negative integer"},
        BadJson{"NegativeDemand",
                R"({"jobs": [{"id": "a", "profile": {"period_us": 2000, "bin_us": 1000, "gbps": [1, -1]}}]})",
                "jobs[0].profile.gbps[1]"},
        BadJson{"BothForms",
                R"({"jobs": [{"id": "a", "profile": {"period_us": 2000, "bin_us": 1000, "gbps": [1, 1], "square": {"up_us": 1, "up_gbps": 1}}}]})",
                "jobs[0].profile: give either gbps or square"},
        BadJson{"SquareMissingUp",
                R"({"jobs": [{"id": "a", "profile": {"period_us": 2000, "square": {"up_gbps": 1}}}]})",
                "jobs[0].profile.square.up_us: is required"},
        BadJson{"ShareNegative", R"({"candidates": [{"id": "c0", "links": {"a": {"l": -1.2}}}]})",
                "candidates[0].links.a.l: share must be in 0..65536, got -1.2"},
        BadJson{"SharePastEveryRing", R"({"candidates": [{"id": "c0", "links": {"a": {"l": 1e9}}}]})",
                "candidates[0].links.a.l: share must be in 0..65536, got 1e+09"},
        BadJson{"ShareNotNumber", R"({"candidates": [{"id": "c0", "links": {"a": {"l": "all"}}}]})",
                "candidates[0].links.a.l: must be a number"},
        BadJson{"CandidateWithoutPlacement", R"({"candidates": [{"id": "c0"}]})",
                "candidates[0]: needs \"links\""},
        BadJson{"MissingJobId", R"({"jobs": [{"profile": {"period_us": 1000, "bin_us": 1000, "gbps": [1]}}]})",
                "jobs[0].id: is required"},
        BadJson{"PinnedBeyondPeriod", R"({"jobs": [{"id": "a", "pinned_shift_us": 3000, "profile": {"period_us": 3000, "bin_us": 1000, "gbps": [1, 1, 1]}}]})",
                "jobs[0].pinned_shift_us"},
        BadJson{"UnknownOption", R"({"options": {"quantum": 5}})", "options.quantum: unknown option"},
        BadJson{"QuantumZero", R"({"options": {"quantum_us": 0}})", "options.quantum_us: must be > 0"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace rank_json_test
}  // namespace phasor::placer
