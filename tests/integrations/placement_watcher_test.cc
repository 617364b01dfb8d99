// PlacementWatcher (integrations/client/placement_watcher.h) against a phasord
// running in this process on ipc:// endpoints in a temp dir
// (tests/daemon/daemon_harness.h): the flow table follows commits and
// releases, survives an outage, and says what it could not map.
#include "integrations/client/placement_watcher.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "probe/roce_parser.h"
#include "protocol/curve_keys.h"
#include "tests/daemon/daemon_harness.h"

namespace phasor::client {
namespace {

using ::phasor::testing::DaemonHarness;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kFabric[] = R"yaml(
servers:
  - {id: s1, gpus: 8, nics: [{name: nic0, gbps: 100}]}
  - {id: s2, gpus: 8, nics: [{name: nic0, gbps: 100}]}
  - {id: s3, gpus: 8, nics: [{name: nic0, gbps: 100}]}
  - {id: s4, gpus: 8, nics: [{name: nic0, gbps: 100}]}
switches: [leaf1]
links:
  - {a: s1, b: leaf1, nic: nic0}
  - {a: s2, b: leaf1, nic: nic0}
  - {a: s3, b: leaf1, nic: nic0}
  - {a: s4, b: leaf1, nic: nic0}
)yaml";

// s4 has no address: the probe does not see it.
constexpr char kAddresses[] = "s1 10.0.0.1\ns2 10.0.0.2\ns3 10.0.0.3 fd00::3\n";

probe::FlowKey Flow(const std::string& src, const std::string& dst) {
  probe::FlowKey k;
  EXPECT_TRUE(probe::ParseIp(src, &k.src)) << src;
  EXPECT_TRUE(probe::ParseIp(dst, &k.dst)) << dst;
  k.dest_qp = 0x11;
  return k;
}

// What one Poll did, as a word (or the error).
std::string Polled(PlacementWatcher& w) {
  absl::StatusOr<bool> r = w.Poll();
  if (!r.ok()) return r.status().ToString();
  return *r ? "refreshed" : "unchanged";
}

class PlacementWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<DaemonHarness>([this](daemon::DaemonOptions& o) {
      o.topology_path = std::string(o.state_path)
                            .replace(o.state_path.rfind('/'), std::string::npos, "/fabric.yaml");
      o.metrics_listen = "";  // no TCP port of its own
      if (tweak_) tweak_(o);
    });
    std::ofstream(daemon_->options().topology_path) << kFabric;
    ASSERT_TRUE(daemon_->Start());
    endpoint_ = daemon_->daemon().endpoints().request;
    auto c = Client::Connect({Endpoint(), 5000, client_curve_});
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
    auto addresses = probe::ServerAddresses::Parse(kAddresses, "servers.txt");
    ASSERT_TRUE(addresses.ok()) << addresses.status();
    addresses_ = *addresses;
  }

  // The request endpoint as first bound (a tcp://127.0.0.1:* wildcard
  // resolved; the ipc endpoints of the tests that restart phasord stay).
  const std::string& Endpoint() const { return endpoint_; }

  std::unique_ptr<PlacementWatcher> Watch(
      int poll_ms = 2000, std::optional<protocol::CurveClientKeys> curve = std::nullopt) {
    PlacementWatcherOptions o;
    o.endpoint = Endpoint();
    o.curve = std::move(curve);
    o.timeout_ms = 300;
    o.poll_ms = poll_ms;
    auto w = PlacementWatcher::Create(o, addresses_, diagnostics_);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }

  // Ranks job `job` (and only it) on `servers` and commits that.
  void Place(const std::string& job, const std::vector<std::string>& servers) {
    v1::RankRequest r;
    v1::Job* j = r.add_jobs();
    j->set_id(job);
    j->mutable_profile()->set_period_us(100000);
    j->mutable_profile()->mutable_square()->set_up_us(40000);
    j->mutable_profile()->mutable_square()->set_up_gbps(40);
    v1::Candidate* c = r.add_candidates();
    c->set_id("here");
    for (const std::string& s : servers) (*c->mutable_servers())[job].add_servers(s);
    absl::StatusOr<v1::RankReply> reply = client_->Rank(r);
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_EQ(reply->ranked_size(), 1) << reply->DebugString();
    ASSERT_TRUE(client_->Commit(reply->ranking_id(), "here").ok());
  }

  std::function<void(daemon::DaemonOptions&)> tweak_;
  std::optional<protocol::CurveClientKeys>
      client_curve_;  // the test's own client  // set before SetUp by a derived fixture
  std::unique_ptr<DaemonHarness> daemon_;
  std::string endpoint_;
  std::unique_ptr<Client> client_;
  probe::ServerAddresses addresses_;
  std::ostringstream diagnostics_;
};

