// libFuzzer target: the switch counter CSV parser and the resampler on
// arbitrary text. Every input gives a Status or a result, never a crash, and
// a result's intervals are well formed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "probe/counter_series.h"
#include "probe/switch_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = phasor::probe::ParseSwitchCsv(text, "fuzz.csv");
  if (!r.ok()) return 0;
  for (const auto& s : r->series) {
    for (const auto& iv : s.intervals) {
      if (iv.end_us <= iv.begin_us || iv.bytes < 0) std::abort();
    }
    // Resample only spans of modest size: huge spans are legal but slow.
    if (s.intervals.empty()) continue;
    const int64_t span = s.intervals.back().end_us - s.intervals.front().begin_us;
    if (span < 0 || span > int64_t{100000} * 1000000) continue;
    phasor::probe::ResampleOptions o;
    o.bin_us = 1000000;
    auto b = phasor::probe::Resample(s.intervals, o);
    (void)b;
  }
  return 0;
}
