// End-to-end tests of `phasor-probe --publish` and `phasor profile
// --publish`: a phasord runs in this
// process on ipc:// endpoints in a temp dir (tests/daemon/daemon_harness.h,
// stopped by its destructor), phasor-probe runs as a subprocess (one DPDK EAL
// per process) on a generated pcap, and the profiles it publishes are checked
// through phasord: its metrics and a ranking that takes the jobs' profiles
// from what the probe sent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "integrations/client/client.h"
#include "nlohmann/json.hpp"
#include "protocol/convert.h"
#include "protocol/curve_keys.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/probe/probe_run.h"
#include "tests/probe/synthetic_pcap.h"
#include "tests/testing/subprocess.h"

namespace phasor::probe {
namespace {

namespace fs = std::filesystem;
using phasor::testing::DaemonHarness;

using testing::CountOf;
using testing::kEal;
using testing::ProbeRun;
using testing::RunProbe;
using testing::Summary;




class ProbePublishTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("phasor_publish_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    pcap_ = (dir_ / "two.pcap").string();
    ASSERT_TRUE(testing::WriteTwoJobPcap(pcap_, 1500).ok());
    flows_ = (dir_ / "flows.txt").string();
    std::ofstream(flows_) << "job-a 10.0.0.1 10.0.0.2 0x11\njob-b fd00::1 * *\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Eal() const { return std::string(kEal) + " --vdev=net_pcap0,rx_pcap=" + pcap_; }

  fs::path dir_;
  std::string pcap_, flows_;
};

// job-a and job-b each alone on a link (the shift lives on the job's own
// period), and both on one link.
v1::RankRequest RequestWithoutProfiles() {
  v1::RankRequest r;
  for (const char* l : {"l1", "l2"}) {
    v1::Link* link = r.add_links();
    link->set_id(l);
    link->set_capacity_gbps(0.05);
  }
  r.add_jobs()->set_id("job-a");
  r.add_jobs()->set_id("job-b");
  v1::Candidate* apart = r.add_candidates();
  apart->set_id("apart");
  (*(*apart->mutable_links())["job-a"].mutable_shares())["l1"] = 1;
  (*(*apart->mutable_links())["job-b"].mutable_shares())["l2"] = 1;
  v1::Candidate* shared = r.add_candidates();
  shared->set_id("shared");
  (*(*shared->mutable_links())["job-a"].mutable_shares())["l1"] = 1;
  (*(*shared->mutable_links())["job-b"].mutable_shares())["l1"] = 1;
  return r;
}

TEST_F(ProbePublishTest, ProfilesReachPhasordAndFeedItsRanking) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  auto c = client::Client::Connect({h.options().request_endpoint, 5000, std::nullopt});
  ASSERT_TRUE(c.ok()) << c.status().message();
  // Before the probe ran, phasord knows no profile of the jobs.
  EXPECT_EQ((*c)->Rank(RequestWithoutProfiles()).status().code(), absl::StatusCode::kNotFound);

