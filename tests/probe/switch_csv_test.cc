#include "probe/switch_csv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "probe/counter_series.h"
#include "probe/profile_extractor.h"

namespace phasor::probe {
namespace switch_csv_test {
namespace {

constexpr char kHeader[] =
    "SaveTime,SaveTimeUTC,DeviceName,PortName,InPkts,InOctets,OutPkts,OutOctets,InRatio,"
    "OutRatio\n";

TEST(SwitchCsvTest, RowsBecomeIntervalsPerPortAndDirection) {
  const std::string text = std::string(kHeader) +
                           "x,1000,Leaf,P1,1,500,1,700,0,0\n"  // first row: dropped
                           "x,1500,Leaf,P1,1,1000,1,2000,0,0\n"
                           "x,2100,Leaf,P1,1,0,1,600,0,0\n"
                           "x,1200,Leaf,P2,1,10,1,20,0,0\n"
                           "x,1700,Leaf,P2,1,30,1,40,0,0\n";
  auto r = ParseSwitchCsv(text, "t.csv");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows, 5u);
  EXPECT_EQ(r->first_rows, 2u);
  ASSERT_EQ(r->series.size(), 4u);
  EXPECT_EQ(r->series[0].subject, "Leaf/P1/in");
  EXPECT_EQ(r->series[1].subject, "Leaf/P1/out");
  EXPECT_EQ(r->series[2].subject, "Leaf/P2/in");
  EXPECT_EQ(r->series[0].source, "switch-csv:t.csv");
  ASSERT_EQ(r->series[1].intervals.size(), 2u);
  EXPECT_EQ(r->series[1].intervals[0].begin_us, 1000000);
  EXPECT_EQ(r->series[1].intervals[0].end_us, 1500000);
  EXPECT_EQ(r->series[1].intervals[0].bytes, 2000);
  EXPECT_EQ(r->series[1].intervals[1].bytes, 600);
  EXPECT_EQ(r->series[3].intervals[0].bytes, 40);
}

TEST(SwitchCsvTest, QuirksAreCountedNotFatal) {
  const std::string text = std::string(kHeader) +
                           "x,1000,Leaf,P1,1,500,1,700,0,0\n"
                           "x,1500,Leaf,P1,1,1000,1,2000,0,0\n"
                           // cumulative value: 97 GB in 0.5 s is beyond 800 Gbit/s
                           "x,2000,Leaf,P1,1,97314297820,1,97183776157,1.5,1.5\n"
                           "x,1900,Leaf,P1,1,1,1,1,0,0\n"    // time goes back
                           "x,2500,Leaf,P1,1,,1,5,0,0\n"     // missing field
                           "x,3000,Leaf,P1,1,abc,1,5,0,0\n"  // not a number
                           "x,3500,Leaf\n"                   // too few fields
                           "x,4000,Leaf,P1,1,10,1,20,0,0\n";
  auto r = ParseSwitchCsv(text, "q.csv");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cumulative_rows, 1u);
  EXPECT_EQ(r->unordered_rows, 1u);
  EXPECT_EQ(r->bad_rows, 3u);
  EXPECT_EQ(r->first_error, "line 6: InOctets: '' is not a count");
  ASSERT_EQ(r->series[0].intervals.size(), 2u);
  // The interval after the dropped rows runs from the cumulative row's time.
  EXPECT_EQ(r->series[0].intervals[1].begin_us, 2000000);
  EXPECT_EQ(r->series[0].intervals[1].end_us, 4000000);
}

TEST(SwitchCsvTest, BadFiles) {
  EXPECT_EQ(ParseSwitchCsv("", "e.csv").status().message(),
            "switch CSV 'e.csv': empty (no header)");
  EXPECT_EQ(ParseSwitchCsv("SaveTimeUTC,DeviceName,PortName,InOctets\n1,a,b,2\n", "h.csv")
                .status()
                .message(),
            "switch CSV 'h.csv': header has no column 'OutOctets'");
  auto none = ParseSwitchCsv(std::string(kHeader) + "x,zz,Leaf,P1,1,1,1,1,0,0\n", "n.csv");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("no usable rows"), std::string::npos);
  EXPECT_NE(none.status().message().find("SaveTimeUTC: 'zz'"), std::string::npos);
  EXPECT_EQ(ReadSwitchCsv("/nonexistent/x.csv.gz").status().code(), absl::StatusCode::kNotFound);

