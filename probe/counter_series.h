// Byte counters sampled over time (RDMA NIC ports, switch ports) as
// intervals, and their resampling onto the regular grid the profile
// extractor wants.
#ifndef PHASOR_PROBE_COUNTER_SERIES_H_
#define PHASOR_PROBE_COUNTER_SERIES_H_

#include <cstdint>
#include <optional>
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

// How the reads of a polled counter went (live sources only): the schedule
// asked for a read every `interval_us`; `jitter` is how late each kept read
// was against its scheduled time (its real time is what the intervals use).
struct SamplingReport {
  int64_t interval_us = 0;    // the polling interval asked for
  uint64_t reads = 0;         // reads kept
  uint64_t late = 0;          // reads dropped: later than max_late_us after their slot
  double jitter_mean_us = 0;  // mean lateness of the kept reads
  double jitter_p99_us = 0;   // 99th percentile
  double jitter_max_us = 0;   // largest
};

// One subject's counter (a port direction, a NIC port's tx or rx).
struct CounterSeries {
  std::string subject;                     // "Leaf-1/TwoHundredGigE1/0/1:1/out", "mlx5_0/1/tx"
  std::string source;                      // "switch-csv:<file>", "rdma-sysfs:<root>"
  std::vector<CounterInterval> intervals;  // in time order, not overlapping
  std::optional<SamplingReport> sampling;  // set by live polling sources
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
// the previous value lies in the top quarter of the `width_bits` range (up
// to 64) and the new one in the bottom quarter, otherwise a reset (the counter was
// cleared or the driver reloaded): that interval is dropped and counted in
// *resets, and the next one starts from the new value.
struct CounterReading {
  int64_t time_us = 0;
  uint64_t value = 0;
};
std::vector<CounterInterval> DeltasFromReadings(const std::vector<CounterReading>& readings,
                                                int width_bits, double scale, uint64_t* wraps,
                                                uint64_t* resets);

// What a CounterSource collected: the series, and notes for the user about
// what was skipped ("x.csv: skipped 3 bad rows (first: ...)"), never fatal.
struct CounterCollection {
  std::vector<CounterSeries> series;
  std::vector<std::string> notes;
  uint32_t bin_us = 100000;  // the grid the source's sampling suits (its default bin)
};

// Where counters come from: switch CSV files (SwitchCsvSource), RDMA sysfs
// snapshots or live polling (RdmaSysfsSource), Linux interface counters
// (NetdevSource), or a fake in tests. Collect() may block (live polling);
// not thread-safe. Errors: NotFound for a missing file or tree,
// InvalidArgument for malformed content, naming the file and field.
class CounterSource {
 public:
  virtual ~CounterSource() = default;
  virtual absl::StatusOr<CounterCollection> Collect() = 0;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_COUNTER_SERIES_H_