TEST_F(PlacementWatcherTest, TableFollowsCommitsAndReleases) {
  std::unique_ptr<PlacementWatcher> w = Watch();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->table()->size(), 0u);
  EXPECT_EQ(w->version(), std::nullopt);

  // Nothing committed: version 0, an empty table.
  ASSERT_EQ(Polled(*w), "refreshed");
  EXPECT_EQ(w->version(), 0u);
  EXPECT_EQ(w->table()->size(), 0u);

  Place("job-a", {"s1", "s2"});
  ASSERT_EQ(Polled(*w), "refreshed");
  EXPECT_EQ(w->version(), 1u);
  std::shared_ptr<const probe::FlowJobTable> t = w->table();
  EXPECT_EQ(t->size(), 2u);  // s1 -> s2 and s2 -> s1
  EXPECT_EQ(t->JobOf(Flow("10.0.0.1", "10.0.0.2")), "job-a");
  EXPECT_EQ(t->JobOf(Flow("10.0.0.2", "10.0.0.1")), "job-a");
  EXPECT_EQ(t->JobOf(Flow("10.0.0.1", "10.0.0.3")), "");
  ASSERT_EQ(Polled(*w), "unchanged");  // unchanged: the same table object stays
  EXPECT_EQ(w->table(), t);

  Place("job-b", {"s2", "s3"});
  ASSERT_EQ(Polled(*w), "refreshed");
  EXPECT_EQ(w->version(), 2u);
  EXPECT_THAT(w->table()->Jobs(), ElementsAre("job-a", "job-b"));
  EXPECT_EQ(w->table()->JobOf(Flow("fd00::3", "10.0.0.2")), "job-b");
  EXPECT_EQ(t->JobOf(Flow("fd00::3", "10.0.0.2")), "");  // a reader's old table is untouched

  ASSERT_TRUE(client_->Release({"job-a"}).ok());
  ASSERT_EQ(Polled(*w), "refreshed");
  EXPECT_EQ(w->version(), 3u);
  EXPECT_THAT(w->table()->Jobs(), ElementsAre("job-b"));
  EXPECT_EQ(w->table()->JobOf(Flow("10.0.0.1", "10.0.0.2")), "");
  EXPECT_EQ(diagnostics_.str(), "");
  EXPECT_EQ(
      w->SummaryJson().dump(),
      "{\"placements\":{\"endpoint\":\"" + Endpoint() +
          "\",\"failures\":0,\"jobs\":1,\"polls\":5,\"refreshes\":4,\"rules\":4,\"version\":3}}");
}

TEST_F(PlacementWatcherTest, OutageKeepsTheLastTableAndIsSaidOnce) {
  std::unique_ptr<PlacementWatcher> w = Watch();
  ASSERT_NE(w, nullptr);
  Place("job-a", {"s1", "s2"});
  ASSERT_EQ(Polled(*w), "refreshed");
  daemon_->Stop();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<bool> polled = w->Poll();
    EXPECT_EQ(polled.status().code(), absl::StatusCode::kUnavailable) << polled.status();
  }
  EXPECT_EQ(w->table()->JobOf(Flow("10.0.0.1", "10.0.0.2")), "job-a");
  EXPECT_EQ(w->version(), 1u);
  EXPECT_EQ(diagnostics_.str(),
            "phasor-probe: --placements-from: phasord at " + Endpoint() +
                " not reachable: phasord at " + Endpoint() +
                ": no reply to GetSnapshot within 300 ms; keeping the last flow table (2 rules)\n");
  diagnostics_.str("");

  // Back, with the same stored placement: the version is the same, the
  // table stays; then a change arrives.
  ASSERT_TRUE(daemon_->Start());
  ASSERT_EQ(Polled(*w), "unchanged");
  EXPECT_EQ(diagnostics_.str(), "phasor-probe: --placements-from: phasord at " +
                                    Endpoint() + " answers again\n");
  ASSERT_TRUE(client_->Release({"job-a"}).ok());
  ASSERT_EQ(Polled(*w), "refreshed");
  EXPECT_EQ(w->table()->size(), 0u);
  EXPECT_EQ(w->SummaryJson()["placements"]["failures"], 3);
}

TEST_F(PlacementWatcherTest, ServersWithoutAddressAreLeftOutAndSaidOncePerVersion) {
  std::unique_ptr<PlacementWatcher> w = Watch();
  ASSERT_NE(w, nullptr);
  Place("job-a", {"s1", "s2", "s4"});
  ASSERT_EQ(Polled(*w), "refreshed");
  ASSERT_EQ(Polled(*w), "unchanged");
  EXPECT_EQ(w->table()->size(), 2u);
  EXPECT_EQ(w->table()->JobOf(Flow("10.0.0.2", "10.0.0.1")), "job-a");
  EXPECT_EQ(diagnostics_.str(),
            "phasor-probe: --placements-from: placement version 1: no address in --servers for "
            "server 's4' of "
            "job 'job-a'; their flows stay unmapped\n");
}