  const auto dir = std::filesystem::temp_directory_path();
  const std::string bad_gz =
      (dir / ("phasor_bad_" + std::to_string(::getpid()) + ".csv.gz")).string();
  {
    // A gzip header followed by garbage.
    std::ofstream out(bad_gz, std::ios::binary);
    const unsigned char bytes[] = {0x1f, 0x8b, 8,    0,    0,    0,    0, 0,
                                   0,    3,    0xde, 0xad, 0xbe, 0xef, 1, 2};
    out.write(reinterpret_cast<const char*>(bytes), sizeof(bytes));
  }
  auto gz = ReadSwitchCsv(bad_gz);
  EXPECT_EQ(gz.status().code(), absl::StatusCode::kInvalidArgument) << gz.status();
  EXPECT_NE(gz.status().message().find("corrupt gzip"), std::string::npos) << gz.status();
  std::filesystem::remove(bad_gz);
}

TEST(CounterSeriesTest, ResampleSpreadsBytesAndLeavesGaps) {
  // 1000 bytes over (0, 1000] us, a 10 ms gap, 500 bytes over (11000, 11500].
  std::vector<CounterInterval> iv = {{0, 1000, 1000}, {1000, 11000, 99}, {11000, 11500, 500}};
  ResampleOptions o;
  o.bin_us = 500;
  o.max_interval_us = 5000;
  auto b = Resample(iv, o);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->t0_epoch_us, 0);
  ASSERT_EQ(b->bytes.size(), 23u);
  EXPECT_DOUBLE_EQ(b->bytes[0], 500);
  EXPECT_DOUBLE_EQ(b->bytes[1], 500);
  EXPECT_TRUE(std::isnan(b->bytes[2]));
  EXPECT_TRUE(std::isnan(b->bytes[21]));
  EXPECT_DOUBLE_EQ(b->bytes[22], 500);
  iv = {{0, 300, 300}};  // covers 60% of one bin: scaled up to the bin
  b = Resample(iv, o);
  EXPECT_DOUBLE_EQ(b->bytes[0], 500);
  EXPECT_EQ(Resample({{5, 5, 1}}, o).status().message(),
            "intervals[0]: end 5 is not after begin 5");
  o.bin_us = 0;
  EXPECT_EQ(Resample(iv, o).status().message(), "bin_us: must be positive");
}

TEST(CounterSeriesTest, WrapsAndResets) {
  uint64_t wraps = 0, resets = 0;
  const std::vector<CounterReading> r = {
      {0, 4294967000u}, {10, 200}, {20, 300}, {30, 100}, {40, 150}};
  const auto d = DeltasFromReadings(r, 32, 4.0, &wraps, &resets);
  EXPECT_EQ(wraps, 1u);
  EXPECT_EQ(resets, 1u);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_DOUBLE_EQ(d[0].bytes, (4294967296.0 - 4294967000 + 200) * 4);
  EXPECT_DOUBLE_EQ(d[1].bytes, 400);
  EXPECT_EQ(d[2].begin_us, 30);
  EXPECT_DOUBLE_EQ(d[2].bytes, 200);

  // Counter64 (OpenConfig's octet counters): a wrap through 2^64 is the
  // increase modulo 2^64; a drop from the middle of the range is a reset.
  wraps = resets = 0;
  const std::vector<CounterReading> r64 = {
      {0, 18446744073709551000u}, {10, 1000}, {20, 9223372036854775808u}, {30, 5}};
  const auto d64 = DeltasFromReadings(r64, 64, 1.0, &wraps, &resets);
  EXPECT_EQ(wraps, 1u);
  EXPECT_EQ(resets, 1u);
  ASSERT_EQ(d64.size(), 2u);
  EXPECT_DOUBLE_EQ(d64[0].bytes, 616 + 1000);
  EXPECT_EQ(d64[1].begin_us, 10);
  EXPECT_EQ(d64[1].end_us, 20);
}