  const ProbeRun run = RunProbe("--flows " + flows_ + " --publish " + h.options().profile_endpoint +
                           " --publish-link tor1-up" + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  // The JSON lines are still written.
  ASSERT_EQ(run.by_subject.size(), 2u) << run.r.out;
  const nlohmann::json& a = run.by_subject.at("job-a");
  const nlohmann::json& b = run.by_subject.at("job-b");
  ASSERT_TRUE(a["periodic"].get<bool>() && b["periodic"].get<bool>()) << run.r.out;
  const uint32_t period_a = a["profile"]["period_us"], period_b = b["profile"]["period_us"];
  EXPECT_NEAR(period_a, 50000, 250);
  EXPECT_NEAR(period_b, 80000, 400);
  const nlohmann::json summary = Summary(run.r.err, "publish");
  ASSERT_TRUE(summary.is_object()) << run.r.err;
  EXPECT_EQ(summary["sent"], 3) << summary.dump();  // two jobs and the link
  EXPECT_EQ(summary["dropped"], 0) << summary.dump();
  EXPECT_EQ(CountOf(run.r.err, "not reachable"), 0) << run.r.err;

  ASSERT_TRUE(DaemonHarness::WaitFor([&] {
    return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}) == 2 &&
           h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "link"}}) == 1;
  })) << h.daemon().metrics().Render();
  EXPECT_EQ(h.daemon().metrics().Value("phasord_profiles_ignored_total", {{"reason", "low_confidence"}}), 0);

  // A ranking that names the jobs without profiles takes the probe's ones:
  // apart, each job's shift lives on the period the probe measured.
  absl::StatusOr<v1::RankReply> reply = (*c)->Rank(RequestWithoutProfiles());
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  ASSERT_EQ(reply->ranked_size(), 2);
  bool checked = false;
  for (const v1::RankedCandidate& rc : reply->ranked()) {
    if (rc.candidate() != "apart") continue;
    std::map<std::string, uint32_t> periods;
    for (const v1::JobShift& s : rc.shifts()) periods[s.job()] = s.period_us();
    EXPECT_EQ(periods["job-a"], period_a);
    EXPECT_EQ(periods["job-b"], period_b);
    checked = true;
  }
  EXPECT_TRUE(checked);
}

TEST_F(ProbePublishTest, UnreachablePhasordIsSaidOnceAndTheProbeGoesOn) {
  // Nothing listens here.
  const std::string endpoint = "ipc://" + (dir_ / "nobody").string();
  const ProbeRun run = RunProbe("--flows " + flows_ + " --publish " + endpoint + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  EXPECT_EQ(run.by_subject.size(), 2u) << run.r.out;
  EXPECT_EQ(CountOf(run.r.err, "not reachable"), 1) << run.r.err;
  const nlohmann::json summary = Summary(run.r.err, "publish");
  ASSERT_TRUE(summary.is_object()) << run.r.err;
  EXPECT_EQ(summary["sent"], 0);
  EXPECT_EQ(summary["dropped"], 2);
  // One send waited (100 ms at most), the other did not; no linger at exit.
  EXPECT_LT(run.seconds, 20) << "the probe blocked on an absent phasord";
}

TEST_F(ProbePublishTest, CurveKeysAllowedProbePublishesUnknownOneDoesNot) {
  const std::string keys = (dir_ / "keys").string();
  fs::create_directories(keys);
  const protocol::CurveKeyPair server = *protocol::GenerateCurveKeyPair();
  const protocol::CurveKeyPair probe = *protocol::GenerateCurveKeyPair();
  const protocol::CurveKeyPair stranger = *protocol::GenerateCurveKeyPair();
  ASSERT_TRUE(protocol::WriteKeyPair(server, keys + "/server", false).ok());
  ASSERT_TRUE(protocol::WriteKeyPair(probe, keys + "/probe", false).ok());
  ASSERT_TRUE(protocol::WriteKeyPair(stranger, keys + "/stranger", false).ok());
  std::ofstream(keys + "/allowed") << probe.public_key << "\n";
  DaemonHarness h([&](daemon::DaemonOptions& o) { ::phasor::testing::UseCurveOnLoopback(o, keys); });
  ASSERT_TRUE(h.Start());
  const std::string endpoint = h.daemon().endpoints().profile;
  ASSERT_EQ(endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << endpoint;

  ProbeRun run = RunProbe("--flows " + flows_ + " --publish " + endpoint + " --publish-server-key " + keys +
                          "/server.pub --publish-keys " + keys + "/probe" + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  EXPECT_EQ(Summary(run.r.err, "publish")["sent"], 2) << run.r.err;
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] { return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}) == 2; }));

  // A key phasord does not allow: the handshake fails, nothing is queued.
  run = RunProbe("--flows " + flows_ + " --publish " + endpoint + " --publish-server-key " + keys +
                 "/server.pub --publish-keys " + keys + "/stranger" + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  EXPECT_EQ(run.by_subject.size(), 2u);
  EXPECT_EQ(CountOf(run.r.err, "not reachable"), 1) << run.r.err;
  EXPECT_EQ(Summary(run.r.err, "publish")["dropped"], 2) << run.r.err;
  EXPECT_GE(h.daemon().metrics().Value("phasord_curve_refused_total"), 1);
  EXPECT_EQ(h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}), 2);

  // A plain probe cannot talk to this phasord either.
  run = RunProbe("--flows " + flows_ + " --publish " + endpoint + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  EXPECT_EQ(Summary(run.r.err, "publish")["sent"], 0) << run.r.err;
  EXPECT_EQ(h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}), 2);
}

