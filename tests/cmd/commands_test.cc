// `phasor keygen`, `phasor status` and `phasor simulate`'s replay flags, run
// as the real executable.
#include <filesystem>
#include <string>
#include <tuple>

#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "gtest/gtest.h"
#include "integrations/client/client.h"
#include "protocol/curve_keys.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/testing/subprocess.h"

namespace phasor {
namespace {

using ::testing::HasSubstr;

constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

struct CommandRun {
  int code = 0;
  std::string out;
  std::string err;
};

CommandRun RunPhasor(const std::vector<std::string>& args) {
  std::string line = PHASOR_BINARY;
  for (const std::string& a : args) line += " '" + a + "'";
  ::phasor::testing::CommandResult r = ::phasor::testing::RunCommand(line);
  return {r.exit_code, r.out, r.err};
}

TEST(KeygenCommandTest, WritesAKeyPairAndPrintsThePublicKey) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  CommandRun run = RunPhasor({"keygen", "--out", dir + "/sched"});
  ASSERT_EQ(run.code, 0) << run.err;
  absl::StatusOr<std::string> pub = protocol::ReadKeyFile(dir + "/sched.pub");
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(run.out, *pub + "\n");
  EXPECT_TRUE(protocol::ReadKeyFile(dir + "/sched.secret").ok());
  // Not overwritten without --force.
  run = RunPhasor({"keygen", "--out", dir + "/sched"});
  EXPECT_EQ(run.code, kExitBadInput);
  EXPECT_THAT(run.err, HasSubstr("sched.secret: exists (pass --force to overwrite)"));
  run = RunPhasor({"keygen", "--out", dir + "/sched", "--force"});
  EXPECT_EQ(run.code, 0);
  EXPECT_NE(run.out, *pub + "\n");
  run = RunPhasor({"keygen", "--out", dir + "/no/such/dir/k"});
  EXPECT_EQ(run.code, kExitFailure);
  EXPECT_THAT(run.err, HasSubstr("cannot write"));
  std::filesystem::remove_all(dir);
}

TEST(StatusCommandTest, SummarisesARunningPhasord) {
  ::phasor::testing::DaemonHarness h;
  ASSERT_TRUE(h.Start());
  client::ClientOptions o;
  o.endpoint = h.options().request_endpoint;
  auto c = *client::Client::Connect(o);
  absl::StatusOr<client::RankResult> ranked = c->Rank(::phasor::testing::SampleRankRequest());
  ASSERT_TRUE(ranked.ok());
  ASSERT_TRUE(c->Commit(ranked->ranking_id, ranked->reply.ranked(0).candidate()).ok());
  ASSERT_FALSE(c->GetOffset("ghost").ok());
  const std::string where = "127.0.0.1:" + std::to_string(h.daemon().endpoints().metrics_port);
  CommandRun run = RunPhasor({"status", "--metrics", where});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("phasord at " + where + ": up\n"));
  EXPECT_THAT(run.out, HasSubstr("  jobs with offsets  3\n"));
  EXPECT_THAT(run.out, HasSubstr("  rankings solved    1 "));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("RankRequest +1\n"));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("GetOffset NOT_FOUND +1\n"));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("tor1-up commit +[0-9.]+\n"));
  run = RunPhasor({"status", "--metrics", where, "--raw"});
  EXPECT_THAT(run.out, HasSubstr("# TYPE phasord_requests_total counter\n"));
}

TEST(StatusCommandTest, NothingListeningIsOneLineAndExitOne) {
  // A port from the ephemeral range that nothing listens on: bind, then close.
  ::phasor::testing::DaemonHarness h;
  ASSERT_TRUE(h.Start());
  const uint16_t port = h.daemon().endpoints().metrics_port;
  h.Stop();
  CommandRun run = RunPhasor({"status", "--metrics", "127.0.0.1:" + std::to_string(port), "--timeout-ms", "500"});
  EXPECT_EQ(run.code, kExitFailure);
  EXPECT_THAT(run.err, HasSubstr("phasor status: cannot connect to 127.0.0.1:"));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1);
  run = RunPhasor({"status", "--metrics", "no-port"});
  EXPECT_EQ(run.code, kExitBadInput);
}

