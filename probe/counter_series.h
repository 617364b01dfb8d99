// Byte counters sampled over time (RDMA NIC ports, switch ports) as
// intervals, and their resampling onto the regular grid the profile
// extractor wants.
#ifndef PHASOR_PROBE_COUNTER_SERIES_H_
#define PHASOR_PROBE_COUNTER_SERIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "probe/profile_extractor.h"

namespace phasor::probe {

// `bytes` moved during (begin_us, end_us], epoch microseconds.
struct CounterInterval {
  int64_t begin_us = 0;
  int64_t end_us = 0;
  double bytes = 0;
};

// One subject's counter (a port direction, a NIC port's tx or rx).
struct CounterSeries {
  std::string subject;                     // "Leaf-1/TwoHundredGigE1/0/1:1/out", "mlx5_0/1/tx"
  std::string source;                      // "switch-csv:<file>", "rdma-sysfs:<root>"
  std::vector<CounterInterval> intervals;  // in time order, not overlapping
};

struct ResampleOptions {
  uint32_t bin_us = 100000;  // grid bin width
  // Intervals longer than this are sampling gaps: their bytes are not spread
  // (the bins stay NaN). 0: no limit.
  int64_t max_interval_us = 5000000;
  // A bin needs at least this share of its span covered by intervals to get
  // a value (scaled up to the whole bin); less is a gap (NaN).
  double min_coverage = 0.5;
};

// Spreads every interval's bytes uniformly over its span onto bins of
// `bin_us` aligned to multiples of bin_us since the epoch. InvalidArgument
// for bin_us 0, an empty list, or an interval with end <= begin or negative
// bytes (naming its index).
absl::StatusOr<BinnedSeries> Resample(const std::vector<CounterInterval>& intervals,
                                      const ResampleOptions& options);

// Turns cumulative readings of a counter into intervals of `scale` times
// the counter's increase. A reading below the previous one is a wrap when
// the previous value lies in the top quarter of the `width_bits` range and
// the new one in the bottom quarter, otherwise a reset (the counter was
// cleared or the driver reloaded): that interval is dropped and counted in
// *resets, and the next one starts from the new value.
struct CounterReading {
  int64_t time_us = 0;
  uint64_t value = 0;
};
std::vector<CounterInterval> DeltasFromReadings(const std::vector<CounterReading>& readings,
                                                int width_bits, double scale, uint64_t* wraps,
                                                uint64_t* resets);

// Where counters come from: switch CSV files, RDMA sysfs snapshots or live
// polling, or a fake in tests. Collect() may block (live polling); not
// thread-safe.
class CounterSource {
 public:
  virtual ~CounterSource() = default;
  virtual absl::StatusOr<std::vector<CounterSeries>> Collect() = 0;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_COUNTER_SERIES_H_
