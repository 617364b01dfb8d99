// One typed measurement for every counter source: collect the series
// (CounterSource), resample each onto a regular grid (counter_series.h),
// extract its profile (profile_extractor.h). Renderers (profile_report.h's
// ProfileJson, `phasor diagnose`) take the typed result; nothing here
// formats text.
//
// Measure() computes everything before it returns, so a failure leaves no
// partial result. Thread safety: as the source's Collect().
#ifndef PHASOR_PROBE_MEASURE_H_
#define PHASOR_PROBE_MEASURE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "probe/counter_series.h"
#include "probe/profile_extractor.h"

namespace phasor::probe {

// One subject's measured profile: when `extracted.periodic`, its period,
// per-phase Gbit/s, t0, confidence, up_fraction and peak; otherwise
// `extracted.reason` says why not ("no periodic pattern: idle", ...).
struct MeasuredProfile {
  std::string subject;  // job, flow, NIC port direction or switch port direction
  std::string source;   // "switch-csv:<file>", "rdma-sysfs:<root>", "netdev:<root>", "pcap:<file>"
  ExtractedProfile extracted;
  std::optional<SamplingReport> sampling;  // live polling sources: how the reads went
};

struct Measurement {
  std::vector<MeasuredProfile> profiles;  // in the source's subject order
  std::vector<std::string> notes;         // the source's notes (skipped rows, resets)
};

struct MeasureOptions {
  uint32_t bin_us = 0;  // resampling grid; 0: the source's own (CounterCollection::bin_us)
  ExtractorOptions extract;
};

// Collects, resamples and extracts. Errors: the source's; a series that
// cannot be resampled (InvalidArgument "<subject>: <why>"); extractor option
// errors (InvalidArgument). A subject without a periodic pattern is a value,
// not an error.
absl::StatusOr<Measurement> Measure(CounterSource& source, const MeasureOptions& options);

// The same for series already collected (a live source's snapshot).
absl::StatusOr<Measurement> MeasureCollection(CounterCollection collection,
                                              const MeasureOptions& options);

// The profile of one already binned series (the capture path's subjects).
absl::StatusOr<MeasuredProfile> MeasureBinned(const std::string& subject, const std::string& source,
                                              const BinnedSeries& series,
                                              const ExtractorOptions& options);

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_MEASURE_H_