TEST_F(ProbePublishTest, UnmappedFlowsAreNotPublished) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  const ProbeRun run = RunProbe("--publish " + h.options().profile_endpoint + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  EXPECT_EQ(run.by_subject.size(), 2u) << run.r.out;  // flow subjects, still on stdout
  const nlohmann::json summary = Summary(run.r.err, "publish");
  ASSERT_TRUE(summary.is_object()) << run.r.err;
  EXPECT_EQ(summary["sent"], 0);
  EXPECT_EQ(summary["dropped"], 0);  // phasord was there: nothing was even tried
  EXPECT_EQ(summary["skipped"]["unmapped_flow"], 2) << summary.dump();
}

TEST_F(ProbePublishTest, BadPublishOptions) {
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--publish tcp://10.1.2.3:7411 --publish-server-key " + (dir_ / "two.pcap").string() + " --publish-keys " +
           (dir_ / "two").string(),
       "not a 40-character Z85 CURVE key"},
      {"--publish http://127.0.0.1:7411", "--publish: 'http://127.0.0.1:7411' is not a tcp://, ipc:// or inproc://"},
      {"--publish tcp://10.1.2.3:7411", "plain sockets are refused there"},
      {"--publish tcp://127.0.0.1:7411 --publish-keys " + (dir_ / "k").string(),
       "--publish-server-key and --publish-keys: give both or neither"},
      {"--publish tcp://10.1.2.3:7411 --publish-server-key " + (dir_ / "missing.pub").string() + " --publish-keys " +
           (dir_ / "k").string(),
       "--publish-server-key: "},
      {"--publish-keys " + (dir_ / "k").string(), "need --publish"},
      {"--publish-link tor1-up", "--publish-link needs --publish"},
      {"--publish ipc:///tmp/x --publish-timeout-ms -1", "--publish-timeout-ms: -1 is negative"},
  };
  for (const Case& k : cases) {
    const ProbeRun run = RunProbe(k.args + Eal());
    EXPECT_EQ(run.r.exit_code, 2) << k.args << "\n" << run.r.err;
    EXPECT_NE(run.r.err.find(k.message), std::string::npos) << k.args << "\n" << run.r.err;
    EXPECT_EQ(CountOf(run.r.err, "\n"), 1) << k.args << "\n" << run.r.err;
    EXPECT_TRUE(run.r.out.empty()) << k.args;
  }
}

// RDMA counter snapshots (docs/probe.md) in `dir`: mlx5_0 port 1 sends 2 MB
// in the first 100 ms of every 400 ms and receives half of that.
void WriteCounterSnapshots(const fs::path& dir) {
  uint64_t words = 0;
  for (int i = 0; i < 160; ++i) {
    const fs::path port = dir / std::to_string(testing::kStartUs + i * 50000) / "mlx5_0/ports/1/counters";
    fs::create_directories(port);
    std::ofstream(port / "port_xmit_data") << words;
    std::ofstream(port / "port_rcv_data") << words / 2;
    if (i % 8 < 2) words += 2'000'000 / 4 / 2;
  }
}

