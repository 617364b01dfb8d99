// Counter-source costs:
//  - BM_NetdevRead/<ports>: one poll of <ports> interfaces' tx_bytes and
//    rx_bytes (pread of two sysfs files each) on this machine's real
//    /sys/class/net (the loopback interface, repeated); a port polled every
//    10 ms costs 100 / port_reads_per_s of one core.
//  - BM_ExtractHour64Ports: profile extraction of one hour of 0.5 s switch
//    counters (irregular readings resampled to 100 ms bins, 36000 bins) on
//    64 ports, the ports generated as in tests/probe/synthetic_counters.h.
#include <benchmark/benchmark.h>

#include <vector>

#include "probe/counter_series.h"
#include "probe/netdev_counters.h"
#include "probe/profile_extractor.h"
#include "probe/switch_csv.h"
#include "tests/probe/synthetic_counters.h"

namespace phasor::probe {
namespace {

void BM_NetdevRead(benchmark::State& state) {
  NetdevOptions o;
  o.interfaces.assign(static_cast<size_t>(state.range(0)), "lo");
  auto source = NetdevSource::Create(o);
  if (!source.ok()) {
    state.SkipWithError(std::string(source.status().message()).c_str());
    return;
  }
  std::vector<uint64_t> values;
  for (auto _ : state) {
    benchmark::DoNotOptimize((*source)->ReadOnce(values));
  }
  // Port reads per CPU second: a port polled every 10 ms (100 reads/s)
  // costs 100 / port_reads_per_s of one core.
  state.counters["port_reads_per_s"] = benchmark::Counter(
      static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_NetdevRead)->Arg(1)->Arg(8)->Arg(64);

std::vector<BinnedSeries> HourOfPorts(int ports) {
  std::vector<BinnedSeries> out;
  for (int p = 0; p < ports; ++p) {
    testing::RateModel m;
    m.period_s = 2.5 + 0.1 * p;
    auto csv = ParseSwitchCsv(testing::SyntheticSwitchCsv(m, testing::SamplingModel{}, p + 1), "b");
    out.push_back(*Resample(csv->series[0].intervals, ResampleOptions{}));
  }
  return out;
}

void BM_ExtractHour64Ports(benchmark::State& state) {
  static const std::vector<BinnedSeries> ports = HourOfPorts(64);
  for (auto _ : state) {
    for (const BinnedSeries& s : ports) benchmark::DoNotOptimize(ExtractProfile(s));
  }
  state.counters["bins_per_port"] = static_cast<double>(ports[0].bytes.size());
}
BENCHMARK(BM_ExtractHour64Ports)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace phasor::probe

BENCHMARK_MAIN();
