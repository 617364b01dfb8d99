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
  // a's Up [0, 90) ms, b's 80 ms fit for b in [90, 120] ms of 200: the
  // centre of that interval (docs/placer.md, "Centring"), 15 ms each side.
  EXPECT_THAT(r.out, HasSubstr("b=105.0 ms"));
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
        // Issue 12's crashes from outside: SIGFPE and SIGSEGV before.
        BadInput{"PeriodNearUint32Max",
                 R"({"links": [{"id": "l", "capacity_gbps": 50}], "jobs": [{"id": "a", "profile": {"period_us": 4294967295, "square": {"up_us": 1000, "up_gbps": 10}}}, {"id": "b", "profile": {"period_us": 200000, "square": {"up_us": 1000, "up_gbps": 10}}}], "candidates": [{"id": "c", "links": {"a": {"l": 1}, "b": {"l": 1}}}]})",
                 "jobs[0].profile.period_us: 4294967295 is outside 1..3600000000"},
        BadInput{"QuantumNearUint32Max",
                 R"({"links": [], "jobs": [], "candidates": [], "options": {"quantum_us": 4294967295}})",
                 "options.quantum_us: 4294967295 is outside 1..3600000000"},
        BadInput{"DemandNearDblMax",
                 R"({"links": [{"id": "l", "capacity_gbps": 50}], "jobs": [{"id": "a", "profile": {"period_us": 200000, "square": {"up_us": 90000, "up_gbps": 1.7e308}}}, {"id": "b", "profile": {"period_us": 200000, "square": {"up_us": 80000, "up_gbps": 40}}}], "candidates": [{"id": "c", "links": {"a": {"l": 1}, "b": {"l": 1}}}]})",
                 "jobs[0].profile.square.up_gbps: 1.7e+308 is outside 0..1e+06"},
        // Over a limit: ResourceExhausted, the same one line and exit 2.
        BadInput{"CircleOverTheBinLimit",
                 R"({"links": [], "jobs": [], "candidates": [], "options": {"quantum_us": 1, "max_bins": 4294967296}})",
                 "options.max_bins: 4294967296 exceeds the limit max_job_bins (1048576) (raise it with"},
        BadInput{"ShareOutside",
                 R"({"links": [{"id": "l", "capacity_gbps": 1}], "jobs": [], "candidates": [{"id": "c", "links": {"a": {"l": -2}}}]})",
                 "candidates[0].links.a.l: share must be in 0..65536, got -2"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(RankCommandTest, LimitFlagsRaiseAndLowerTheLimits) {
  const std::string path = std::string(PHASOR_SOURCE_DIR) + "/data/examples/two_jobs.json";
  const auto low = RunCommand(kPhasor + " rank --max-candidates 0 " + path);
  EXPECT_EQ(low.exit_code, 2);
  EXPECT_EQ(low.out, "");
  EXPECT_EQ(low.err,
            "phasor rank: candidates: 1 exceeds the limit max_candidates (0) (raise it with its --max- or "
            "--deadline-ms flag)\n");
  const std::string big = R"({"links": [], "jobs": [], "candidates": [], "options": {"max_bins": 4194304}})";
  EXPECT_EQ(RunCommand(kPhasor + " rank", big).exit_code, 2);
  const auto raised = RunCommand(kPhasor + " rank --max-job-bins 4194304 --max-link-bins 1000000000", big);
  EXPECT_EQ(raised.exit_code, 0) << raised.err;
  EXPECT_EQ(nlohmann::json::parse(raised.out)["ranked"], nlohmann::json::array());
  const auto flags = RunCommand(kPhasor + " rank --help");
  for (const char* flag : {"--max-job-bins", "--max-link-bins", "--max-jobs-x-links", "--max-candidates",
                           "--max-evaluations", "--deadline-ms"}) {
    EXPECT_THAT(flags.out, HasSubstr(flag));
  }
}

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
