// End-to-end test of `phasor-probe --placements-from`: a phasord process runs
// on ipc:// endpoints in a temp dir (started here, stopped by its pid), a
// placement of job J on servers s1 and s2 is ranked and committed through the
// client, phasor-probe (a subprocess: one DPDK EAL per process) captures a
// generated pcap of traffic between those servers' addresses, maps it to J by
// phasord's placement, and publishes it; phasord then holds the measured
// profile under J.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "integrations/client/client.h"
#include "nlohmann/json.hpp"
#include "tests/daemon/daemon_harness.h"
#include "tests/probe/probe_run.h"
#include "tests/probe/synthetic_pcap.h"
#include "tests/testing/subprocess.h"

namespace phasor::probe {
namespace {

namespace fs = std::filesystem;
using ::phasor::testing::DaemonHarness;
using ::testing::HasSubstr;

using testing::CountOf;
using testing::kEal;
using testing::ProbeRun;
using testing::RunProbe;
using testing::Summary;

// s1 and s2 under one leaf switch (where phasord routes server-form candidates).
constexpr char kFabric[] = R"yaml(
servers:
  - {id: s1, gpus: 8, nics: [{name: nic0, gbps: 100}]}
  - {id: s2, gpus: 8, nics: [{name: nic0, gbps: 100}]}
switches: [leaf1]
links:
  - {a: s1, b: leaf1, nic: nic0}
  - {a: s2, b: leaf1, nic: nic0}
)yaml";

// phasord as a process with its state, sockets and fabric in `dir`.
class PhasordProcess {
 public:
  explicit PhasordProcess(const std::string& dir) : dir_(dir) {
    std::ofstream(dir_ + "/fabric.yaml") << kFabric;
    std::ofstream(dir_ + "/phasord.yaml") << "request_endpoint: " << endpoint("requests") << "\n"
                                          << "profile_endpoint: " << endpoint("profiles") << "\n"
                                          << "offset_endpoint: " << endpoint("offsets") << "\n"
                                          << "metrics_listen: ''\n"
                                          << "allow_plain: true\n"
                                          << "log_level: warn\n"
                                          << "topology_path: " << dir_ << "/fabric.yaml\n"
                                          << "state_path: " << dir_ << "/state.db\n";
  }
  ~PhasordProcess() { Stop(); }

