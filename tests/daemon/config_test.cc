#include "daemon/config.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace phasor::daemon {
namespace config_test {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& yaml) {
  absl::StatusOr<DaemonOptions> o = ParseDaemonConfig(yaml);
  EXPECT_FALSE(o.ok()) << yaml;
  if (o.ok()) return "";
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
  return std::string(o.status().message());
}

TEST(ConfigTest, KeysLeftOutKeepTheirDefaults) {
  absl::StatusOr<DaemonOptions> o = ParseDaemonConfig("allow_plain: true\nsolver_threads: 3\n");
  ASSERT_TRUE(o.ok()) << o.status().message();
  const DaemonOptions defaults;
  EXPECT_EQ(o->solver_threads, 3u);
  EXPECT_TRUE(o->allow_plain);
  EXPECT_EQ(o->request_endpoint, defaults.request_endpoint);
  EXPECT_EQ(o->request_endpoint, "tcp://127.0.0.1:7410");
  EXPECT_EQ(o->max_message_bytes, 4u << 20);
  EXPECT_EQ(o->max_candidates_per_request, 256u);
  EXPECT_EQ(o->state_path, "/var/lib/phasor/phasord.db");
  EXPECT_EQ(o->realign_threshold_us, 2000u);
  EXPECT_EQ(o->max_queued_rankings, 64u);
  EXPECT_EQ(o->keep_link_scores, 1000u);
}

// The shipped defaults are the configuration that was measured: the testbed
// runs phasord without periodic re-publishing and without the closed loop
// (bench/testbed/testbed.py sets neither, docs/testbed.md), and the
// simulator measured every variant of the loop as a cost on overloaded links
// (docs/simulator.md, "The closed loop"). DeployTest checks the shipped
// manifests and the testbed's config keep them.
TEST(ConfigTest, ShippedDefaultsAreTheMeasuredOnes) {
  const DaemonOptions defaults;
  EXPECT_FALSE(defaults.realign);
  EXPECT_EQ(defaults.republish_interval_ms, 0u);
  absl::StatusOr<DaemonOptions> o = ParseDaemonConfig("allow_plain: true\n");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_FALSE(o->realign);
  EXPECT_EQ(o->republish_interval_ms, 0u);
}

TEST(ConfigTest, EveryKeyParses) {
  absl::StatusOr<DaemonOptions> o = ParseDaemonConfig(R"(
request_endpoint: ipc:///run/phasor/requests
profile_endpoint: ipc:///run/phasor/profiles
offset_endpoint: tcp://127.0.0.1:9000
metrics_listen: "[::1]:9464"
allow_plain: true
state_path: /tmp/x.db
topology_path: /etc/phasor/fabric.yaml
sqlite_synchronous: full
keep_rankings: 5
max_message_bytes: 1000
max_jobs_per_request: 10
max_links_per_request: 11
max_candidates_per_request: 12
solver_threads: 1
min_profile_confidence: 0.25
realign_threshold_us: 300
realign: true
realign_min_interval_ms: 400
republish_interval_ms: 5000
max_queued_rankings: 7
keep_link_scores: 9
log_level: debug
)");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->profile_endpoint, "ipc:///run/phasor/profiles");
  EXPECT_EQ(o->metrics_listen, "[::1]:9464");
  EXPECT_EQ(o->sqlite_synchronous, "full");
  EXPECT_EQ(o->topology_path, "/etc/phasor/fabric.yaml");
  EXPECT_EQ(o->keep_rankings, 5u);
  EXPECT_EQ(o->max_message_bytes, 1000u);
  EXPECT_EQ(o->max_links_per_request, 11u);
  EXPECT_EQ(o->min_profile_confidence, 0.25);
  EXPECT_EQ(o->realign_min_interval_ms, 400u);
  EXPECT_TRUE(o->realign);
  EXPECT_EQ(o->republish_interval_ms, 5000u);
  EXPECT_EQ(o->max_queued_rankings, 7u);
  EXPECT_EQ(o->keep_link_scores, 9u);
  EXPECT_EQ(o->log_level, "debug");
}

