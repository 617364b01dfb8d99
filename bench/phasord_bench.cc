// phasord round trips on loopback TCP (plain; the daemon in-process on its
// own threads): a 16-candidate RankRequest's latency (p50/p99 counters) and
// sustained requests per second with several concurrent clients. The
// in-process placer::Rank of the same request is the baseline.
//
//   build/bench/phasord_bench --benchmark_min_time=2
//
// PHASORD_BENCH_ETCD=http://127.0.0.1:2379[,...] runs the daemon on the etcd
// backend (state_store.backend: etcd, prefix /phasor-bench) instead of SQLite;
// it leads at once, being alone.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/server.h"
#include "integrations/client/client.h"
#include "placer/ranker.h"
#include "protocol/convert.h"
#include "spdlog/spdlog.h"

namespace {

using namespace phasor;

// 8 jobs on 4 ToR uplinks; candidate k places job j behind uplink (j + k) % 4
// or spreads it over two uplinks, so every candidate has contended links.
placer::RankRequest SixteenCandidates() {
  placer::RankRequest r;
  for (int l = 0; l < 4; ++l) r.links.push_back({"tor" + std::to_string(l) + "-up", 100.0});
  for (int j = 0; j < 8; ++j) {
    placer::Job job{"job" + std::to_string(j), {}, std::nullopt};
    job.profile.period_us = 100000 + 20000 * (j % 3);
    job.profile.square = placer::SquareWave{30000u + 5000u * (j % 4), 60.0, 0, 0};
    r.jobs.push_back(job);
  }
  for (int k = 0; k < 16; ++k) {
    placer::Candidate c;
    c.id = "cand" + std::to_string(k);
    for (int j = 0; j < 8; ++j) {
      const std::string job = "job" + std::to_string(j);
      if ((j + k) % 5 == 0) {
        c.links[job]["tor" + std::to_string((j + k) % 4) + "-up"] = 0.5;
        c.links[job]["tor" + std::to_string((j + k + 1) % 4) + "-up"] = 0.5;
      } else {
        c.links[job]["tor" + std::to_string((j + k) % 4) + "-up"] = 1.0;
      }
    }
    r.candidates.push_back(c);
  }
  return r;
}

class BenchDaemon {
 public:
  BenchDaemon() {
    spdlog::set_level(spdlog::level::warn);
    char tmpl[] = "/tmp/phasord-bench-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    daemon::DaemonOptions o;
    o.request_endpoint = "tcp://127.0.0.1:*";
    o.profile_endpoint = "ipc://" + dir_ + "/profiles";
    o.offset_endpoint = "ipc://" + dir_ + "/offsets";
    o.metrics_listen = "";
    o.allow_plain = true;
    o.state_path = dir_ + "/state.db";
    o.keep_rankings = 1000;
    o.log_level = "warn";
    if (const char* etcd = std::getenv("PHASORD_BENCH_ETCD"); etcd != nullptr && *etcd != '\0') {
      o.state_store.backend = "etcd";
      o.state_store.etcd.endpoints = client::SplitEndpoints(etcd);
      o.state_store.etcd.prefix = "/phasor-bench";
    }
    daemon_ = *daemon::Daemon::Start(o);
    thread_ = std::thread([this] { daemon_->Run(stop_); });
    // On etcd it serves once it leads (a previous run's lease may still hold the key).
    client::ClientOptions c;
    c.endpoint = endpoint();
    c.timeout_ms = 500;
    auto probe = *client::Client::Connect(c);
    for (int i = 0; i < 40 && !probe->Health().ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ~BenchDaemon() {
    stop_ = true;
    thread_.join();
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string endpoint() const { return daemon_->endpoints().request; }

 private:
  std::string dir_;
  std::unique_ptr<daemon::Daemon> daemon_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::unique_ptr<BenchDaemon> g_daemon;  // started on first use, stopped by main()

BenchDaemon& Daemon() {
  if (!g_daemon) g_daemon = std::make_unique<BenchDaemon>();
  return *g_daemon;
}

std::unique_ptr<client::Client> NewClient() {
  client::ClientOptions o;
  o.endpoint = Daemon().endpoint();
  o.timeout_ms = 30000;
  return *client::Client::Connect(o);
}

void BM_PlacerRankInProcess16(benchmark::State& state) {
  const placer::RankRequest request = SixteenCandidates();
  for (auto _ : state) benchmark::DoNotOptimize(placer::Rank(request));
}
BENCHMARK(BM_PlacerRankInProcess16)->Unit(benchmark::kMicrosecond);

void BM_RankRoundTrip16(benchmark::State& state) {
  auto c = NewClient();
  const v1::RankRequest request = protocol::ToProto(SixteenCandidates());
  std::vector<double> us;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<v1::RankReply> reply = c->Rank(request);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!reply.ok() || reply->ranked_size() + reply->rejected_size() != 16) {
      state.SkipWithError("rank failed");
      break;
    }
  }
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}
BENCHMARK(BM_RankRoundTrip16)->Unit(benchmark::kMicrosecond)->UseRealTime();

// A commit's round trip alone (its ranking made before the clock starts):
// with etcd one txn in the cluster's quorum before the reply.
void BM_CommitRoundTrip(benchmark::State& state) {
  auto c = NewClient();
  const v1::RankRequest request = protocol::ToProto(SixteenCandidates());
  std::vector<double> us;
  for (auto _ : state) {
    state.PauseTiming();
    absl::StatusOr<v1::RankReply> ranked = c->Rank(request);
    state.ResumeTiming();
    if (!ranked.ok() || ranked->ranked_size() == 0) {
      state.SkipWithError("rank failed");
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<v1::CommitReply> commit = c->Commit(ranked->ranking_id(), ranked->ranked(0).candidate());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!commit.ok()) {
      state.SkipWithError("commit failed");
      break;
    }
  }
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}
BENCHMARK(BM_CommitRoundTrip)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Sustained throughput: N clients, each with its own socket, back to back.
void BM_RankThroughput16(benchmark::State& state) {
  auto c = NewClient();
  const v1::RankRequest request = protocol::ToProto(SixteenCandidates());
  for (auto _ : state) {
    if (!c->Rank(request).ok()) {
      state.SkipWithError("rank failed");
      break;
    }
  }
  state.counters["requests_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                        benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RankThroughput16)->Unit(benchmark::kMicrosecond)->UseRealTime()->Threads(1)->Threads(4)->Threads(8);

// A tiny request (2 jobs, 1 link, 1 candidate): the protocol and state cost alone.
void BM_TinyRankThroughput(benchmark::State& state) {
  auto c = NewClient();
  placer::RankRequest r;
  r.links = {{"l", 50}};
  for (const char* id : {"a", "b"}) {
    placer::Job j{id, {}, std::nullopt};
    j.profile.period_us = 20000;
    j.profile.square = placer::SquareWave{8000, 40, 0, 0};
    r.jobs.push_back(j);
  }
  placer::Candidate cand;
  cand.id = "c";
  cand.links["a"]["l"] = 1;
  cand.links["b"]["l"] = 1;
  r.candidates = {cand};
  const v1::RankRequest request = protocol::ToProto(r);
  for (auto _ : state) {
    if (!c->Rank(request).ok()) {
      state.SkipWithError("rank failed");
      break;
    }
  }
  state.counters["requests_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                        benchmark::Counter::kIsRate);
}
// Two seconds each: with the default half second, two runs of one binary
// differed by up to 1.3x on the 2-core machine, and bench/regress.sh flagged
// a change that alternating 2 s runs showed level.
BENCHMARK(BM_TinyRankThroughput)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(2.0)
    ->Threads(1)
    ->Threads(8);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_daemon.reset();  // stops phasord and removes its temp dir
  return 0;
}