  // Starts phasord and waits for its ready file.
  bool Start() {
    const std::string ready = dir_ + "/ready.json";
    fs::remove(ready);
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string config = dir_ + "/phasord.yaml";
      ::execl(PHASORD_BIN, "phasord", "--config", config.c_str(), "--ready-file", ready.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return DaemonHarness::WaitFor([&] { return fs::exists(ready); });
  }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::string endpoint(const std::string& name) const { return "ipc://" + dir_ + "/" + name; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
};




class ProbePlacementsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::phasor::testing::MakeTempDir();
    // job-a's flow (10.0.0.1 -> 10.0.0.2, 50 ms period) runs between s1
    // and s2; job-b's (fd00::1 -> fd00::2) between servers phasord never placed.
    pcap_ = dir_ + "/two.pcap";
    ASSERT_TRUE(testing::WriteTwoJobPcap(pcap_, 1500).ok());
    servers_ = dir_ + "/servers.txt";
    std::ofstream(servers_) << "# server  address\ns1 10.0.0.1\ns2 10.0.0.2\ns3 fd00::1\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Eal() const { return std::string(kEal) + " --vdev=net_pcap0,rx_pcap=" + pcap_; }

  std::string dir_, pcap_, servers_;
};

// Job J on s1, s2 as the host scheduler would ask: a server-form candidate
// with a 100 ms square wave, which the probe's 50 ms measurement replaces.
placer::RankRequest PlaceJOnS1S2() {
  placer::RankRequest r;
  placer::Job j{"J", {}, std::nullopt};
  j.profile.period_us = 100000;
  j.profile.square = placer::SquareWave{40000, 40, 0, 0};
  r.jobs = {j};
  placer::Candidate c;
  c.id = "s1-s2";
  c.servers["J"] = {"s1", "s2"};
  r.candidates = {c};
  return r;
}

TEST_F(ProbePlacementsTest, CommittedPlacementMapsTheCapturedFlowsToTheJob) {
  PhasordProcess phasord(dir_);
  ASSERT_TRUE(phasord.Start());
  auto c = client::Client::Connect({phasord.endpoint("requests"), 5000, std::nullopt});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<client::RankResult> ranked = (*c)->Rank(PlaceJOnS1S2());
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  ASSERT_TRUE((*c)->Commit(ranked->ranking_id, "s1-s2").ok());

  const ProbeRun run =
      RunProbe("--placements-from " + phasord.endpoint("requests") + " --servers " + servers_ +
               " --publish " + phasord.endpoint("profiles") + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  // s1 <-> s2 is J's; job-b's flow between unplaced servers stays a flow.
  ASSERT_EQ(run.by_subject.size(), 2u) << run.r.out;
  ASSERT_EQ(run.by_subject.count("J"), 1u) << run.r.out;
  EXPECT_EQ(run.by_subject.count("fd00::1>fd00::2/qp=0x000022"), 1u) << run.r.out;
  const nlohmann::json& j = run.by_subject.at("J");
  ASSERT_TRUE(j["periodic"].get<bool>()) << j.dump();
  const uint32_t period = j["profile"]["period_us"];
  EXPECT_NEAR(period, 50000, 250);
  const nlohmann::json placements = Summary(run.r.err, "placements");
  ASSERT_TRUE(placements.is_object()) << run.r.err;
  EXPECT_EQ(placements["version"], 1) << placements.dump();
  EXPECT_EQ(placements["jobs"], 1) << placements.dump();
  EXPECT_EQ(placements["rules"], 2) << placements.dump();
  EXPECT_EQ(placements["failures"], 0) << placements.dump();
  const nlohmann::json publish = Summary(run.r.err, "publish");
  ASSERT_TRUE(publish.is_object()) << run.r.err;
  EXPECT_EQ(publish["sent"], 1) << publish.dump();
  EXPECT_EQ(publish["skipped"]["unmapped_flow"], 1) << publish.dump();
  EXPECT_EQ(CountOf(run.r.err, "not reachable"), 0) << run.r.err;

  // phasord holds the measured profile under J: its snapshot gives J the
  // probe's 50 ms period (with the probe's phase), not the request's 100 ms.
  absl::StatusOr<v1::Snapshot> snapshot;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] {
    snapshot = (*c)->GetSnapshot();
    return snapshot.ok() && snapshot->placement().jobs_size() == 1 &&
           snapshot->placement().jobs(0).profile().period_us() != 100000;
  })) << (snapshot.ok() ? snapshot->DebugString() : snapshot.status().ToString());
  const v1::Job& measured = snapshot->placement().jobs(0);
  EXPECT_EQ(measured.id(), "J");
  EXPECT_EQ(measured.profile().period_us(), period);
  EXPECT_EQ(measured.profile().t0_epoch_us(), j["profile"]["t0_epoch_us"].get<int64_t>());
  // Nothing arrived under the flow's own name.
  v1::RankRequest by_flow_name;
  by_flow_name.add_jobs()->set_id("10.0.0.1>10.0.0.2/qp=0x000011");
  const absl::Status unknown = (*c)->Rank(by_flow_name).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound) << unknown;
  EXPECT_THAT(unknown.message(), HasSubstr("none known for job '10.0.0.1>10.0.0.2/qp=0x000011'"));
}

