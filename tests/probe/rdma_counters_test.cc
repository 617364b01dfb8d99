#include "probe/rdma_counters.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "probe/counter_series.h"
#include "probe/profile_extractor.h"

namespace phasor::probe {
namespace rdma_counters_test {
namespace {

namespace fs = std::filesystem;

void WriteValue(const fs::path& path, uint64_t v) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << v << "\n";
}

// A fake /sys/class/infiniband with two devices, one port each.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("phasor_sysfs_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    for (const char* dev : {"mlx5_0", "mlx5_1"}) {
      Set(dev, "counters/port_xmit_data", 0);
      Set(dev, "counters/port_rcv_data", 0);
      Set(dev, "hw_counters/np_ecn_marked_roce_packets", 0);
      Set(dev, "hw_counters/rp_cnp_handled", 0);
    }
  }
  void TearDown() override { fs::remove_all(root_); }
  void Set(const std::string& dev, const std::string& counter, uint64_t v) {
    WriteValue(root_ / dev / "ports" / "1" / counter, v);
  }
  fs::path root_;
};

TEST_F(FakeSysfs, DiscoversPortsAndReadsCounters) {
  RdmaCounterOptions o;
  o.sysfs_root = root_.string();
  auto reader = RdmaCounterReader::Create(o);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_FALSE(reader->found_by_ibverbs());
  EXPECT_EQ(reader->ports(), (std::vector<std::string>{"mlx5_0/1", "mlx5_1/1"}));
  Set("mlx5_0", "counters/port_xmit_data", 1234);
  Set("mlx5_0", "hw_counters/np_ecn_marked_roce_packets", 7);
  std::ofstream(root_ / "mlx5_1/ports/1/hw_counters/rp_cnp_handled") << "garbage\n";
  const CounterSnapshot s = reader->Read(42);
  EXPECT_EQ(s.time_us, 42);
  EXPECT_EQ(s.values.at("mlx5_0/1/port_xmit_data"), 1234u);
  EXPECT_EQ(s.values.at("mlx5_0/1/hw_counters/np_ecn_marked_roce_packets"), 7u);
  EXPECT_EQ(s.values.count("mlx5_1/1/hw_counters/rp_cnp_handled"), 0u);
  EXPECT_EQ(s.unreadable, 1u);
}

TEST_F(FakeSysfs, PolledSquareWaveGivesItsProfile) {
  // mlx5_0 sends 25 Gbit/s for 60 ms of every 200 ms; polled every 5 ms on
  // a fake clock that advances the counters as time passes.
  RdmaCounterOptions o;
  o.sysfs_root = root_.string();
  auto reader = RdmaCounterReader::Create(o);
  ASSERT_TRUE(reader.ok());
  const int64_t t0 = 1'700'000'000'000'000;
  int64_t now = t0;
  double words = 0;  // port_xmit_data counts 4-byte words
  PollClock clock;
  clock.now_us = [&] { return now; };
  clock.sleep_until_us = [&](int64_t t) {
    for (; now < t; now += 100) {  // integrate in 100 us steps
      if ((now - t0) % 200'000 < 60'000) words += 25e9 / 8 / 4 * 100e-6;
    }
    Set("mlx5_0", "counters/port_xmit_data", static_cast<uint64_t>(words));
    Set("mlx5_0", "counters/port_rcv_data", static_cast<uint64_t>(words / 10));
  };
  const auto snaps = PollCounters(*reader, 601, 5000, clock);
  ASSERT_EQ(snaps.size(), 601u);
  EXPECT_EQ(snaps[1].time_us - snaps[0].time_us, 5000);
  uint64_t wraps = 0, resets = 0;
  const auto series = RdmaSeries(snaps, "rdma-sysfs:fake", &wraps, &resets);
  ASSERT_EQ(series.size(), 4u);  // 2 devices x tx/rx
  EXPECT_EQ(series[1].subject, "mlx5_0/1/tx");
  EXPECT_EQ(resets, 0u);
  ResampleOptions ro;
  ro.bin_us = 5000;
  auto binned = Resample(series[1].intervals, ro);
  ASSERT_TRUE(binned.ok());
  auto p = ExtractProfile(*binned);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->periodic) << p->reason;
  EXPECT_NEAR(p->period_exact_us, 200'000, 1000);
  EXPECT_NEAR(p->up_fraction, 0.3, 0.03);
  EXPECT_NEAR(p->peak_gbps, 25, 1);
  // The idle device has no pattern.
  auto idle = ExtractProfile(*Resample(series[3].intervals, ro));
  EXPECT_FALSE(idle->periodic);
  EXPECT_EQ(idle->reason, "no periodic pattern: idle");
}

TEST_F(FakeSysfs, SnapshotSeriesDirectory) {
  const fs::path dir = root_ / "series";
  for (int i = 0; i < 3; ++i) {
    WriteValue(dir / std::to_string(1000 + i * 10) / "mlx5_0/ports/1/counters/port_xmit_data",
               i == 2 ? 5 : 100 * i);  // the last reading went backwards: a reset
    WriteValue(dir / std::to_string(1000 + i * 10) / "mlx5_0/ports/1/counters/port_rcv_data", i);
  }
  EXPECT_TRUE(IsSnapshotSeries(dir.string()));
  EXPECT_FALSE(IsSnapshotSeries(root_.string()));
  auto snaps = ReadSnapshotSeries(dir.string());
  ASSERT_TRUE(snaps.ok()) << snaps.status();
  ASSERT_EQ(snaps->size(), 3u);
  uint64_t wraps = 0, resets = 0;
  auto series = RdmaSeries(*snaps, "s", &wraps, &resets);
  EXPECT_EQ(resets, 1u);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[1].subject, "mlx5_0/1/tx");
  ASSERT_EQ(series[1].intervals.size(), 1u);
  EXPECT_EQ(series[1].intervals[0].bytes, 400);

  fs::create_directories(dir / "latest");
  EXPECT_EQ(ReadSnapshotSeries(dir.string()).status().code(), absl::StatusCode::kInvalidArgument);
  fs::remove_all(dir);
  WriteValue(dir / "5" / "mlx5_0/ports/1/counters/port_xmit_data", 1);
  EXPECT_NE(ReadSnapshotSeries(dir.string()).status().message().find("at least two"),
            std::string::npos);
}

TEST(RdmaCountersTest, MissingRootAndNoDevices) {
  RdmaCounterOptions o;
  o.sysfs_root = "/nonexistent/phasor/sysfs";
  EXPECT_EQ(RdmaCounterReader::Create(o).status().code(), absl::StatusCode::kNotFound);
  const fs::path empty = fs::temp_directory_path() / ("phasor_empty_" + std::to_string(::getpid()));
  fs::create_directories(empty / "mlx5_0");  // a device without ports
  o.sysfs_root = empty.string();
  EXPECT_NE(RdmaCounterReader::Create(o).status().message().find("no device with ports"),
            std::string::npos);
  fs::remove_all(empty);
}

TEST(RdmaCountersTest, IbverbsWithoutRdmaGivesNoDevices) {
  // On a host without an RDMA subsystem ibv_get_device_list returns NULL
  // (or an empty list): no devices, no crash.
  const auto names = IbverbsDeviceNames();
  if (!fs::exists("/sys/class/infiniband")) {
    EXPECT_TRUE(names.empty());
  }
}

}  // namespace
}  // namespace rdma_counters_test
}  // namespace phasor::probe