TEST(ConfigTest, RankLimitsParseAndNameTheirKeys) {
  absl::StatusOr<DaemonOptions> o = ParseDaemonConfig(
      "allow_plain: true\nrequest_endpoint: ipc:///tmp/r\nprofile_endpoint: ipc:///tmp/p\n"
      "offset_endpoint: ipc:///tmp/o\nlimits:\n  max_job_bins: 64\n  max_link_bins: 128\n"
      "  max_jobs_x_links: 9\n  max_evaluations: 1000\n  deadline_ms: 5\n");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->rank_limits.max_job_bins, 64u);
  EXPECT_EQ(o->rank_limits.max_link_bins, 128u);
  EXPECT_EQ(o->rank_limits.max_jobs_x_links, 9u);
  EXPECT_EQ(o->rank_limits.max_evaluations, 1000u);
  EXPECT_EQ(o->rank_limits.deadline_ms, 5u);
  EXPECT_EQ(DaemonOptions().rank_limits.deadline_ms, placer::RankLimits().deadline_ms);
  EXPECT_EQ(ErrorOf("allow_plain: true\nlimits:\n  max_bins: 3\n"), "limits.max_bins: unknown key");
  EXPECT_EQ(ErrorOf("allow_plain: true\nlimits: 3\n"), "limits: must be a mapping");
  EXPECT_EQ(ErrorOf("allow_plain: true\nlimits:\n  deadline_ms: 0\n"), "limits.deadline_ms: must be > 0");
}

TEST(ConfigTest, BadKeysAndValuesNameTheKey) {
  EXPECT_EQ(ErrorOf("allow_plain: true\nsolver_thread: 2\n"), "solver_thread: unknown key");
  EXPECT_EQ(ErrorOf("allow_plain: true\nsolver_threads: many\n"), "solver_threads: wrong type");
  EXPECT_EQ(ErrorOf("allow_plain: true\nsolver_threads: 0\n"), "solver_threads: must be in 1..256");
  EXPECT_EQ(ErrorOf("allow_plain: true\nmax_queued_rankings: 0\n"), "max_queued_rankings: must be > 0");
  EXPECT_EQ(ErrorOf("allow_plain: true\nrealign: sometimes\n"), "realign: wrong type");
  EXPECT_EQ(ErrorOf("allow_plain: true\nsqlite_synchronous: off\n"), "sqlite_synchronous: 'off' is not normal or full");
  EXPECT_EQ(ErrorOf("allow_plain: true\nmin_profile_confidence: 2\n"), "min_profile_confidence: must be in 0..1");
  EXPECT_EQ(ErrorOf("allow_plain: true\nlog_level: loud\n"), "log_level: 'loud' is not a spdlog level");
  EXPECT_EQ(ErrorOf("allow_plain: true\nmetrics_listen: nowhere\n"), "metrics_listen: 'nowhere' is not HOST:PORT");
  EXPECT_EQ(ErrorOf("allow_plain: true\nrequest_endpoint: http://x\n"),
            "request_endpoint: 'http://x' is not a tcp://, ipc:// or inproc:// endpoint");
  EXPECT_EQ(ErrorOf("allow_plain: true\ncurve: {colour: red}\n"), "curve.colour: unknown key");
  EXPECT_THAT(ErrorOf("[1, 2]"), HasSubstr("top level must be a mapping"));
  EXPECT_THAT(ErrorOf("a: [unclosed"), HasSubstr("config: not YAML"));
}

TEST(ConfigTest, StateStoreIsSqliteUnlessEtcdIsConfigured) {
  absl::StatusOr<DaemonOptions> o = ParseDaemonConfig("allow_plain: true\n");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->state_store.backend, "sqlite");
  o = ParseDaemonConfig(R"(
allow_plain: true
state_store:
  backend: etcd
  etcd:
    endpoints: http://10.0.0.1:2379, http://10.0.0.2:2379
    prefix: /phasor/prod
    lease_seconds: 6
    name: host-a
    advertise_endpoint: tcp://10.0.0.1:7410
    timeout_ms: 800
    ranking_max_age_s: 600
    max_ranking_bytes: 2097152
)");
  ASSERT_TRUE(o.ok()) << o.status();
  const EtcdOptions& e = o->state_store.etcd;
  EXPECT_EQ(o->state_store.backend, "etcd");
  EXPECT_EQ(e.endpoints, (std::vector<std::string>{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}));
  EXPECT_EQ(e.prefix, "/phasor/prod");
  EXPECT_EQ(e.lease_seconds, 6u);
  EXPECT_EQ(e.name, "host-a");
  EXPECT_EQ(e.advertise_endpoint, "tcp://10.0.0.1:7410");
  EXPECT_EQ(e.timeout_ms, 800u);
  EXPECT_EQ(e.ranking_max_age_s, 600u);
  EXPECT_EQ(e.max_ranking_bytes, 2097152u);
  o = ParseDaemonConfig("allow_plain: true\nstate_store: {backend: etcd, etcd: {endpoints: [http://a:1, http://b:2]}}\n");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->state_store.etcd.endpoints.size(), 2u);
  EXPECT_EQ(o->state_store.etcd.lease_seconds, 3u);  // the default: failover within 5 s
  EXPECT_EQ(o->state_store.etcd.timeout_ms, 500u);
}