TEST_F(ProbePlacementsTest, StaticFlowsWinOverThePlacement) {
  PhasordProcess phasord(dir_);
  ASSERT_TRUE(phasord.Start());
  auto c = client::Client::Connect({phasord.endpoint("requests"), 5000, std::nullopt});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<client::RankResult> ranked = (*c)->Rank(PlaceJOnS1S2());
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  ASSERT_TRUE((*c)->Commit(ranked->ranking_id, "s1-s2").ok());
  const std::string flows = dir_ + "/flows.txt";
  std::ofstream(flows) << "pinned 10.0.0.1 10.0.0.2 0x11\nother fd00::1 * *\n";
  const ProbeRun run = RunProbe("--flows " + flows + " --placements-from " +
                                phasord.endpoint("requests") + " --servers " + servers_ + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  EXPECT_EQ(run.by_subject.count("pinned"), 1u) << run.r.out;
  EXPECT_EQ(run.by_subject.count("other"), 1u) << run.r.out;
  EXPECT_EQ(run.by_subject.count("J"), 0u) << run.r.out;
}

TEST_F(ProbePlacementsTest, AbsentPhasordIsSaidOnceAndTheProbeGoesOn) {
  // Nothing listens here.
  const std::string nobody = "ipc://" + dir_ + "/nobody";
  const ProbeRun run = RunProbe("--placements-from " + nobody +
                                " --placements-timeout-ms 200 --servers " + servers_ + Eal());
  ASSERT_EQ(run.r.exit_code, 0) << run.r.err;
  EXPECT_EQ(run.by_subject.size(), 2u) << run.r.out;  // unmapped flows, still measured
  EXPECT_EQ(run.by_subject.count("J"), 0u) << run.r.out;
  EXPECT_EQ(CountOf(run.r.err, "not reachable"), 1) << run.r.err;
  EXPECT_THAT(
      run.r.err,
      HasSubstr(
          "phasor-probe: --placements-from: phasord at " + nobody + " not reachable: phasord at " +
          nobody +
          ": no reply to GetSnapshot within 200 ms; keeping the last flow table (0 rules)\n"));
  const nlohmann::json placements = Summary(run.r.err, "placements");
  ASSERT_TRUE(placements.is_object()) << run.r.err;
  EXPECT_EQ(placements["version"], nullptr);
  EXPECT_GE(placements["failures"].get<int>(), 1);
}

TEST_F(ProbePlacementsTest, BadPlacementOptions) {
  const std::string bad = dir_ + "/bad.txt";
  std::ofstream(bad) << "s1 10.0.0.1\ns2 10.0.0.x\n";
  const std::string from = " --placements-from ipc://" + dir_ + "/requests";
  struct Case {
    std::string args, message;
  } cases[] = {
      {from, "phasor-probe: --placements-from needs --servers (the servers' addresses)\n"},
      {"--servers " + servers_,
       "phasor-probe: --servers, --placements-server-key and --placements-keys need "
       "--placements-from\n"},
      {from + " --servers " + dir_ + "/missing.txt",
       "phasor-probe: --servers: cannot open '" + dir_ + "/missing.txt'\n"},
      {from + " --servers " + bad,
       "phasor-probe: servers '" + bad + "' line 2: ip: '10.0.0.x' is not an IP address\n"},
      {from + " --servers " + servers_ + " --placements-poll-ms 5",
       "phasor-probe: --placements-poll-ms: 5 is below 10\n"},
      {from + " --servers " + servers_ + " --placements-keys " + dir_ + "/k",
       "phasor-probe: --placements-server-key and --placements-keys: give both or neither\n"},
      {" --placements-from tcp://10.1.2.3:7410 --servers " + servers_,
       "give --placements-server-key and --placements-keys"},
  };
  for (const Case& k : cases) {
    const ProbeRun run = RunProbe(k.args + Eal());
    EXPECT_EQ(run.r.exit_code, 2) << k.args << "\n" << run.r.err;
    EXPECT_THAT(run.r.err, HasSubstr(k.message)) << k.args;
    EXPECT_EQ(CountOf(run.r.err, "\n"), 1) << k.args << "\n" << run.r.err;
    EXPECT_TRUE(run.r.out.empty()) << k.args;
  }
}

}  // namespace
}  // namespace phasor::probe
