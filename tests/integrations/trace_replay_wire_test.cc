// A short trace replayed with the Themis-style reference scheduler and the
// plugin on, twice: once ranking in process (placer::Rank), once with every
// round's RankRequest going to a phasord on loopback TCP through the client
// (adapters::PhasordRanker, committing each choice). The two runs must agree
// exactly: the wire carries doubles as IEEE doubles and Rank is deterministic.
#include <chrono>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "integrations/adapters/phasord_ranker.h"
#include "sim/trace_replay.h"
#include "tests/daemon/daemon_harness.h"

namespace phasor::adapters {
namespace {

// Pollux-workload form. deepspeech2 rings on 12 GPUs span leaves; a, b and d
// overlap in time, so later rounds rank new jobs against running, pinned ones.
constexpr char kTrace[] =
    "name,time,application,num_replicas,batch_size\n"
    "a,0,deepspeech2,12,32\n"
    "b,3,deepspeech2,12,32\n"
    "c,5,cifar10,4,128\n"
    "d,8,deepspeech2,8,32\n"
    "e,12,cifar10,6,128\n";

sim::TraceReplayOptions Options(const std::string& trace) {
  sim::TraceReplayOptions o;
  o.trace_path = trace;
  o.models_dir = PHASOR_SOURCE_DIR "/data/models";
  o.scheduler = "themis";
  o.plugin = true;
  o.fabric = "leaf-spine:8:2:2";  // 4 leaves of 2 servers, 32 GPUs, 2:1 uplinks
  o.workload_median_duration_s = 20;
  o.top_k = 2;
  o.seed = 7;
  return o;
}

void ExpectSummaryEq(const sim::IterationSummary& x, const sim::IterationSummary& y, const std::string& what) {
  EXPECT_EQ(x.mean, y.mean) << what;
  EXPECT_EQ(x.p50, y.p50) << what;
  EXPECT_EQ(x.p99, y.p99) << what;
}

TEST(TraceReplayWireTest, ReplayThroughPhasordEqualsInProcess) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  const std::string trace = dir + "/trace.csv";
  std::ofstream(trace) << kTrace;

  absl::StatusOr<sim::TraceReport> local = sim::ReplayTrace(Options(trace));
  ASSERT_TRUE(local.ok()) << local.status();

  ::phasor::testing::DaemonHarness harness(
      [](daemon::DaemonOptions& o) { o.request_endpoint = "tcp://127.0.0.1:0"; });
  ASSERT_TRUE(harness.Start());
  client::ClientOptions co;
  co.endpoint = harness.daemon().endpoints().request;
  ASSERT_EQ(co.endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << co.endpoint;
  absl::StatusOr<std::unique_ptr<client::Client>> client = client::Client::Connect(co);
  ASSERT_TRUE(client.ok()) << client.status();

  // Count the rounds that went over the wire and check each ranking there
  // against placer::Rank on the same request.
  const sim::RankFunction wire = PhasordRanker(client->get());
  uint64_t calls = 0, pinned_rounds = 0;
  sim::TraceReplayOptions remote_options = Options(trace);
  remote_options.rank = [&](const placer::RankRequest& request) -> absl::StatusOr<placer::Ranking> {
    ++calls;
    for (const placer::Job& j : request.jobs) {
      if (j.pinned_shift_us.has_value()) {
        ++pinned_rounds;
        break;
      }
    }
    absl::StatusOr<placer::Ranking> ranking = wire(request);
    if (ranking.ok()) ::phasor::testing::ExpectRankingsEqual(*ranking, placer::Rank(request));
    return ranking;
  };
  absl::StatusOr<sim::TraceReport> remote = sim::ReplayTrace(remote_options);
  harness.Stop();
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(remote.ok()) << remote.status();

  // The replay ranked through phasord, including rounds with running jobs pinned.
  EXPECT_EQ(calls, remote->ranked_rounds);
  EXPECT_GE(remote->ranked_rounds, 2u);
  EXPECT_GE(pinned_rounds, 1u);

  // Identical results.
  EXPECT_EQ(remote->rounds, local->rounds);
  EXPECT_EQ(remote->ranked_rounds, local->ranked_rounds);
  EXPECT_EQ(remote->events, local->events);
  EXPECT_EQ(remote->unfinished, local->unfinished);
  EXPECT_EQ(remote->excess_bytes, local->excess_bytes);
  EXPECT_EQ(remote->makespan_s, local->makespan_s);
  ExpectSummaryEq(remote->jct_s, local->jct_s, "jct_s");
  ExpectSummaryEq(remote->queueing_s, local->queueing_s, "queueing_s");
  ExpectSummaryEq(remote->iteration_slowdown, local->iteration_slowdown, "iteration_slowdown");
  ASSERT_EQ(remote->jobs.size(), 5u);
  ASSERT_EQ(local->jobs.size(), 5u);
  size_t networked = 0;
  for (size_t i = 0; i < local->jobs.size(); ++i) {
    const sim::TraceJobResult& x = local->jobs[i];
    const sim::TraceJobResult& y = remote->jobs[i];
    EXPECT_EQ(y.id, x.id);
    EXPECT_EQ(y.placement, x.placement) << x.id;
    EXPECT_EQ(y.start_us, x.start_us) << x.id;
    EXPECT_EQ(y.finish_us, x.finish_us) << x.id;
    EXPECT_EQ(y.slowdown, x.slowdown) << x.id;
    ExpectSummaryEq(y.iteration_us, x.iteration_us, x.id);
    networked += x.networked ? 1 : 0;
  }
  EXPECT_GE(networked, 3u);
}

TEST(TraceReplayWireTest, UnreachablePhasordStopsTheReplayWithItsError) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  const std::string trace = dir + "/trace.csv";
  std::ofstream(trace) << kTrace;
  client::ClientOptions co;
  co.endpoint = "ipc://" + dir + "/nobody";
  co.timeout_ms = 300;
  absl::StatusOr<std::unique_ptr<client::Client>> client = client::Client::Connect(co);
  ASSERT_TRUE(client.ok()) << client.status();
  sim::TraceReplayOptions o = Options(trace);
  o.rank = PhasordRanker(client->get());
  absl::StatusOr<sim::TraceReport> report = sim::ReplayTrace(o);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kUnavailable) << report.status();
}

TEST(TraceReplayWireTest, ARankingNamingNoCandidateOfTheRoundIsAnError) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  const std::string trace = dir + "/trace.csv";
  std::ofstream(trace) << kTrace;
  sim::TraceReplayOptions o = Options(trace);
  o.ranking_policy.keep_packing = false;  // both of the host's candidates go to the ranking
  o.own_candidates = 0;                   // and only they
  o.rank = [](const placer::RankRequest& request) -> absl::StatusOr<placer::Ranking> {
    placer::Ranking ranking = placer::Rank(request);
    if (!ranking.ranked.empty()) ranking.ranked.front().candidate = "9";
    return ranking;
  };
  absl::StatusOr<sim::TraceReport> report = sim::ReplayTrace(o);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInternal) << report.status();
  EXPECT_EQ(std::string(report.status().message()),
            "ranking: best candidate '9' is not one of the round's 2 candidates");
}

}  // namespace
}  // namespace phasor::adapters
