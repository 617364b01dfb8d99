// Test support: a phasord running in-process on ipc:// endpoints in a fresh
// temp dir (metrics on 127.0.0.1, ephemeral port), stopped and removed by the
// destructor; and a sample RankRequest.
#ifndef PHASOR_TESTS_DAEMON_DAEMON_HARNESS_H_
#define PHASOR_TESTS_DAEMON_DAEMON_HARNESS_H_

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "cmd/phasord/daemon.h"
#include "gtest/gtest.h"
#include "placer/ranker.h"
#include "spdlog/spdlog.h"

namespace phasor::testing {

inline std::string MakeTempDir() {
  char tmpl[] = "/tmp/phasord-test-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  EXPECT_NE(dir, nullptr);
  return dir ? dir : "";
}

class DaemonHarness {
 public:
  explicit DaemonHarness(const std::function<void(daemon::DaemonOptions&)>& tweak = nullptr) : dir_(MakeTempDir()) {
    spdlog::set_level(spdlog::level::warn);
    options_.request_endpoint = "ipc://" + dir_ + "/requests";
    options_.profile_endpoint = "ipc://" + dir_ + "/profiles";
    options_.offset_endpoint = "ipc://" + dir_ + "/offsets";
    options_.metrics_listen = "127.0.0.1:0";
    options_.allow_plain = true;
    options_.state_path = dir_ + "/state.db";
    options_.log_level = "warn";
    if (tweak) tweak(options_);
  }
  ~DaemonHarness() {
    Stop();
    std::filesystem::remove_all(dir_);
  }

  // Starts phasord and its serving thread; false (with a test failure) when it cannot start.
  bool Start() {
    absl::StatusOr<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Start(options_);
    EXPECT_TRUE(d.ok()) << d.status().message();
    if (!d.ok()) return false;
    daemon_ = *std::move(d);
    stop_ = false;
    thread_ = std::thread([this] { daemon_->Run(stop_); });
    return true;
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    daemon_.reset();
  }

  // Waits (up to 5 s) until `predicate` holds; false if it never does.
  static bool WaitFor(const std::function<bool()>& predicate) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      if (predicate()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return predicate();
  }

  daemon::Daemon& daemon() { return *daemon_; }
  const daemon::DaemonOptions& options() const { return options_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  daemon::DaemonOptions options_;
  std::unique_ptr<daemon::Daemon> daemon_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Three jobs on two links, three candidates (one with a loop-free sharing of
// tor1-up by a and b, one with all three on both links, one naming an
// unknown job).
inline placer::RankRequest SampleRankRequest() {
  placer::RankRequest r;
  r.links = {{"tor1-up", 50.0}, {"tor2-up", 50.0}};
  auto square = [](const std::string& id, uint32_t period, uint32_t up, double gbps) {
    placer::Job j{id, {}, std::nullopt};
    j.profile.period_us = period;
    j.profile.square = placer::SquareWave{up, gbps, 0, 0};
    return j;
  };
  r.jobs = {square("a", 100000, 40000, 40), square("b", 100000, 40000, 40), square("c", 150000, 50000, 30)};
  placer::Candidate c0;
  c0.id = "c0";
  c0.links["a"]["tor1-up"] = 1;
  c0.links["b"]["tor1-up"] = 1;
  c0.links["c"]["tor2-up"] = 1;
  placer::Candidate c1;
  c1.id = "c1";
  for (const char* j : {"a", "b", "c"}) {
    c1.links[j]["tor1-up"] = 1;
    c1.links[j]["tor2-up"] = 0.5;
  }
  placer::Candidate c2;
  c2.id = "c2";
  c2.links["zz"]["tor1-up"] = 1;
  r.candidates = {c0, c1, c2};
  return r;
}

// Field-by-field equality of two rankings (doubles compared exactly).
inline void ExpectRankingsEqual(const placer::Ranking& x, const placer::Ranking& y) {
  ASSERT_EQ(x.ranked.size(), y.ranked.size());
  for (size_t i = 0; i < x.ranked.size(); ++i) {
    const placer::RankedCandidate& a = x.ranked[i];
    const placer::RankedCandidate& b = y.ranked[i];
    EXPECT_EQ(a.candidate, b.candidate);
    EXPECT_EQ(a.score, b.score);
    EXPECT_EQ(a.min_link_score, b.min_link_score);
    EXPECT_EQ(a.cycle, b.cycle);
    EXPECT_EQ(a.exact, b.exact);
    EXPECT_EQ(a.shifts_us, b.shifts_us);
    ASSERT_EQ(a.links.size(), b.links.size());
    for (size_t k = 0; k < a.links.size(); ++k) {
      EXPECT_EQ(a.links[k].id, b.links[k].id);
      EXPECT_EQ(a.links[k].score, b.links[k].score);
      EXPECT_EQ(a.links[k].optimal_score, b.links[k].optimal_score);
      EXPECT_EQ(a.links[k].capacity_gbps, b.links[k].capacity_gbps);
      EXPECT_EQ(a.links[k].jobs, b.links[k].jobs);
      EXPECT_EQ(a.links[k].quantum_us, b.links[k].quantum_us);
      EXPECT_EQ(a.links[k].circle_bins, b.links[k].circle_bins);
      EXPECT_EQ(a.links[k].exact, b.links[k].exact);
      EXPECT_EQ(a.links[k].rounding_error_us, b.links[k].rounding_error_us);
    }
  }
  ASSERT_EQ(x.rejected.size(), y.rejected.size());
  for (size_t i = 0; i < x.rejected.size(); ++i) {
    EXPECT_EQ(x.rejected[i].candidate, y.rejected[i].candidate);
    EXPECT_EQ(x.rejected[i].reason, y.rejected[i].reason);
  }
}

}  // namespace phasor::testing

#endif  // PHASOR_TESTS_DAEMON_DAEMON_HARNESS_H_
