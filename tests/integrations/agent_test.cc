// The C++ IterationGate against an in-process phasord: once and pace modes
// land iterations on the job's slots, a late joiner gets its offset with
// GetOffset, and without phasord the gate fails open within its bound.
#include "integrations/agent/iteration_gate.h"

#include <chrono>

#include "gtest/gtest.h"
#include "integrations/client/client.h"
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

}  // namespace
}  // namespace phasor::agent