TEST(ConfigTest, BadStateStoreKeysNameTheKey) {
  const std::string base = "allow_plain: true\nstate_store:\n  backend: etcd\n  etcd:\n    endpoints: http://a:1\n";
  EXPECT_EQ(ErrorOf("allow_plain: true\nstate_store: {backend: redis}\n"),
            "state_store.backend: 'redis' is not sqlite or etcd");
  EXPECT_EQ(ErrorOf("allow_plain: true\nstate_store: {backend: etcd}\n"),
            "state_store.etcd.endpoints: required with backend etcd");
  EXPECT_EQ(ErrorOf("allow_plain: true\nstate_store: {backend: etcd, etcd: {endpoints: 'a:1'}}\n"),
            "state_store.etcd.endpoints: 'a:1' is not http://HOST:PORT");
  EXPECT_EQ(ErrorOf("allow_plain: true\nstate_store: {colour: red}\n"), "state_store.colour: unknown key");
  EXPECT_EQ(ErrorOf(base + "    colour: red\n"), "state_store.etcd.colour: unknown key");
  EXPECT_EQ(ErrorOf(base + "    prefix: phasor\n"),
            "state_store.etcd.prefix: 'phasor' must start with '/' and not end with it");
  EXPECT_EQ(ErrorOf(base + "    lease_seconds: 1\n"), "state_store.etcd.lease_seconds: must be in 2..3600");
  EXPECT_EQ(ErrorOf(base + "    lease_seconds: soon\n"), "state_store.etcd.lease_seconds: wrong type");
  EXPECT_EQ(ErrorOf(base + "    timeout_ms: 1000\n"),
            "state_store.etcd.timeout_ms: must be > 0 and below a third of lease_seconds");
  EXPECT_EQ(ErrorOf(base + "    advertise_endpoint: http://x\n"),
            "state_store.etcd.advertise_endpoint: 'http://x' is not a tcp://, ipc:// or inproc:// endpoint");
  EXPECT_EQ(ErrorOf(base + "    max_ranking_bytes: 10\n"),
            "state_store.etcd.max_ranking_bytes: must be at least 1048576");
}

