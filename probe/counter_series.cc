#include "probe/counter_series.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "probe/binning.h"

namespace phasor::probe {

absl::StatusOr<BinnedSeries> Resample(const std::vector<CounterInterval>& intervals,
                                      const ResampleOptions& options) {
  if (options.bin_us == 0) return absl::InvalidArgumentError("bin_us: must be positive");
  if (intervals.empty()) return absl::InvalidArgumentError("intervals: none to resample");
  if (!(options.min_coverage > 0 && options.min_coverage <= 1)) {
    return absl::InvalidArgumentError("min_coverage: must be in (0, 1]");
  }
  int64_t lo = intervals.front().begin_us, hi = intervals.front().end_us;
  for (size_t i = 0; i < intervals.size(); ++i) {
    const CounterInterval& iv = intervals[i];
    if (iv.end_us <= iv.begin_us) {
      return absl::InvalidArgumentError(
          absl::StrCat("intervals[", i, "]: end ", iv.end_us, " is not after begin ", iv.begin_us));
    }
    if (!(iv.bytes >= 0) || std::isinf(iv.bytes)) {
      return absl::InvalidArgumentError(absl::StrCat("intervals[", i, "]: bytes ", iv.bytes));
    }
    lo = std::min(lo, iv.begin_us);
    hi = std::max(hi, iv.end_us);
  }
  const int64_t w = options.bin_us;
  const int64_t first = FloorDiv(lo, w);
  const int64_t last = FloorDiv(hi - 1, w);
  if (last - first + 1 > (int64_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrCat("bin_us: ", w, " makes ", last - first + 1,
                                                   " bins for this span; use wider bins"));
  }
  const size_t n = static_cast<size_t>(last - first + 1);
  std::vector<double> bytes(n, 0.0), covered(n, 0.0);
  for (const CounterInterval& iv : intervals) {
    const int64_t len = iv.end_us - iv.begin_us;
    if (options.max_interval_us > 0 && len > options.max_interval_us) continue;
    const double rate = iv.bytes / static_cast<double>(len);
    for (int64_t b = FloorDiv(iv.begin_us, w); b * w < iv.end_us; ++b) {
      const int64_t a = std::max(iv.begin_us, b * w);
      const int64_t e = std::min(iv.end_us, (b + 1) * w);
      if (e <= a) continue;
      bytes[b - first] += rate * static_cast<double>(e - a);
      covered[b - first] += static_cast<double>(e - a);
    }
  }
  BinnedSeries out;
  out.t0_epoch_us = first * w;
  out.bin_us = options.bin_us;
  out.bytes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    out.bytes[i] = covered[i] >= options.min_coverage * w
                       ? bytes[i] * (static_cast<double>(w) / covered[i])
                       : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

std::vector<CounterInterval> DeltasFromReadings(const std::vector<CounterReading>& readings,
                                                int width_bits, double scale, uint64_t* wraps,
                                                uint64_t* resets) {
  std::vector<CounterInterval> out;
  const double range = width_bits >= 64 ? 18446744073709551616.0 : std::ldexp(1.0, width_bits);
  for (size_t i = 1; i < readings.size(); ++i) {
    const CounterReading& a = readings[i - 1];
    const CounterReading& b = readings[i];
    if (b.time_us <= a.time_us) continue;
    double delta;
    if (b.value >= a.value) {
      delta = static_cast<double>(b.value - a.value);
    } else if (width_bits >= 64 && a.value >= (uint64_t{3} << 62) &&
               b.value < (uint64_t{1} << 62)) {
      delta = static_cast<double>(b.value - a.value);  // modulo 2^64: the wrapped increase
      if (wraps) ++*wraps;
    } else if (width_bits < 64 && static_cast<double>(a.value) < range &&
               static_cast<double>(a.value) >= 0.75 * range &&
               static_cast<double>(b.value) < 0.25 * range) {
      delta = range - static_cast<double>(a.value) + static_cast<double>(b.value);
      if (wraps) ++*wraps;
    } else {
      if (resets) ++*resets;
      continue;
    }
    out.push_back({a.time_us, b.time_us, delta * scale});
  }
  return out;
}

}  // namespace phasor::probe
