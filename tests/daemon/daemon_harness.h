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

#include "daemon/server.h"
#include "gtest/gtest.h"
#include "placer/ranker.h"
#include "tests/testing/rankings.h"

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
    daemon::SetLogLevel("warn");
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

// The sample's first two jobs renamed x and y, sharing tor1-up in one
// candidate "c" (a commit that gives both an offset).
inline placer::RankRequest PairRequest(const std::string& x, const std::string& y) {
  placer::RankRequest r = SampleRankRequest();
  r.jobs.pop_back();
  r.jobs[0].id = x;
  r.jobs[1].id = y;
  placer::Candidate c;
  c.id = "c";
  c.links[x]["tor1-up"] = 1;
  c.links[y]["tor1-up"] = 1;
  r.candidates = {c};
  return r;
}

// Options for a phasord on loopback TCP with CURVE only: every socket on an
// ephemeral 127.0.0.1 port, no plain sockets, keys read from `key_dir`
// (server.secret, server.pub, and the client allow-list `allowed`).
inline void UseCurveOnLoopback(daemon::DaemonOptions& o, const std::string& key_dir) {
  o.request_endpoint = "tcp://127.0.0.1:*";
  o.profile_endpoint = "tcp://127.0.0.1:*";
  o.offset_endpoint = "tcp://127.0.0.1:*";
  o.allow_plain = false;
  o.curve.server_secret_key_file = key_dir + "/server.secret";
  o.curve.server_public_key_file = key_dir + "/server.pub";
  o.curve.allowed_clients_file = key_dir + "/allowed";
}

}  // namespace phasor::testing

#endif  // PHASOR_TESTS_DAEMON_DAEMON_HARNESS_H_
