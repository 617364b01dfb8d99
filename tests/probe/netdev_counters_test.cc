#include "probe/netdev_counters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "probe/measure.h"

namespace phasor::probe {
namespace netdev_counters_test {
namespace {

namespace fs = std::filesystem;

// A fake /sys/class/net whose counters follow a traffic pattern in fake
// time: eth0 sends 1000 bytes/us for the first 60 ms of every 200 ms and
// receives a constant 10 bytes/us; each scheduled read is late by a
// pattern the test chooses.
class FakeNetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("phasor_net_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "eth0" / "statistics");
    Write(kStart);
  }
  void TearDown() override { fs::remove_all(root_); }

  static constexpr int64_t kStart = 1'700'000'000'000'000;

  static uint64_t TxAt(int64_t t) {
    const int64_t rel = t - kStart;
    return static_cast<uint64_t>((rel / 200'000) * 60'000 * 1000 +
                                 std::min<int64_t>(rel % 200'000, 60'000) * 1000);
  }
  void Write(int64_t t) {
    std::ofstream(root_ / "eth0/statistics/tx_bytes") << TxAt(t) << "\n";
    std::ofstream(root_ / "eth0/statistics/rx_bytes") << (t - kStart) * 10 << "\n";
  }
  // Slot i (from 1) is read late by late(i) microseconds.
  PollClock Clock(std::function<int64_t(int64_t)> late) {
    PollClock c;
    c.now_us = [this] { return now_; };
    c.sleep_until_us = [this, late](int64_t t) {
      const int64_t slot = (t - kStart) / 10'000;
      now_ = t + late(slot);
      Write(now_);
    };
    return c;
  }
  NetdevOptions Options() {
    NetdevOptions o;
    o.sysfs_root = root_.string();
    o.interfaces = {"eth0"};
    o.interval_us = 10'000;
    o.duration_us = 4'000'000;
    return o;
  }
  fs::path root_;
  int64_t now_ = kStart;
};

TEST_F(FakeNetTest, PollsOnScheduleDropsLateReadsAndMeasuresThePeriod) {
  NetdevOptions o = Options();
  // Every 50th read is 8 ms late (over max_late_us = 5 ms: dropped); the
  // others 0, 100 or 200 us late.
  o.clock = Clock([](int64_t i) { return i % 50 == 0 ? 8000 : (i % 3) * 100; });
  auto source = NetdevSource::Create(o);
  ASSERT_TRUE(source.ok()) << source.status();
  auto m = Measure(**source, MeasureOptions{});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->profiles.size(), 2u);
  const MeasuredProfile& tx = m->profiles[0];
  EXPECT_EQ(tx.subject, "eth0/tx");
  EXPECT_EQ(tx.source, "netdev:" + root_.string());
  ASSERT_TRUE(tx.sampling.has_value());
  // 401 slots, slots 50, 100, ..., 400 late.
  EXPECT_EQ(tx.sampling->interval_us, 10'000);
  EXPECT_EQ(tx.sampling->late, 8u);
  EXPECT_EQ(tx.sampling->reads, 393u);
  EXPECT_EQ(tx.sampling->jitter_max_us, 200);
  EXPECT_EQ(tx.sampling->jitter_p99_us, 200);
  // Lateness 0/100/200 by i % 3 over the kept slots 1..400 (slot 0: 0).
  double sum = 0;
  int kept = 1;
  for (int i = 1; i <= 400; ++i) {
    if (i % 50 == 0) continue;
    sum += (i % 3) * 100;
    ++kept;
  }
  EXPECT_DOUBLE_EQ(tx.sampling->jitter_mean_us, sum / kept);
  ASSERT_TRUE(tx.extracted.periodic) << tx.extracted.reason;
  EXPECT_NEAR(tx.extracted.period_exact_us, 200'000, 0.01 * 200'000);
  EXPECT_NEAR(tx.extracted.up_fraction, 0.3, 0.03);
  EXPECT_NEAR(tx.extracted.peak_gbps, 8.0, 0.5);  // 1000 B/us
  EXPECT_EQ(tx.extracted.bin_us, 10'000u);
  const MeasuredProfile& rx = m->profiles[1];
  EXPECT_EQ(rx.subject, "eth0/rx");
  EXPECT_FALSE(rx.extracted.periodic);
  EXPECT_NEAR(rx.extracted.mean_gbps, 0.08, 1e-6);
}

TEST_F(FakeNetTest, TooFewReadsIsUnavailable) {
  NetdevOptions o = Options();
  o.clock = Clock([](int64_t) { return 9000; });  // every read after the first is late
  auto source = NetdevSource::Create(o);
  ASSERT_TRUE(source.ok());
  auto c = (*source)->Collect();
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(c.status().message(), "netdev: only 1 of 401 reads kept (400 late)");
}

TEST_F(FakeNetTest, BadOptionsAndTrees) {
  NetdevOptions o = Options();
  o.interfaces = {};
  EXPECT_EQ(NetdevSource::Create(o).status().message(), "interfaces: none given");
  o = Options();
  o.interfaces = {"eth1"};
  auto s = NetdevSource::Create(o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(),
            "interface 'eth1': cannot open " + root_.string() + "/eth1/statistics/tx_bytes");
  o = Options();
  o.interfaces = {"../eth0"};
  EXPECT_EQ(NetdevSource::Create(o).status().message(),
            "interfaces: '../eth0' is not an interface name");
  o = Options();
  o.interval_us = 500;
  EXPECT_EQ(NetdevSource::Create(o).status().message(), "interval_us: 500 is below 1000 (1 ms)");
  o = Options();
  o.duration_us = 15'000;
  EXPECT_EQ(NetdevSource::Create(o).status().message(),
            "duration_us: 15000 is shorter than two intervals");
  o = Options();
  o.max_late_us = 10'000;
  EXPECT_EQ(NetdevSource::Create(o).status().message(),
            "max_late_us: 10000 must be in [0, interval_us)");
  std::ofstream(root_ / "eth0/statistics/rx_bytes") << "garbage\n";
  o = Options();
  s = NetdevSource::Create(o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "interfaces: a statistics file under " + root_.string() + " does not hold a number");
}

}  // namespace
}  // namespace netdev_counters_test
}  // namespace phasor::probe