TEST_F(PlacementWatcherTest, TheThreadRefreshesOnItsOwn) {
  std::unique_ptr<PlacementWatcher> w = Watch(20);
  ASSERT_NE(w, nullptr);
  w->Start();
  Place("job-a", {"s1", "s3"});
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return w->version() == 1u; }));
  EXPECT_EQ(w->table()->JobOf(Flow("fd00::3", "10.0.0.1")), "job-a");
  Place("job-b", {"s1", "s2"});
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return w->version() == 2u; }));
  EXPECT_THAT(w->table()->Jobs(), ElementsAre("job-a", "job-b"));
  w.reset();  // joins the thread
}

// phasord on loopback TCP with CURVE only (ephemeral ports): a probe whose key phasord allows gets the placement through
// --placements-keys; a stranger's handshake fails and its table stays empty.
class PlacementWatcherCurveTest : public PlacementWatcherTest {
 protected:
  void SetUp() override {
    keys_ = ::phasor::testing::MakeTempDir();
    server_ = *protocol::GenerateCurveKeyPair();
    const protocol::CurveKeyPair probe = *protocol::GenerateCurveKeyPair();
    const protocol::CurveKeyPair stranger = *protocol::GenerateCurveKeyPair();
    ASSERT_TRUE(protocol::WriteKeyPair(server_, keys_ + "/server", false).ok());
    ASSERT_TRUE(protocol::WriteKeyPair(probe, keys_ + "/probe", false).ok());
    ASSERT_TRUE(protocol::WriteKeyPair(stranger, keys_ + "/stranger", false).ok());
    std::ofstream(keys_ + "/allowed") << probe.public_key << "\n";
    tweak_ = [this](daemon::DaemonOptions& o) {
      ::phasor::testing::UseCurveOnLoopback(o, keys_);  // ephemeral ports
    };
    client_curve_ =
        protocol::CurveClientKeys{server_.public_key, probe.public_key, probe.secret_key};
    PlacementWatcherTest::SetUp();
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(keys_);
  }
  std::string keys_;
  protocol::CurveKeyPair server_;
};

TEST_F(PlacementWatcherCurveTest, AllowedKeysGetThePlacementAStrangerDoesNot) {
  Place("job-a", {"s1", "s2"});
  auto allowed = LoadPlacementKeys(keys_ + "/server.pub", keys_ + "/probe");
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  std::unique_ptr<PlacementWatcher> w = Watch(2000, *allowed);
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(Polled(*w), "refreshed");
  EXPECT_EQ(w->table()->JobOf(Flow("10.0.0.1", "10.0.0.2")), "job-a");

  auto stranger = LoadPlacementKeys(keys_ + "/server.pub", keys_ + "/stranger");
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  std::unique_ptr<PlacementWatcher> refused = Watch(2000, *stranger);
  ASSERT_NE(refused, nullptr);
  EXPECT_THAT(Polled(*refused), HasSubstr("UNAVAILABLE"));
  EXPECT_EQ(refused->table()->size(), 0u);
  EXPECT_EQ(refused->version(), std::nullopt);

  // Without keys a TCP endpoint off loopback would be refused outright;
  // this one is loopback, so the plain socket is allowed and phasord drops it.
  std::unique_ptr<PlacementWatcher> plain = Watch(2000);
  ASSERT_NE(plain, nullptr);
  EXPECT_THAT(Polled(*plain), HasSubstr("UNAVAILABLE"));
}

TEST(PlacementWatcherOptionsTest, BadOptionsAreNamed) {
  std::ostringstream diagnostics;
  auto create = [&](PlacementWatcherOptions o) {
    return PlacementWatcher::Create(std::move(o), probe::ServerAddresses(), diagnostics).status();
  };
  PlacementWatcherOptions o;
  o.endpoint = "tcp://10.1.2.3:7410";
  absl::Status s = create(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--placements-from"));
  EXPECT_THAT(s.message(), HasSubstr("give --placements-server-key and --placements-keys"));
  o.endpoint = "http://127.0.0.1:7410";
  EXPECT_THAT(create(o).message(),
              HasSubstr("--placements-from: 'http://127.0.0.1:7410' is not a"));
  o.endpoint = "ipc:///tmp/phasord-requests";
  o.poll_ms = 5;
  EXPECT_EQ(create(o), absl::InvalidArgumentError("--placements-poll-ms: 5 is below 10"));
  o.poll_ms = 2000;
  o.timeout_ms = 0;
  EXPECT_EQ(create(o), absl::InvalidArgumentError("--placements-timeout-ms: 0 is below 1"));
  EXPECT_EQ(LoadPlacementKeys("server.pub", "").status(),
            absl::InvalidArgumentError(
                "--placements-server-key and --placements-keys: give both or neither"));
  EXPECT_THAT(LoadPlacementKeys("/nonexistent/server.pub", "/nonexistent/probe").status().message(),
              HasSubstr("--placements-server-key"));
  EXPECT_EQ(diagnostics.str(), "");
}

}  // namespace
}  // namespace phasor::client