// --pin-running: pinned (the default), no running job is ever shifted; off,
// the solver moves running jobs too (at the end of their iteration), as
// Cassini mode does. Twelve generated jobs on the Cassini-shaped fabric.
TEST(SimulateCommandTest, PinRunningOffLetsTheSolverShiftRunningJobs) {
  const std::vector<std::string> base = {"simulate", "--workload", "cassini", "--fabric", "leaf-spine:24:4:4:1",
                                         "--jobs", "12", "--seed", "1", "--no-progress"};
  auto running_shifts = [&](const std::string& pin) {
    std::vector<std::string> args = base;
    if (!pin.empty()) args.insert(args.end(), {"--pin-running", pin});
    CommandRun run = RunPhasor(args);
    EXPECT_EQ(run.code, 0) << run.err;
    return nlohmann::json::parse(run.out, nullptr, false).value("running_shifts", -1);
  };
  EXPECT_EQ(running_shifts(""), 0);
  EXPECT_EQ(running_shifts("on"), 0);
  EXPECT_GT(running_shifts("off"), 0);
  std::vector<std::string> bad = base;
  bad.insert(bad.end(), {"--pin-running", "maybe"});
  CommandRun run = RunPhasor(bad);
  EXPECT_EQ(run.code, kExitBadInput);
  EXPECT_THAT(run.err, HasSubstr("--pin-running: must be on or off"));
}

// --running-profiles: both values replay; a third is a bad input named by
// the flag, with nothing on stdout.
TEST(SimulateCommandTest, RunningProfilesTakesIsolatedOrMeasured) {
  const std::vector<std::string> base = {"simulate", "--workload", "cassini", "--fabric", "leaf-spine:24:4:4:1",
                                         "--jobs", "12", "--seed", "1", "--no-progress", "--running-profiles"};
  for (const std::string value : {"isolated", "measured"}) {
    std::vector<std::string> args = base;
    args.push_back(value);
    CommandRun run = RunPhasor(args);
    EXPECT_EQ(run.code, 0) << value << ": " << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out, nullptr, false).value("jobs_completed", -1), 12) << value;
  }
  std::vector<std::string> bad = base;
  bad.push_back("sampled");
  CommandRun run = RunPhasor(bad);
  EXPECT_EQ(run.code, kExitBadInput);
  EXPECT_THAT(run.err, HasSubstr("--running-profiles: must be isolated or measured"));
  EXPECT_EQ(run.out, "");
}

// The closed-loop flags: bad values are named by the flag, nothing on stdout.
TEST(SimulateCommandTest, ClosedLoopFlagsNameTheirBadValues) {
  const std::vector<std::string> base = {"simulate", "--workload", "cassini", "--fabric", "leaf-spine:24:4:4:1",
                                         "--jobs", "4", "--seed", "1", "--no-progress"};
  for (const auto& [flag, value, message] :
       {std::tuple{"--realign-regrid", "sometimes", "--realign-regrid: must be on or off"},
        {"--realign-min-interval-s", "-1", "--realign-min-interval-s"},
        {"--keep-packing", "both", "--keep-packing: must be on or off"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {flag, value});
    CommandRun run = RunPhasor(args);
    EXPECT_EQ(run.code, kExitBadInput) << flag;
    EXPECT_THAT(run.err, HasSubstr(message)) << flag;
    EXPECT_EQ(run.out, "") << flag;
  }
  std::vector<std::string> ok = base;
  ok.insert(ok.end(), {"--realign", "on", "--realign-regrid", "on", "--realign-min-interval-s", "10"});
  CommandRun run = RunPhasor(ok);
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out, nullptr, false).value("jobs_completed", -1), 4);
}

}  // namespace
}  // namespace phasor
