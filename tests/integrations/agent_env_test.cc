// The agent's configuration from PHASOR_* variables (integrations/agent/agent_env.h):
// every variable parsed, every bad value refused with a message naming it, and
// a gate from a wrong environment failing open at once.
#include "integrations/agent/agent_env.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gtest/gtest.h"
#include "protocol/curve_keys.h"

namespace phasor::agent {
namespace {

class AgentEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/phasor-agent-env-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    env_ = {{"PHASOR_JOB", "job-a"},
            {"PHASOR_REQUEST_ENDPOINT", "ipc://" + dir_ + "/requests"},
            {"PHASOR_OFFSET_ENDPOINT", "ipc://" + dir_ + "/offsets"}};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  EnvLookup Lookup() const {
    return [this](const std::string& name) -> std::optional<std::string> {
      auto it = env_.find(name);
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
  }
  std::string Error() const { return std::string(GateOptionsFromEnv(Lookup()).status().message()); }

  std::string dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(AgentEnvTest, RequiredVariablesAndDefaults) {
  absl::StatusOr<IterationGateOptions> o = GateOptionsFromEnv(Lookup());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->job, "job-a");
  EXPECT_EQ(o->request_endpoint, "ipc://" + dir_ + "/requests");
  EXPECT_EQ(o->offset_endpoint, "ipc://" + dir_ + "/offsets");
  EXPECT_EQ(o->mode, GateMode::kOnce);
  EXPECT_EQ(o->fail_open_ms, 2000);
  EXPECT_FALSE(o->curve.has_value());
  EXPECT_FALSE(o->initial_offset.has_value());
}

TEST_F(AgentEnvTest, EveryVariableIsRead) {
  protocol::CurveKeyPair server = *protocol::GenerateCurveKeyPair();
  protocol::CurveKeyPair mine = *protocol::GenerateCurveKeyPair();
  ASSERT_TRUE(protocol::WriteKeyPair(server, dir_ + "/phasord", false).ok());
  ASSERT_TRUE(protocol::WriteKeyPair(mine, dir_ + "/trainer", false).ok());
  env_["PHASOR_MODE"] = " pace ";
  env_["PHASOR_FAIL_OPEN_MS"] = "0";
  env_["PHASOR_SERVER_KEY"] = dir_ + "/phasord.pub";
  env_["PHASOR_CLIENT_KEY"] = dir_ + "/trainer";
  env_["PHASOR_ORIGIN_EPOCH_US"] = "1700000000000000";
  env_["PHASOR_PERIOD_US"] = "200000";
  env_["PHASOR_SHIFT_US"] = "150000";
  env_["PHASOR_OFFSET_VERSION"] = "7";
  absl::StatusOr<IterationGateOptions> o = GateOptionsFromEnv(Lookup());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->mode, GateMode::kPace);
  EXPECT_EQ(o->fail_open_ms, 0);
  ASSERT_TRUE(o->curve.has_value());
  EXPECT_EQ(o->curve->server_public_key, server.public_key);
  EXPECT_EQ(o->curve->client_public_key, mine.public_key);
  EXPECT_EQ(o->curve->client_secret_key, mine.secret_key);
  ASSERT_TRUE(o->initial_offset.has_value());
  EXPECT_EQ(o->initial_offset->job(), "job-a");
  EXPECT_EQ(o->initial_offset->origin_epoch_us(), 1700000000000000);
  EXPECT_EQ(o->initial_offset->period_us(), 200000u);
  EXPECT_EQ(o->initial_offset->shift_us(), 150000u);
  EXPECT_EQ(o->initial_offset->version(), 7u);
}

TEST_F(AgentEnvTest, ShiftAndVersionDefaultToZero) {
  env_["PHASOR_ORIGIN_EPOCH_US"] = "1000";
  env_["PHASOR_PERIOD_US"] = "500";
  absl::StatusOr<IterationGateOptions> o = GateOptionsFromEnv(Lookup());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->initial_offset->shift_us(), 0u);
  EXPECT_EQ(o->initial_offset->version(), 0u);
}

TEST_F(AgentEnvTest, MissingRequiredVariablesAreNamed) {
  env_.erase("PHASOR_JOB");
  EXPECT_EQ(Error(), "PHASOR_JOB: required (not set)");
  env_["PHASOR_JOB"] = "  ";
  EXPECT_EQ(Error(), "PHASOR_JOB: required (not set)");
  env_["PHASOR_JOB"] = "a";
  env_.erase("PHASOR_OFFSET_ENDPOINT");
  EXPECT_EQ(Error(), "PHASOR_OFFSET_ENDPOINT: required (not set)");
  env_.erase("PHASOR_REQUEST_ENDPOINT");
  EXPECT_EQ(Error(), "PHASOR_REQUEST_ENDPOINT: required (not set)");
}

