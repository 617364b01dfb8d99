// Reading the diagnosis inputs: profile lines, placement files, routing.
#include "diagnose/inputs.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace phasor::diagnose {
namespace inputs_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kLeafSpine = std::string(PHASOR_SOURCE_DIR) + "/data/examples/leaf_spine.yaml";

const char kLines[] =
    R"({"subject": "a", "source": "pcap:x", "periodic": true, "profile": {"period_us": 4000, "bin_us": 1000, "gbps": [80, 80, 0, 0], "t0_epoch_us": 1000}, "confidence": 0.9}

{"stats": {"final": true, "packets": 3}}
{"subject": "10.0.0.3>10.0.0.4/qp=0x000022", "periodic": true, "profile": {"period_us": 4000, "bin_us": 1000, "gbps": [70, 70, 0, 0]}}
{"subject": "idle", "periodic": false, "reason": "idle", "confidence": 0, "mean_gbps": 0}
)";

TEST(ProfileLinesTest, ParsesTheOutputOfPhasorProfile) {
  absl::StatusOr<std::vector<ProfileLine>> lines = ParseProfileLines(kLines, "p.jsonl");
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ((*lines)[0].subject, "a");
  EXPECT_EQ((*lines)[0].source, "pcap:x");
  EXPECT_TRUE((*lines)[0].periodic);
  EXPECT_EQ((*lines)[0].profile.period_us, 4000u);
  EXPECT_EQ((*lines)[0].profile.t0_epoch_us, 1000);
  EXPECT_FALSE((*lines)[2].periodic);
  EXPECT_EQ((*lines)[2].reason, "idle");
}

TEST(ProfileLinesTest, TypedMeasuredProfilesNeedNoText) {
  probe::MeasuredProfile a;
  a.subject = "a";
  a.source = "switch-csv:x.csv";
  a.extracted.periodic = true;
  a.extracted.period_us = 4000;
  a.extracted.bin_us = 1000;
  a.extracted.gbps = {80.1234567, 80, 0, 0};
  a.extracted.t0_epoch_us = 1000;
  probe::MeasuredProfile idle;
  idle.subject = "idle";
  idle.extracted.reason = "no periodic pattern: idle";
  absl::StatusOr<std::vector<ProfileLine>> lines = ProfileLinesFromMeasured({a, idle}, "x.csv");
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[0].subject, "a");
  EXPECT_EQ((*lines)[0].source, "switch-csv:x.csv");
  ASSERT_TRUE((*lines)[0].periodic);
  EXPECT_EQ((*lines)[0].profile.period_us, 4000u);
  EXPECT_EQ((*lines)[0].profile.gbps, (std::vector<double>{80.1234567, 80, 0, 0}));
  EXPECT_EQ((*lines)[0].profile.t0_epoch_us, 1000);
  EXPECT_FALSE((*lines)[1].periodic);
  EXPECT_EQ((*lines)[1].reason, "no periodic pattern: idle");
  EXPECT_EQ(ProfileLinesFromMeasured({a, a}, "x.csv").status().message(),
            "x.csv: subject: 'a' is given twice");
  a.extracted.gbps = {1};
  EXPECT_THAT(std::string(ProfileLinesFromMeasured({a}, "x.csv").status().message()),
              StartsWith("x.csv: a: profile."));
  EXPECT_EQ(ProfileLinesFromMeasured({}, "x.csv").status().message(),
            "x.csv: no profiles measured");
}

struct BadLines {
  const char* text;
  const char* message;
};
// gtest shows a case by its text, not its bytes.
void PrintTo(const BadLines& c, std::ostream* os) { *os << c.text; }

class ProfileLinesBadInputTest : public ::testing::TestWithParam<BadLines> {};

TEST_P(ProfileLinesBadInputTest, NamesTheFileLineAndField) {
  absl::StatusOr<std::vector<ProfileLine>> lines = ParseProfileLines(GetParam().text, "p.jsonl");
  ASSERT_FALSE(lines.ok());
  EXPECT_EQ(lines.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(lines.status().message()), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    All, ProfileLinesBadInputTest,
    ::testing::Values(
        BadLines{"", "p.jsonl: no profile lines"}, BadLines{"\n  \n", "p.jsonl: no profile lines"},
        BadLines{"[1, 2]\n", "p.jsonl:1: must be a JSON object"},
        BadLines{"{\"periodic\": false}\n", "p.jsonl:1: subject: must be a non-empty string"},
        BadLines{"{\"subject\": \"a\", \"periodic\": \"yes\"}",
                 "p.jsonl:1: periodic: must be true or false"},
        BadLines{"{\"subject\": \"a\", \"periodic\": true}",
                 "p.jsonl:1: profile: is required when periodic"},
        BadLines{
            "{\"subject\": \"a\", \"profile\": {\"period_us\": 0, \"bin_us\": 1, \"gbps\": [1]}}",
            "p.jsonl:1: profile.period_us: must be a positive number of microseconds"},
        BadLines{"{\"subject\": \"a\", \"profile\": {\"period_us\": 10, \"bin_us\": 5, \"gbps\": "
                 "[1, \"x\"]}}",
                 "p.jsonl:1: profile.gbps[1]: must be a number, got string"},
        BadLines{"{\"subject\": \"a\", \"periodic\": false}\n{\"subject\": \"a\", \"periodic\": "
                 "false}",
                 "p.jsonl:2: subject: 'a' is given twice"}));

TEST(ProfileLinesTest, MalformedJsonNamesTheLine) {
  absl::StatusOr<std::vector<ProfileLine>> lines =
      ParseProfileLines("{\"subject\": \"a\", \"periodic\": false}\n{\"subject\": ", "p.jsonl");
  ASSERT_FALSE(lines.ok());
  EXPECT_EQ(lines.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(lines.status().message()), StartsWith("p.jsonl:2: malformed JSON ("));
}

// Regression: the same re-parse as the rank contract's threw out_of_range on
// a number too large for a double, uncaught.
TEST(PlacementTest, RegressionANumberOverflowIsMalformedJson) {
  absl::StatusOr<Placement> p = ParsePlacement(R"({"servers": {"a": ["s1"]}, "x": 1e99999})", "p.json");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("malformed JSON ("));
}