TEST_F(ProbePublishTest, PhasorProfilePublishesCounterProfilesAsTheirTableSays) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  WriteCounterSnapshots(dir_ / "snaps");
  const std::string subjects = (dir_ / "subjects.txt").string();
  std::ofstream(subjects) << "# NIC port -> what phasord knows it as\n"
                          << "mlx5_0/1/tx job job-a\n"
                          << "mlx5_0/1/rx link l1   # the server's downlink\n";
  const auto r = phasor::testing::RunCommand(std::string(PHASOR_BIN) + " profile --bin-us 50000 --counters " +
                                             (dir_ / "snaps").string() + " --publish " +
                                             h.options().profile_endpoint + " --publish-subjects " + subjects);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountOf(r.out, "\"subject\""), 2) << r.out;  // the JSON lines are still printed
  const nlohmann::json summary = Summary(r.err, "publish");
  ASSERT_TRUE(summary.is_object()) << r.err;
  EXPECT_EQ(summary["sent"], 2) << summary.dump();
  EXPECT_EQ(summary["dropped"], 0) << summary.dump();
  ASSERT_TRUE(DaemonHarness::WaitFor([&] {
    return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}) == 1 &&
           h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "link"}}) == 1;
  })) << h.daemon().metrics().Render();

  // A ranking naming job-a without a profile takes the counters' one: its
  // shift lives on the 400 ms period the counters show.
  auto c = client::Client::Connect({h.options().request_endpoint, 5000, std::nullopt});
  ASSERT_TRUE(c.ok());
  v1::RankRequest request = RequestWithoutProfiles();
  v1::Job* b = request.mutable_jobs(1);
  b->mutable_profile()->set_period_us(300000);
  b->mutable_profile()->mutable_square()->set_up_us(100000);
  b->mutable_profile()->mutable_square()->set_up_gbps(0.04);
  absl::StatusOr<v1::RankReply> reply = (*c)->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  bool checked = false;
  for (const v1::RankedCandidate& rc : reply->ranked()) {
    for (const v1::JobShift& s : rc.shifts()) {
      if (s.job() != "job-a") continue;
      EXPECT_NEAR(s.period_us(), 400000, 4000);
      checked = true;
    }
  }
  EXPECT_TRUE(checked);
}

TEST_F(ProbePublishTest, PhasorProfilePublishBadInputs) {
  WriteCounterSnapshots(dir_ / "snaps");
  const std::string base =
      std::string(PHASOR_BIN) + " profile --bin-us 50000 --counters " + (dir_ / "snaps").string();
  const std::string nobody = "ipc://" + (dir_ / "nobody").string();
  // Ports are not jobs: the table is required, and nothing is measured without it.
  auto r = phasor::testing::RunCommand(base + " --publish " + nobody);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "phasor profile: --publish needs --publish-subjects to name what the measured subjects are (NIC "
            "and switch ports, and flows without a --flows table, are not job or link ids)\n");
  // A malformed table line is named.
  const std::string bad = (dir_ / "bad.txt").string();
  std::ofstream(bad) << "mlx5_0/1/tx job job-a\nmlx5_0/1/rx switch s1\n";
  r = phasor::testing::RunCommand(base + " --publish " + nobody + " --publish-subjects " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "phasor profile: " + bad + ":2: 'switch' is not job or link\n");
  // A plain socket to a non-local address is refused before measuring.
  const std::string good = (dir_ / "good.txt").string();
  std::ofstream(good) << "mlx5_0/1/tx job job-a\n";
  r = phasor::testing::RunCommand(base + " --publish tcp://192.0.2.1:7411 --publish-subjects " + good);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, ::testing::HasSubstr("plain sockets are refused there"));
  // Options that need --publish.
  r = phasor::testing::RunCommand(base + " --publish-subjects " + good);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "phasor profile: --publish-subjects, --publish-server-key and --publish-keys need --publish\n");
  // Nobody listening: the lines are printed, the command says what was lost and exits 1.
  r = phasor::testing::RunCommand(base + " --publish " + nobody + " --publish-subjects " + good);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(CountOf(r.out, "\"subject\""), 2) << r.out;
  EXPECT_EQ(CountOf(r.err, "not reachable"), 1) << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr("phasor profile: --publish: 1 profile(s) not delivered to phasord at " +
                                          nobody + "\n"));
}

}  // namespace
}  // namespace phasor::probe
