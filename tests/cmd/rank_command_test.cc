// End-to-end tests of `phasor rank` (the executable, as a user runs it).
#include <algorithm>
#include <fstream>
#include <ostream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "placer/rank_json.h"
#include "tests/testing/subprocess.h"

namespace phasor {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::RunCommand;

const std::string kPhasor = PHASOR_BINARY;

std::string ReadFile(const std::string& path) { return testing::ReadFileOrEmpty(path); }

TEST(RankCommandTest, BundledExampleMatchesTheLibrary) {
  const std::string path = std::string(PHASOR_SOURCE_DIR) + "/data/examples/two_jobs.json";
  const auto r = RunCommand(kPhasor + " rank " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto request = placer::ParseRankRequest(ReadFile(path));
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(nlohmann::json::parse(r.out),
            nlohmann::json::parse(placer::RankingToJson(placer::Rank(*request)).dump()));
  // The two jobs interleave: the link never exceeds capacity.
  EXPECT_EQ(nlohmann::json::parse(r.out)["ranked"][0]["score"], 1.0);
}

TEST(RankCommandTest, ReadsStdin) {
  const std::string path = std::string(PHASOR_SOURCE_DIR) + "/data/examples/two_jobs.json";
  const auto from_file = RunCommand(kPhasor + " rank " + path);
  const auto from_stdin = RunCommand(kPhasor + " rank", ReadFile(path));
  const auto from_dash = RunCommand(kPhasor + " rank -", ReadFile(path));
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, from_file.out);
  EXPECT_EQ(from_dash.out, from_file.out);
}

TEST(RankCommandTest, TableFormatDrawsTheLinkBeforeAndAfter) {
  const std::string path = std::string(PHASOR_SOURCE_DIR) + "/data/examples/two_jobs.json";
  const auto r = RunCommand(kPhasor + " rank --format table " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("started together (score 0.7200)"));
  EXPECT_THAT(r.out, HasSubstr("with phasor (score 1.0000)"));
  EXPECT_THAT(r.out, HasSubstr("b=90.0 ms"));
}

struct BadInput {
  const char* name;
  const char* text;
  const char* field;
};
// gtest shows a case by its name, not its bytes.
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

class RankCommandBadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(RankCommandBadInputTest, ExitsNonZeroWithOneLineAndNoOutput) {
  const auto r = RunCommand(kPhasor + " rank", GetParam().text);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "") << "nothing may be printed on stdout";
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, StartsWith(std::string("phasor rank: ") + GetParam().field));
}

INSTANTIATE_TEST_SUITE_P(
    All, RankCommandBadInputTest,
    ::testing::Values(
        BadInput{"MalformedJson", "{\"links\": [}", "input: malformed JSON"},
        BadInput{"Empty", "", "input: malformed JSON"},
        BadInput{"NegativeCapacity",
                 R"({"links": [{"id": "l", "capacity_gbps": -3}], "jobs": [], "candidates": []})",
                 "links[0].capacity_gbps"},
        BadInput{"EmptyProfile",
                 R"({"links": [], "jobs": [{"id": "a", "profile": {"period_us": 1000}}], "candidates": []})",
                 "jobs[0].profile"},
        BadInput{"PeriodZero",
                 R"({"links": [], "jobs": [{"id": "a", "profile": {"period_us": 0, "square": {"up_us": 0, "up_gbps": 1}}}], "candidates": []})",
                 "jobs[0].profile.period_us"},
        BadInput{"ShareOutside",
                 R"({"links": [{"id": "l", "capacity_gbps": 1}], "jobs": [], "candidates": [{"id": "c", "links": {"a": {"l": 2}}}]})",
                 "candidates[0].links.a.l"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(RankCommandTest, MissingFileIsOneLine) {
  const auto r = RunCommand(kPhasor + " rank /nonexistent/request.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "phasor rank: cannot read '/nonexistent/request.json'\n");
}

TEST(RankCommandTest, HelpOnEveryLevel) {
  const auto top = RunCommand(kPhasor + " --help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("rank"));
  const auto rank = RunCommand(kPhasor + " rank --help");
  EXPECT_EQ(rank.exit_code, 0);
  EXPECT_THAT(rank.out, HasSubstr("--format"));
  const auto none = RunCommand(kPhasor);
  EXPECT_NE(none.exit_code, 0);
}

}  // namespace
}  // namespace phasor