TEST(PlacementTest, ParsesServersSubjectsAndOptions) {
  absl::StatusOr<Placement> p = ParsePlacement(
      R"({"id": "now", "servers": {"a": ["s1", "s3"], "b": ["s2", "s4"]},
          "subjects": {"b": "10.0.0.3>10.0.0.4/qp=0x000022"}, "options": {"quantum_us": 500}})",
      "place.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->id, "now");
  EXPECT_EQ(p->servers.at("a"), (std::vector<std::string>{"s1", "s3"}));
  EXPECT_EQ(p->subjects.at("b"), "10.0.0.3>10.0.0.4/qp=0x000022");
  EXPECT_EQ(p->options.circle.quantum_us, 500u);
}

struct BadPlacement {
  const char* text;
  const char* message;
};
void PrintTo(const BadPlacement& c, std::ostream* os) { *os << c.text; }

class PlacementBadInputTest : public ::testing::TestWithParam<BadPlacement> {};

TEST_P(PlacementBadInputTest, NamesTheFileAndField) {
  absl::StatusOr<Placement> p = ParsePlacement(GetParam().text, "place.json");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(p.status().message()), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    All, PlacementBadInputTest,
    ::testing::Values(BadPlacement{"[]", "place.json: must be a JSON object"},
                      BadPlacement{"{}", "place.json: servers: is required"},
                      BadPlacement{
                          R"({"servers": {}})",
                          "place.json: servers: must be a non-empty object (job -> [server, ...])"},
                      BadPlacement{R"({"servers": {"a": "s1"}})",
                                   "place.json: servers.a: must be an array of server names"},
                      BadPlacement{R"({"servers": {"a": ["s1", 2]}})",
                                   "place.json: servers.a[1]: must be a string"},
                      BadPlacement{R"({"servers": {"a": ["s1"]}, "subjects": {"b": "x"}})",
                                   "place.json: subjects.b: job 'b' is not in servers"},
                      BadPlacement{R"({"servers": {"a": ["s1"]}, "extra": 1})",
                                   "place.json: extra: unknown field"},
                      BadPlacement{R"({"servers": {"a": ["s1"]}, "options": {"quantum_us": 0}})",
                                   "place.json: options.quantum_us: must be > 0"},
                      BadPlacement{R"({"id": "", "servers": {"a": ["s1"]}})",
                                   "place.json: id: must be a non-empty string"}));

TEST(RequestFromProfilesTest, RoutesThePlacementOnTheTopology) {
  auto lines = ParseProfileLines(kLines, "p.jsonl");
  ASSERT_TRUE(lines.ok());
  auto placement = ParsePlacement(
      R"({"servers": {"a": ["s1", "s3"], "b": ["s2", "s4"]},
          "subjects": {"b": "10.0.0.3>10.0.0.4/qp=0x000022"}})",
      "place.json");
  ASSERT_TRUE(placement.ok());
  absl::StatusOr<placer::RankRequest> r =
      RequestFromProfiles(*lines, "p.jsonl", *placement, "place.json");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->jobs.size(), 2u);
  EXPECT_EQ(r->jobs[1].id, "b");
  EXPECT_EQ(r->jobs[1].profile.gbps[0], 70);
  ASSERT_TRUE(RoutePlacement(kLeafSpine, *r).ok());
  ASSERT_EQ(r->candidates.size(), 1u);
  EXPECT_EQ(r->candidates[0].id, "placement");
  EXPECT_TRUE(r->candidates[0].servers.empty());
  EXPECT_DOUBLE_EQ(r->candidates[0].links.at("a").at("leaf1->spine1"), 0.5);
  EXPECT_FALSE(r->links.empty());
}

TEST(RequestFromProfilesTest, Errors) {
  auto lines = ParseProfileLines(kLines, "p.jsonl");
  ASSERT_TRUE(lines.ok());
  Placement p;
  p.servers = {{"z", {"s1", "s2"}}};
  absl::StatusOr<placer::RankRequest> r = RequestFromProfiles(*lines, "p.jsonl", p, "place.json");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "place.json: servers.z: no profile for subject 'z' in p.jsonl");

  p.servers = {{"a", {"s1", "s2"}}, {"q", {"s3"}}};
  p.subjects = {{"q", "idle"}};
  r = RequestFromProfiles(*lines, "p.jsonl", p, "place.json");
  EXPECT_EQ(r.status().message(),
            "place.json: servers.q: subject 'idle' has no periodic pattern in p.jsonl (idle)");

  p.servers = {{"a", {"s1", "s9"}}};
  p.subjects.clear();
  r = RequestFromProfiles(*lines, "p.jsonl", p, "place.json");
  ASSERT_TRUE(r.ok());
  absl::Status s = RoutePlacement(kLeafSpine, *r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("candidate 'placement': "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("s9"));

  s = RoutePlacement("/nonexistent/topo.yaml", *r);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), StartsWith("topology: "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent/topo.yaml"));
}

}  // namespace
}  // namespace inputs_test
}  // namespace phasor::diagnose