// A phasord leader and its standbys (state_store.backend: etcd): lists pass,
// each endpoint checked.
TEST_F(AgentEnvTest, SeveralEndpointsAreAcceptedAndEachIsChecked) {
  env_["PHASOR_REQUEST_ENDPOINT"] = "tcp://10.0.0.1:7410, tcp://10.0.0.2:7410";
  env_["PHASOR_OFFSET_ENDPOINT"] = "tcp://10.0.0.1:7412,tcp://10.0.0.2:7412";
  absl::StatusOr<IterationGateOptions> o = GateOptionsFromEnv(Lookup());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->request_endpoint, "tcp://10.0.0.1:7410, tcp://10.0.0.2:7410");
  EXPECT_EQ(o->offset_endpoint, "tcp://10.0.0.1:7412,tcp://10.0.0.2:7412");
  env_["PHASOR_REQUEST_ENDPOINT"] = "tcp://10.0.0.1:7410,phasord:7410";
  EXPECT_EQ(Error(),
            "PHASOR_REQUEST_ENDPOINT: 'phasord:7410' is not a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH)");
}

TEST_F(AgentEnvTest, BadValuesAreNamed) {
  env_["PHASOR_REQUEST_ENDPOINT"] = "phasord:7410";
  EXPECT_EQ(Error(),
            "PHASOR_REQUEST_ENDPOINT: 'phasord:7410' is not a ZeroMQ endpoint (tcp://HOST:PORT, "
            "ipc://PATH)");
  env_["PHASOR_REQUEST_ENDPOINT"] = "tcp://";
  EXPECT_EQ(
      Error(),
      "PHASOR_REQUEST_ENDPOINT: 'tcp://' is not a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH)");
  env_["PHASOR_REQUEST_ENDPOINT"] = "tcp://127.0.0.1:23001";
  env_["PHASOR_MODE"] = "sometimes";
  EXPECT_EQ(Error(), "PHASOR_MODE: 'sometimes' is not 'once' or 'pace'");
  env_["PHASOR_MODE"] = "once";
  env_["PHASOR_FAIL_OPEN_MS"] = "2s";
  EXPECT_EQ(Error(), "PHASOR_FAIL_OPEN_MS: '2s' is not an integer");
  env_["PHASOR_FAIL_OPEN_MS"] = "-1";
  EXPECT_EQ(Error(), "PHASOR_FAIL_OPEN_MS: -1 is below 0");
  env_["PHASOR_FAIL_OPEN_MS"] = "100";
  env_["PHASOR_SHIFT_US"] = "10";
  EXPECT_EQ(
      Error(),
      "PHASOR_ORIGIN_EPOCH_US: required when any of PHASOR_ORIGIN_EPOCH_US, PHASOR_PERIOD_US, "
      "PHASOR_SHIFT_US, PHASOR_OFFSET_VERSION is set");
  env_["PHASOR_ORIGIN_EPOCH_US"] = "1000";
  EXPECT_EQ(Error(),
            "PHASOR_PERIOD_US: required when any of PHASOR_ORIGIN_EPOCH_US, PHASOR_PERIOD_US, "
            "PHASOR_SHIFT_US, PHASOR_OFFSET_VERSION is set");
  env_["PHASOR_PERIOD_US"] = "0";
  EXPECT_EQ(Error(), "PHASOR_PERIOD_US: 0 is below 1");
  env_["PHASOR_PERIOD_US"] = "4294967296";
  EXPECT_EQ(Error(), "PHASOR_PERIOD_US: 4294967296 is above 4294967295");
  env_["PHASOR_PERIOD_US"] = "10";
  EXPECT_EQ(Error(), "PHASOR_SHIFT_US: 10 is not below PHASOR_PERIOD_US (10)");
  env_["PHASOR_SHIFT_US"] = "3";
  env_["PHASOR_OFFSET_VERSION"] = "+1";
  EXPECT_EQ(Error(), "PHASOR_OFFSET_VERSION: '+1' is not an integer");
}