TEST(ConfigTest, RankingPolicyParsesWithTheSimulatorsDefaults) {
  absl::StatusOr<DaemonOptions> o = ParseDaemonConfig("allow_plain: true\n");
  ASSERT_TRUE(o.ok()) << o.status().message();
  const placer::RankingPolicyOptions defaults;
  EXPECT_EQ(o->ranking_policy.min_gain, defaults.min_gain);
  EXPECT_EQ(o->ranking_policy.min_gain, 0.05);
  EXPECT_EQ(o->ranking_policy.min_headroom, 0.1);
  EXPECT_EQ(o->ranking_policy.shift_confidence, defaults.shift_confidence);
  EXPECT_FALSE(o->ranking_policy.discard_loops);
  EXPECT_FALSE(o->ranking_policy.trust_choice_gains);
  EXPECT_TRUE(o->ranking_policy.keep_packing);
  o = ParseDaemonConfig(
      "allow_plain: true\nranking_policy:\n  min_gain: -1\n  min_headroom: 0.25\n  discard_loops: true\n"
      "  shift_confidence: 0.75\n  trust_choice_gains: true\n  keep_packing: false\n");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->ranking_policy.min_gain, -1);
  EXPECT_EQ(o->ranking_policy.min_headroom, 0.25);
  EXPECT_TRUE(o->ranking_policy.discard_loops);
  EXPECT_EQ(o->ranking_policy.shift_confidence, 0.75);
  EXPECT_TRUE(o->ranking_policy.trust_choice_gains);
  EXPECT_FALSE(o->ranking_policy.keep_packing);
  EXPECT_EQ(ErrorOf("allow_plain: true\nranking_policy: 3\n"), "ranking_policy: must be a mapping");
  EXPECT_EQ(ErrorOf("allow_plain: true\nranking_policy: {colour: red}\n"), "ranking_policy.colour: unknown key");
  EXPECT_EQ(ErrorOf("allow_plain: true\nranking_policy: {min_gain: lots}\n"), "ranking_policy.min_gain: wrong type");
  EXPECT_EQ(ErrorOf("allow_plain: true\nranking_policy: {min_gain: .inf}\n"), "ranking_policy.min_gain: must be finite");
  EXPECT_EQ(ErrorOf("allow_plain: true\nranking_policy: {min_headroom: 1}\n"),
            "ranking_policy.min_headroom: 1 is not in [0, 1)");
  EXPECT_EQ(ErrorOf("allow_plain: true\nranking_policy: {shift_confidence: 2}\n"),
            "ranking_policy.shift_confidence: 2 is not in [0, 1]");
}

TEST(ConfigTest, PlainSocketsNeedTheExplicitOptionAndALocalEndpoint) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("request_endpoint: plain socket refused"));
  EXPECT_THAT(ErrorOf("allow_plain: true\nprofile_endpoint: tcp://10.0.0.1:7411\n"),
              HasSubstr("profile_endpoint: 'tcp://10.0.0.1:7411' is not ipc:// or loopback"));
  EXPECT_TRUE(ParseDaemonConfig("allow_plain: true\noffset_endpoint: tcp://localhost:1\n").ok());
  // With CURVE any TCP address is fine, but the key files must all be named.
  EXPECT_TRUE(ParseDaemonConfig("request_endpoint: tcp://0.0.0.0:7410\ncurve: {server_secret_key_file: s, "
                                "server_public_key_file: p, allowed_clients_file: a}\n")
                  .ok());
  EXPECT_EQ(ErrorOf("curve: {server_secret_key_file: s, server_public_key_file: p}\n"),
            "curve.allowed_clients_file: required with server_secret_key_file");
}

TEST(ConfigTest, LocalEndpoints) {
  EXPECT_TRUE(IsLocalEndpoint("ipc:///tmp/x"));
  EXPECT_TRUE(IsLocalEndpoint("inproc://x"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://127.0.0.1:5"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://[::1]:5"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://127example.com:5"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://*:5"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://192.168.1.1:5"));
}

TEST(ConfigTest, LoadNamesTheFile) {
  EXPECT_EQ(LoadDaemonConfig("/nonexistent/phasord.yaml").status().code(), absl::StatusCode::kNotFound);
  const std::string path = std::filesystem::temp_directory_path() / "phasord-config-test.yaml";
  std::ofstream(path) << "allow_plain: true\nbogus: 1\n";
  absl::StatusOr<DaemonOptions> o = LoadDaemonConfig(path);
  EXPECT_EQ(o.status().message(), path + ": bogus: unknown key");
  std::filesystem::remove(path);
}

TEST(ConfigTest, ShippedExampleConfigParses) {
  absl::StatusOr<DaemonOptions> o = LoadDaemonConfig("cmd/phasord/phasord.example.yaml");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->state_store.backend, "sqlite");
}

// deploy/systemd/: one host's phasord of three on etcd.
TEST(ConfigTest, ShippedEtcdConfigParses) {
  absl::StatusOr<DaemonOptions> o = LoadDaemonConfig("deploy/systemd/phasord-etcd.yaml");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->state_store.backend, "etcd");
  EXPECT_EQ(o->state_store.etcd.endpoints.size(), 3u);
  EXPECT_EQ(o->state_store.etcd.lease_seconds, 3u);
  EXPECT_EQ(o->state_store.etcd.advertise_endpoint, "tcp://10.0.0.1:7410");
}

}  // namespace
}  // namespace config_test
}  // namespace phasor::daemon
