// Switch port counters from CSV files. First format: the Zhejiang Lab
// cluster traces (shared/data/network/zhejiang_a100, one file per switch
// port, optionally gzipped): columns found by header name,
//   SaveTimeUTC (ms since the epoch), DeviceName, PortName,
//   InOctets, OutOctets (bytes since the previous row of that port),
// other columns ignored. Rows are grouped by (DeviceName, PortName) and give
// one series per port and direction: "<device>/<port>/in" and ".../out".
//
// Known quirks, handled row by row and counted (never fatal):
//  - the first row of a port has no previous row: its interval is unknown,
//    dropped (counted in first_rows);
//  - the first row after a gap in sampling may hold a cumulative value
//    instead of a delta: a row whose octets imply more than `max_gbps` over
//    its interval is dropped (cumulative_rows); long intervals are left to
//    the resampler, which treats them as gaps;
//  - rows with missing or non-numeric fields (bad_rows, first_error keeps
//    the first message with its line number), time going backwards
//    (unordered_rows).
// Thread-safe pure functions.
#ifndef PHASOR_PROBE_SWITCH_CSV_H_
#define PHASOR_PROBE_SWITCH_CSV_H_

#include <cstdint>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "probe/counter_series.h"

namespace phasor::probe {

struct SwitchCsvOptions {
  double max_gbps = 800.0;  // above this a row is a cumulative value, not a delta
  bool in = true;           // emit the ingress (In*) series
  bool out = true;          // emit the egress (Out*) series
};

struct SwitchCsvResult {
  std::vector<CounterSeries> series;
  uint64_t rows = 0;  // data rows read
  uint64_t first_rows = 0;
  uint64_t cumulative_rows = 0;
  uint64_t unordered_rows = 0;
  uint64_t bad_rows = 0;
  std::string first_error;  // "line 17: InOctets: 'x' is not a number"
};

// Parses CSV text. `name` labels the source in messages and in
// CounterSeries::source. InvalidArgument when the header lacks a required
// column (naming it) or no row is usable.
absl::StatusOr<SwitchCsvResult> ParseSwitchCsv(absl::string_view text, const std::string& name,
                                               const SwitchCsvOptions& options = {});

// Reads a file (plain or gzip, detected by content) and parses it. NotFound
// for a missing file, InvalidArgument for a corrupt gzip stream.
absl::StatusOr<SwitchCsvResult> ReadSwitchCsv(const std::string& path,
                                              const SwitchCsvOptions& options = {});

// The series of several switch CSV files as a CounterSource; a file's
// skipped bad rows become a note. Errors are ReadSwitchCsv's.
class SwitchCsvSource : public CounterSource {
 public:
  SwitchCsvSource(std::vector<std::string> paths, const SwitchCsvOptions& options)
      : paths_(std::move(paths)), options_(options) {}
  absl::StatusOr<CounterCollection> Collect() override;

 private:
  std::vector<std::string> paths_;
  SwitchCsvOptions options_;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_SWITCH_CSV_H_