TEST_F(AgentEnvTest, KeyFilesThatAreMissingOrWrongAreNamed) {
  env_["PHASOR_SERVER_KEY"] = dir_ + "/phasord.pub";
  EXPECT_EQ(Error(), "PHASOR_CLIENT_KEY: required when PHASOR_SERVER_KEY is set");
  env_.erase("PHASOR_SERVER_KEY");
  env_["PHASOR_CLIENT_KEY"] = dir_ + "/trainer";
  EXPECT_EQ(Error(), "PHASOR_SERVER_KEY: required when PHASOR_CLIENT_KEY is set");
  env_["PHASOR_SERVER_KEY"] = dir_ + "/phasord.pub";
  EXPECT_EQ(Error(), "PHASOR_SERVER_KEY: " + dir_ + "/phasord.pub: cannot open key file");
  ASSERT_TRUE(
      protocol::WriteKeyPair(*protocol::GenerateCurveKeyPair(), dir_ + "/phasord", false).ok());
  EXPECT_EQ(Error(), "PHASOR_CLIENT_KEY: " + dir_ + "/trainer.pub: cannot open key file");
  ASSERT_TRUE(
      protocol::WriteKeyPair(*protocol::GenerateCurveKeyPair(), dir_ + "/trainer", false).ok());
  std::filesystem::remove(dir_ + "/trainer.secret");
  EXPECT_EQ(Error(), "PHASOR_CLIENT_KEY: " + dir_ + "/trainer.secret: cannot open key file");
  { std::ofstream(dir_ + "/trainer.secret") << "not a key\n"; }
  EXPECT_EQ(Error(),
            "PHASOR_CLIENT_KEY: " + dir_ + "/trainer.secret: not a 40-character Z85 CURVE key");
}

TEST_F(AgentEnvTest, AWrongEnvironmentGivesOneLineAndAGateThatFailsOpenAtOnce) {
  env_["PHASOR_SERVER_KEY"] = dir_ + "/missing.pub";
  env_["PHASOR_CLIENT_KEY"] = dir_ + "/trainer";
  std::ostringstream log;
  EnvGate env = GateFromEnv(Lookup(), &log);
  EXPECT_EQ(env.gate, nullptr);
  EXPECT_EQ(env.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      log.str(),
      "phasor: PHASOR_SERVER_KEY: " + dir_ +
          "/missing.pub: cannot open key file; the gate fails open (iterations are not paced)\n");
  for (int i = 0; i < 3; ++i) {
    GateResult r = env.Wait();
    EXPECT_TRUE(r.failed_open);
    EXPECT_FALSE(r.aligned);
    EXPECT_EQ(r.waited_us, 0);
    EXPECT_EQ(r.offset_version, 0u);
  }
}

TEST_F(AgentEnvTest, AnEndpointZeroMqRefusesIsNamedByItsVariable) {
  env_["PHASOR_REQUEST_ENDPOINT"] = "tcp://nohost";
  std::ostringstream log;
  EnvGate env = GateFromEnv(Lookup(), &log);
  EXPECT_EQ(env.gate, nullptr);
  EXPECT_EQ(env.status.message(), "PHASOR_REQUEST_ENDPOINT: 'tcp://nohost': Invalid argument");
  EXPECT_EQ(log.str(),
            "phasor: PHASOR_REQUEST_ENDPOINT: 'tcp://nohost': Invalid argument; the gate fails "
            "open (iterations are "
            "not paced)\n");
  EXPECT_TRUE(env.Wait().failed_open);
}

TEST_F(AgentEnvTest, TheInitialOffsetIsInForceBeforePhasordAnswers) {
  // No phasord at these endpoints: the offset from the environment paces the job.
  env_["PHASOR_MODE"] = "pace";
  env_["PHASOR_ORIGIN_EPOCH_US"] = "1000000";
  env_["PHASOR_PERIOD_US"] = "2000";
  env_["PHASOR_SHIFT_US"] = "500";
  env_["PHASOR_OFFSET_VERSION"] = "4";
  std::ostringstream log;
  EnvGate env = GateFromEnv(Lookup(), &log);
  ASSERT_TRUE(env.status.ok()) << env.status;
  ASSERT_NE(env.gate, nullptr);
  EXPECT_EQ(log.str(), "");
  ASSERT_TRUE(env.gate->offset().has_value());
  EXPECT_EQ(env.gate->offset()->shift_us(), 500u);
  GateResult r = env.Wait();
  EXPECT_TRUE(r.aligned);
  EXPECT_FALSE(r.failed_open);
  EXPECT_EQ(r.offset_version, 4u);
}

TEST(AgentEnvProcessTest, ProcessEnvironmentReadsGetenv) {
  ASSERT_EQ(setenv("PHASOR_AGENT_ENV_TEST", "x", 1), 0);
  EnvLookup lookup = ProcessEnvironment();
  EXPECT_EQ(lookup("PHASOR_AGENT_ENV_TEST"), std::optional<std::string>("x"));
  ASSERT_EQ(unsetenv("PHASOR_AGENT_ENV_TEST"), 0);
  EXPECT_EQ(lookup("PHASOR_AGENT_ENV_TEST"), std::nullopt);
}

}  // namespace
}  // namespace phasor::agent
