// The C++ IterationGate against an in-process phasord: once and pace modes
// land iterations on the job's slots, a late joiner gets its offset with
// GetOffset, and without phasord the gate fails open within its bound.
#include "integrations/agent/iteration_gate.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "gtest/gtest.h"
#include "tests/testing/probe_publisher.h"
#include "integrations/client/client.h"
#include "placer/rank_json.h"
#include "placer/ranking_policy.h"
#include "protocol/convert.h"
#include "tests/daemon/daemon_harness.h"

namespace phasor::agent {
namespace {

using ::phasor::testing::DaemonHarness;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// How far after its last slot `t` is (0 = exactly on a slot).
int64_t SinceSlot(const v1::OffsetUpdate& o, int64_t t) {
  int64_t d = (t - o.origin_epoch_us() - o.shift_us()) % o.period_us();
  return d < 0 ? d + o.period_us() : d;
}

TEST(IterationGateTest, NextSlotIsTheFirstSlotAtOrAfterNow) {
  v1::OffsetUpdate o;
  o.set_origin_epoch_us(1000000);
  o.set_shift_us(300);
  o.set_period_us(1000);
  EXPECT_EQ(IterationGate::NextSlot(o, 1000300), 1000300);
  EXPECT_EQ(IterationGate::NextSlot(o, 1000301), 1001300);
  EXPECT_EQ(IterationGate::NextSlot(o, 1005299), 1005300);
  EXPECT_EQ(IterationGate::NextSlot(o, 999000), 999300);  // before the origin
  EXPECT_EQ(IterationGate::NextSlot(o, 998300), 998300);
  EXPECT_EQ(IterationGate::NextSlot(o, 998299), 998300);
}

TEST(IterationGateTest, BadOptionsAreRefused) {
  IterationGateOptions o;
  EXPECT_EQ(IterationGate::Create(o).status().message(), "job: required");
  o.job = "a";
  EXPECT_EQ(IterationGate::Create(o).status().message(), "request_endpoint: required");
  o.request_endpoint = "ipc:///tmp/x";
  o.offset_endpoint = "bogus://x";
  EXPECT_EQ(IterationGate::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

// The gate on a fake clock that only its sleeps move (no phasord: the offset
// comes with the options, and nobody binds the endpoints).
class FakeClockGate {
 public:
  FakeClockGate(GateMode mode, bool reslot) : dir_(::phasor::testing::MakeTempDir()) {
    IterationGateOptions o;
    o.job = "a";
    o.request_endpoint = "ipc://" + dir_ + "/nobody-requests";
    o.offset_endpoint = "ipc://" + dir_ + "/nobody-offsets";
    o.mode = mode;
    o.reslot = reslot;
    v1::OffsetUpdate offset;
    offset.set_job("a");
    offset.set_origin_epoch_us(1'000'000);
    offset.set_period_us(10'000);
    offset.set_shift_us(2'000);
    offset.set_version(1);
    o.initial_offset = offset;
    o.now_epoch_us = [this] { return now_; };
    o.sleep_us = [this](int64_t us) { now_ += us; };
    gate_ = *IterationGate::Create(std::move(o));
  }
  ~FakeClockGate() { std::filesystem::remove_all(dir_); }

  // Runs an iteration of `us`, then Wait().
  GateResult After(int64_t us) {
    now_ += us;
    return gate_->Wait();
  }
  int64_t now() const { return now_; }

 private:
  std::string dir_;
  int64_t now_ = 1'000'500;
  std::unique_ptr<IterationGate> gate_;
};

// Slots every 10 ms at 1,002,000 + n x 10,000 us. An iteration of 13 ms
// overruns its slot: re-slot starts the next one at once (waits 0) and the
// grid moves there; without re-slot the gate waits for 1,032,000 (7 ms of a
// 10 ms period lost).
TEST(IterationGateFakeClockTest, PaceReslotsAnIterationThatOverranItsSlot) {
  FakeClockGate g(GateMode::kPace, /*reslot=*/true);
  GateResult r = g.After(0);  // the first iteration: the next slot of phasord's grid
  EXPECT_TRUE(r.aligned);
  EXPECT_FALSE(r.reslotted);
  EXPECT_EQ(r.slot_epoch_us, 1'002'000);
  EXPECT_EQ(r.waited_us, 1'500);
  r = g.After(8'000);  // 1,010,000: within its period, waits for 1,012,000
  EXPECT_EQ(r.slot_epoch_us, 1'012'000);
  EXPECT_EQ(r.waited_us, 2'000);
  EXPECT_FALSE(r.reslotted);
  r = g.After(13'000);  // 1,025,000: 13 ms after its slot, more than a period
  EXPECT_TRUE(r.aligned);
  EXPECT_TRUE(r.reslotted);
  EXPECT_EQ(r.slot_epoch_us, 1'025'000);
  EXPECT_EQ(r.waited_us, 0);
  r = g.After(7'000);  // 1,032,000: the grid re-anchored at 1,025,000
  EXPECT_FALSE(r.reslotted);
  EXPECT_EQ(r.slot_epoch_us, 1'035'000);
  EXPECT_EQ(r.waited_us, 3'000);
  r = g.After(10'000);  // exactly one period after its slot: on the next slot, not an overrun
  EXPECT_FALSE(r.reslotted);
  EXPECT_EQ(r.slot_epoch_us, 1'045'000);
  EXPECT_EQ(r.waited_us, 0);
  EXPECT_EQ(g.now(), 1'045'000);
}

TEST(IterationGateFakeClockTest, WithoutReslotAnOverrunWaitsForTheNextSlotOfTheGrid) {
  FakeClockGate g(GateMode::kPace, /*reslot=*/false);
  EXPECT_EQ(g.After(0).slot_epoch_us, 1'002'000);
  EXPECT_EQ(g.After(8'000).slot_epoch_us, 1'012'000);
  const GateResult r = g.After(13'000);  // 1,025,000
  EXPECT_FALSE(r.reslotted);
  EXPECT_EQ(r.slot_epoch_us, 1'032'000);
  EXPECT_EQ(r.waited_us, 7'000);
}

TEST(IterationGateFakeClockTest, OnceAlignsTheFirstIterationOnlyAndNeverReslots) {
  FakeClockGate g(GateMode::kOnce, /*reslot=*/true);
  GateResult r = g.After(0);
  EXPECT_TRUE(r.aligned);
  EXPECT_EQ(r.slot_epoch_us, 1'002'000);
  EXPECT_EQ(r.waited_us, 1'500);
  r = g.After(13'000);
  EXPECT_FALSE(r.aligned);
  EXPECT_FALSE(r.reslotted);
  EXPECT_EQ(r.slot_epoch_us, 0);
  EXPECT_EQ(r.waited_us, 0);
}

class GateWithDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(harness_.Start());
    client::ClientOptions o;
    o.endpoint = harness_.options().request_endpoint;
    client_ = *client::Client::Connect(o);
    // Two jobs with a 40 ms period sharing one link.
    placer::RankRequest r;
    r.links = {{"l", 50}};
    for (const char* id : {"a", "b"}) {
      placer::Job j{id, {}, std::nullopt};
      j.profile.period_us = 40000;
      j.profile.square = placer::SquareWave{16000, 40, 0, 0};
      r.jobs.push_back(j);
    }
    placer::Candidate c;
    c.id = "c";
    c.links["a"]["l"] = 1;
    c.links["b"]["l"] = 1;
    r.candidates = {c};
    absl::StatusOr<client::RankResult> ranked = client_->Rank(r);
    ASSERT_TRUE(ranked.ok());
    absl::StatusOr<v1::CommitReply> commit = client_->Commit(ranked->ranking_id, "c");
    ASSERT_TRUE(commit.ok());
    a_ = commit->offsets(0);
    b_ = commit->offsets(1);
    ASSERT_EQ(b_.job(), "b");
    ASSERT_NE(a_.shift_us(), b_.shift_us());  // interleaved
  }

  std::unique_ptr<IterationGate> Gate(const std::string& job, GateMode mode) {
    IterationGateOptions o;
    o.job = job;
    o.request_endpoint = harness_.options().request_endpoint;
    o.offset_endpoint = harness_.options().offset_endpoint;
    o.mode = mode;
    absl::StatusOr<std::unique_ptr<IterationGate>> g = IterationGate::Create(o);
    EXPECT_TRUE(g.ok());
    return g.ok() ? *std::move(g) : nullptr;
  }

  // Slots are 40 ms apart; a loaded 2-core machine may wake a few ms late.
  static constexpr int64_t kLateToleranceUs = 8000;

  DaemonHarness harness_{[](daemon::DaemonOptions& o) { o.republish_interval_ms = 0; }};
  std::unique_ptr<client::Client> client_;
  v1::OffsetUpdate a_, b_;
};

TEST_F(GateWithDaemonTest, OnceAlignsTheFirstIterationThenRunsFree) {
  // Created after the commit with no re-publishing: only GetOffset can tell it.
  auto gate = Gate("b", GateMode::kOnce);
  const GateResult first = gate->Wait();
  const int64_t t = NowUs();
  EXPECT_FALSE(first.failed_open);
  EXPECT_TRUE(first.aligned);
  EXPECT_EQ(first.offset_version, 1u);
  EXPECT_LE(SinceSlot(b_, t), kLateToleranceUs);
  ASSERT_TRUE(gate->offset().has_value());
  EXPECT_EQ(gate->offset()->shift_us(), b_.shift_us());
  EXPECT_LE(first.waited_us, 40000 + kLateToleranceUs + 500000);  // at most a period after the offset arrives
  const GateResult second = gate->Wait();
  EXPECT_FALSE(second.aligned);
  EXPECT_LT(second.waited_us, 5000);
}

TEST_F(GateWithDaemonTest, PaceWaitsForEverySlot) {
  auto gate = Gate("a", GateMode::kPace);
  ASSERT_TRUE(gate->Wait().aligned);
  for (int i = 0; i < 3; ++i) {
    const GateResult r = gate->Wait();
    const int64_t t = NowUs();
    EXPECT_TRUE(r.aligned);
    EXPECT_LE(SinceSlot(a_, t), kLateToleranceUs) << "iteration " << i;
    // Right after a slot, the next one is a whole period away.
    EXPECT_GE(r.waited_us, 40000 - kLateToleranceUs) << "iteration " << i;
  }
}

// phasord re-publishing every 20 ms (not the default, so that repeats are
// many): the same offset heard again never re-aligns a `once` gate; the
// closed loop's re-send of a drifting job (a new version) does.
TEST(GateRepeatTest, AnUnchangedOffsetNeverRealignsANewVersionDoes) {
  DaemonHarness h([](daemon::DaemonOptions& o) {
    o.republish_interval_ms = 20;
    o.realign = true;
    o.realign_min_interval_ms = 60000;
  });
  ASSERT_TRUE(h.Start());
  client::ClientOptions co;
  co.endpoint = h.options().request_endpoint;
  auto client = *client::Client::Connect(co);
  placer::RankRequest r;
  r.links = {{"l", 50}};
  placer::Job j{"a", {}, std::nullopt};
  j.profile.period_us = 40000;
  j.profile.square = placer::SquareWave{16000, 40, 0, 0};
  r.jobs = {j};
  placer::Candidate c;
  c.id = "c";
  c.links["a"]["l"] = 1;
  r.candidates = {c};
  absl::StatusOr<client::RankResult> ranked = client->Rank(r);
  ASSERT_TRUE(ranked.ok());
  absl::StatusOr<v1::CommitReply> commit = client->Commit(ranked->ranking_id, "c");
  ASSERT_TRUE(commit.ok());
  const v1::OffsetUpdate a = commit->offsets(0);

  IterationGateOptions o;
  o.job = "a";
  o.request_endpoint = h.options().request_endpoint;
  o.offset_endpoint = h.options().offset_endpoint;
  o.mode = GateMode::kOnce;
  auto gate = *IterationGate::Create(o);
  ASSERT_TRUE(gate->Wait().aligned);
  const double published_before = h.daemon().metrics().Value("phasord_offsets_published_total");
  // 60 iterations of 5 ms (300 ms; phasord re-publishes when its socket loop
  // wakes, at least every 100 ms): none waits for a slot.
  for (int i = 0; i < 60; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const GateResult g = gate->Wait();
    EXPECT_FALSE(g.aligned) << "iteration " << i;
    EXPECT_EQ(g.offset_version, a.version());
  }
  EXPECT_GE(h.daemon().metrics().Value("phasord_offsets_published_total") - published_before, 2);

  // A probe sees the job 7 ms late: phasord re-sends its offset with a new
  // version, and the gate's next iteration waits for a slot again.
  auto probe = *::phasor::testing::ConnectProbe(h.options().profile_endpoint);
  v1::ProfileUpdate late;
  late.set_subject("a");
  late.set_kind(v1::ProfileUpdate::JOB);
  late.set_period_us(40000);
  late.set_bin_us(40000);
  late.add_gbps(10);
  late.set_confidence(1);
  late.set_t0_epoch_us(a.origin_epoch_us() + a.shift_us() + 30 * int64_t{a.period_us()} + 7000);
  ASSERT_TRUE(probe->Publish(late));
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] { return h.daemon().metrics().Value("phasord_realignments_total", {{"job", "a"}}) == 1; }));
  bool realigned = false;
  for (int i = 0; i < 100 && !realigned; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const GateResult g = gate->Wait();
    if (g.aligned) {
      realigned = true;
      EXPECT_EQ(g.offset_version, a.version() + 1);
    }
  }
  EXPECT_TRUE(realigned);
}

TEST(IterationGateFailOpenTest, WithoutPhasordTheGateBlocksAtMostTheBound) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  IterationGateOptions o;
  o.job = "a";
  o.request_endpoint = "ipc://" + dir + "/nobody-requests";
  o.offset_endpoint = "ipc://" + dir + "/nobody-offsets";
  o.fail_open_ms = 300;
  o.retry_ms = 100;
  o.mode = GateMode::kPace;
  auto gate = *IterationGate::Create(o);
  const GateResult first = gate->Wait();
  EXPECT_TRUE(first.failed_open);
  EXPECT_FALSE(first.aligned);
  EXPECT_GE(first.waited_us, 250000);
  EXPECT_LE(first.waited_us, 1000000);
  for (int i = 0; i < 3; ++i) {
    const GateResult r = gate->Wait();
    EXPECT_TRUE(r.failed_open);
    EXPECT_LT(r.waited_us, 5000);  // the budget is spent: never blocks again
  }
  std::filesystem::remove_all(dir);
}

// The whole loop on loopback TCP: a probe feeds profiles, a scheduler ranks
// (jobs without profiles: phasord uses the probe's) and commits, two agents
// receive their offsets and pace their iterations on them. The ranking equals
// `phasor rank` on the same input (the request with the probe's profiles).
TEST(EndToEndTest, ProbeSchedulerAndTwoAgentsOnLoopback) {
  DaemonHarness h([](daemon::DaemonOptions& o) {
    o.request_endpoint = "tcp://127.0.0.1:*";
    o.profile_endpoint = "tcp://127.0.0.1:*";
    o.offset_endpoint = "tcp://127.0.0.1:*";
  });
  ASSERT_TRUE(h.Start());
  const daemon::BoundEndpoints ep = h.daemon().endpoints();

  // Probe: 60 ms iterations, 24 ms Up bursts at 40 Gb/s.
  auto probe = *::phasor::testing::ConnectProbe(ep.profile);
  for (const char* job : {"a", "b"}) {
    v1::ProfileUpdate u;
    u.set_subject(job);
    u.set_kind(v1::ProfileUpdate::JOB);
    u.set_period_us(60000);
    u.set_bin_us(6000);
    for (int k = 0; k < 10; ++k) u.add_gbps(k < 4 ? 40.0 : 0.0);
    u.set_confidence(0.95);
    u.set_source("e2e-probe");
    ASSERT_TRUE(probe->Publish(u));
  }
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] { return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}) == 2; }));

  // Scheduler: two candidates; jobs given without profiles.
  client::ClientOptions co;
  co.endpoint = ep.request;
  auto scheduler = *client::Client::Connect(co);
  v1::RankRequest wire;
  wire.add_links()->set_id("tor1-up");
  wire.mutable_links(0)->set_capacity_gbps(50);
  wire.add_links()->set_id("tor2-up");
  wire.mutable_links(1)->set_capacity_gbps(100);
  wire.add_jobs()->set_id("a");
  wire.add_jobs()->set_id("b");
  v1::Candidate* shared = wire.add_candidates();
  shared->set_id("shared-uplink");
  (*(*shared->mutable_links())["a"].mutable_shares())["tor1-up"] = 1;
  (*(*shared->mutable_links())["b"].mutable_shares())["tor1-up"] = 1;
  v1::Candidate* wide = wire.add_candidates();
  wide->set_id("wide-uplink");
  (*(*wide->mutable_links())["a"].mutable_shares())["tor2-up"] = 1;
  (*(*wide->mutable_links())["b"].mutable_shares())["tor2-up"] = 1;
  absl::StatusOr<v1::RankReply> reply = scheduler->Rank(wire);
  ASSERT_TRUE(reply.ok()) << reply.status().message();

  // `phasor rank` on the same input: the request with the probe's profiles,
  // in the agent's frame (docs/phasord.md, "Frames": the iteration starts
  // where the probe's Up phase ends, so the 36 ms of Down come first).
  std::string json = R"({"links": [{"id": "tor1-up", "capacity_gbps": 50}, {"id": "tor2-up", "capacity_gbps": 100}],
    "jobs": [{"id": "a", "profile": {"period_us": 60000, "bin_us": 6000, "gbps": [0,0,0,0,0,0,40,40,40,40]}},
             {"id": "b", "profile": {"period_us": 60000, "bin_us": 6000, "gbps": [0,0,0,0,0,0,40,40,40,40]}}],
    "candidates": [{"id": "shared-uplink", "links": {"a": {"tor1-up": 1}, "b": {"tor1-up": 1}}},
                   {"id": "wide-uplink", "links": {"a": {"tor2-up": 1}, "b": {"tor2-up": 1}}}]})";
  absl::StatusOr<placer::RankRequest> same_input = placer::ParseRankRequest(json);
  ASSERT_TRUE(same_input.ok()) << same_input.status().message();
  placer::Ranking expected = placer::Rank(*same_input);
  // Both predict 1; phasord's default policy puts first the one that needs
  // no shift (wide-uplink's 100 Gb/s carries both bursts at once).
  EXPECT_EQ(placer::ApplyRankingPolicy(*same_input, placer::RankingPolicyOptions{}, expected).reason, "less-at-risk");
  EXPECT_EQ(expected.ranked[0].candidate, "wide-uplink");
  ::phasor::testing::ExpectRankingsEqual(protocol::FromProto(*reply), expected);
  EXPECT_EQ(placer::RankingToJson(protocol::FromProto(*reply)).dump(),
            placer::RankingToJson(expected).dump());

  absl::StatusOr<v1::CommitReply> commit = scheduler->Commit(reply->ranking_id(), "shared-uplink");
  ASSERT_TRUE(commit.ok());
  const v1::OffsetUpdate a = commit->offsets(0), b = commit->offsets(1);
  // 24 ms bursts in 60 ms fit side by side: the shifts keep them apart.
  const int64_t gap = (static_cast<int64_t>(b.shift_us()) - a.shift_us() + 60000) % 60000;
  EXPECT_GE(gap, 24000);
  EXPECT_LE(gap, 36000);

  // Two agents, pace mode: each lands on its own job's slots.
  std::vector<std::unique_ptr<IterationGate>> gates;
  for (const char* job : {"a", "b"}) {
    IterationGateOptions o;
    o.job = job;
    o.request_endpoint = ep.request;
    o.offset_endpoint = ep.offset;
    o.mode = GateMode::kPace;
    gates.push_back(*IterationGate::Create(o));
  }
  for (int i = 0; i < 2; ++i) {
    for (size_t g = 0; g < 2; ++g) {
      const GateResult r = gates[g]->Wait();
      const int64_t t = NowUs();
      const v1::OffsetUpdate& mine = g == 0 ? a : b;
      EXPECT_TRUE(r.aligned);
      EXPECT_EQ(gates[g]->offset()->shift_us(), mine.shift_us());
      EXPECT_LE(SinceSlot(mine, t), 8000) << "agent " << g << " iteration " << i;
    }
  }
}

}  // namespace
}  // namespace phasor::agent