// The real switch counters (data/network/zhejiang_a100, CC-BY-4.0).
class ZhejiangTest : public ::testing::Test {
 protected:
  static ExtractedProfile Extract(const std::string& port, const std::string& direction = "out") {
    auto r = ReadSwitchCsv("data/network/zhejiang_a100/leaf1_ports/Leaf-1_" + port + ".csv.gz");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    EXPECT_EQ(r->bad_rows, 0u);
    for (const auto& s : r->series) {
      if (s.subject.ends_with("/" + direction)) {
        auto b = Resample(s.intervals, ResampleOptions{});
        EXPECT_TRUE(b.ok());
        auto p = ExtractProfile(*b);
        EXPECT_TRUE(p.ok());
        return *p;
      }
    }
    ADD_FAILURE() << "no " << direction << " series";
    return {};
  }
};

TEST_F(ZhejiangTest, BusyServerPortsArePeriodicAndJobsAgree) {
  // Ports 3_1 and 3_2 carry one job (21.8 Gbit/s mean), 2_1 and 7_1 another (68.8).
  const ExtractedProfile a1 = Extract("3_1"), a2 = Extract("3_2");
  const ExtractedProfile b1 = Extract("2_1"), b2 = Extract("7_1");
  for (const ExtractedProfile* p : {&a1, &a2, &b1, &b2}) {
    ASSERT_TRUE(p->periodic) << p->reason;
    EXPECT_GT(p->period_exact_us, 2.8e6);
    EXPECT_LT(p->period_exact_us, 3.1e6);
    EXPECT_GT(p->confidence, 0.1);
    EXPECT_GT(p->peak_gbps, 1.3 * p->mean_gbps);
  }
  EXPECT_NEAR(a1.mean_gbps, 21.76, 0.05);
  EXPECT_NEAR(b1.mean_gbps, 68.82, 0.05);
  EXPECT_NEAR(a1.period_exact_us, a2.period_exact_us, 0.005 * a1.period_exact_us);
  EXPECT_NEAR(b1.period_exact_us, b2.period_exact_us, 0.005 * b1.period_exact_us);
  EXPECT_NEAR(Extract("3_1", "in").period_exact_us, a1.period_exact_us, 0.005 * a1.period_exact_us);
}

TEST_F(ZhejiangTest, SpineUplinkAggregateHasNoClearPattern) {
  const ExtractedProfile up = Extract("33");
  EXPECT_FALSE(up.periodic) << up.period_us << " " << up.confidence;
  EXPECT_NE(up.reason.find("no periodic pattern"), std::string::npos);
}

TEST_F(ZhejiangTest, IdlePortReportsNone) {
  // The real sampling times of port 3_1 with no traffic on them.
  auto r = ReadSwitchCsv("data/network/zhejiang_a100/leaf1_ports/Leaf-1_3_1.csv.gz");
  ASSERT_TRUE(r.ok());
  auto intervals = r->series[0].intervals;
  for (auto& iv : intervals) iv.bytes = 0;
  auto b = Resample(intervals, ResampleOptions{});
  ASSERT_TRUE(b.ok());
  auto p = ExtractProfile(*b);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->periodic);
  EXPECT_EQ(p->reason, "no periodic pattern: idle");
}

}  // namespace
}  // namespace switch_csv_test
}  // namespace phasor::probe
