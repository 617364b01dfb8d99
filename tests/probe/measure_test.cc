#include "probe/measure.h"

#include <gtest/gtest.h>

#include <fstream>

#include "probe/profile_report.h"
#include "probe/rdma_counters.h"
#include "probe/switch_csv.h"
#include "tests/probe/synthetic_counters.h"

namespace phasor::probe {
namespace measure_test {
namespace {

// A source that hands out what the test gives it.
class FakeSource : public CounterSource {
 public:
  explicit FakeSource(absl::StatusOr<CounterCollection> c) : c_(std::move(c)) {}
  absl::StatusOr<CounterCollection> Collect() override { return c_; }

 private:
  absl::StatusOr<CounterCollection> c_;
};

// 10 ms readings of a 100 ms square wave (30 ms at 8 Gbit/s) for 5 s.
CounterSeries Square(const std::string& subject) {
  CounterSeries s;
  s.subject = subject;
  s.source = "fake";
  const int64_t t0 = 1'700'000'000'000'000;
  for (int i = 0; i < 500; ++i) {
    const bool up = i % 10 < 3;
    s.intervals.push_back({t0 + i * 10'000, t0 + (i + 1) * 10'000, up ? 1e7 : 0.0});
  }
  return s;
}

TEST(MeasureTest, TypedProfilesInTheSourcesOrderWithItsNotes) {
  CounterCollection c;
  c.series = {Square("b/tx"), Square("a/tx")};
  c.series[1].sampling = SamplingReport{10'000, 500, 2, 12.5, 40, 90};
  c.notes = {"2 counter resets skipped"};
  c.bin_us = 10'000;
  FakeSource source(c);
  auto m = Measure(source, MeasureOptions{});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->profiles.size(), 2u);
  EXPECT_EQ(m->profiles[0].subject, "b/tx");
  EXPECT_EQ(m->profiles[1].subject, "a/tx");
  EXPECT_EQ(m->notes, std::vector<std::string>{"2 counter resets skipped"});
  const MeasuredProfile& p = m->profiles[0];
  EXPECT_EQ(p.source, "fake");
  ASSERT_TRUE(p.extracted.periodic) << p.extracted.reason;
  EXPECT_NEAR(p.extracted.period_exact_us, 100'000, 200);
  EXPECT_EQ(p.extracted.bin_us, 10'000u);
  EXPECT_EQ(p.extracted.gbps.size(), 10u);
  EXPECT_NEAR(p.extracted.up_fraction, 0.3, 0.001);
  EXPECT_NEAR(p.extracted.peak_gbps, 8.0, 1e-9);
  EXPECT_GT(p.extracted.confidence, 0.99);
  EXPECT_FALSE(p.sampling.has_value());
  ASSERT_TRUE(m->profiles[1].sampling.has_value());
  // A bin width given in the options wins over the source's.
  MeasureOptions o;
  o.bin_us = 5'000;
  m = Measure(source, o);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->profiles[0].extracted.bin_us, 5'000u);
}

TEST(MeasureTest, RendersTheSameJsonAsBeforeAndSamplingWhenPolled) {
  CounterCollection c;
  c.series = {Square("x")};
  c.bin_us = 10'000;
  FakeSource source(c);
  auto m = Measure(source, MeasureOptions{});
  ASSERT_TRUE(m.ok());
  MeasuredProfile p = m->profiles[0];
  EXPECT_EQ(ProfileJson(p).dump(), ProfileJson(p.subject, p.source, p.extracted).dump());
  EXPECT_FALSE(ProfileJson(p).contains("sampling"));
  p.sampling = SamplingReport{10'000, 401, 3, 61.25, 410, 1203};
  EXPECT_EQ(ProfileJson(p)["sampling"].dump(),
            R"({"interval_us":10000,"jitter_max_us":1203.0,"jitter_mean_us":61.3,)"
            R"("jitter_p99_us":410.0,"late":3,"reads":401})");
}

TEST(MeasureTest, ErrorsNameTheSubjectOrComeFromTheSource) {
  FakeSource broken(absl::NotFoundError("counters directory 'x': not found"));
  EXPECT_EQ(Measure(broken, MeasureOptions{}).status().code(), absl::StatusCode::kNotFound);
  CounterCollection c;
  c.series = {Square("x")};
  c.series[0].intervals[3].bytes = -1;
  FakeSource bad(c);
  auto m = Measure(bad, MeasureOptions{});
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), "x: intervals[3]: bytes -1");
  c.series[0].intervals[3].bytes = 0;
  FakeSource good(c);
  MeasureOptions o;
  o.extract.min_cycles = 1;
  EXPECT_EQ(Measure(good, o).status().message(), "min_cycles: must be >= 2");
}

TEST(SwitchCsvSourceTest, SeriesOfEveryFileAndBadRowsAsNotes) {
  const std::string dir = ::testing::TempDir();
  const std::string a = dir + "/phasor_csv_source_a.csv", b = dir + "/phasor_csv_source_b.csv";
  testing::SamplingModel s;
  s.duration_s = 120;
  std::ofstream(a) << testing::SyntheticSwitchCsv(testing::RateModel{}, s, 1);
  std::ofstream(b) << "SaveTimeUTC,DeviceName,PortName,InOctets,OutOctets\n"
                      "1000,L,P2,5,5\n2000,L,P2,x,5\n3000,L,P2,5,5\n4000,L,P2,7,7\n";
  SwitchCsvSource source({a, b}, SwitchCsvOptions{});
  auto c = source.Collect();
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->series.size(), 4u);
  EXPECT_EQ(c->series[0].subject, "Leaf-9/Port1/in");
  EXPECT_EQ(c->series[2].subject, "L/P2/in");
  EXPECT_EQ(c->series[0].source, "switch-csv:" + a);
  EXPECT_EQ(c->notes,
            std::vector<std::string>{
                b + ": skipped 1 bad rows (first: line 3: InOctets: 'x' is not a count)"});
  SwitchCsvSource missing({dir + "/none.csv"}, SwitchCsvOptions{});
  EXPECT_EQ(missing.Collect().status().code(), absl::StatusCode::kNotFound);
  SwitchCsvSource none({}, SwitchCsvOptions{});
  EXPECT_EQ(none.Collect().status().message(), "switch CSV: no file given");
}

TEST(RdmaSysfsSourceTest, MissingTreeIsNotFound) {
  RdmaSourceOptions o;
  o.path = ::testing::TempDir() + "/phasor_no_such_sysfs";
  RdmaSysfsSource source(o);
  EXPECT_EQ(source.Collect().status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace measure_test
}  // namespace phasor::probe
