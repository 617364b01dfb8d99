#include "probe/measure.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace phasor::probe {

absl::StatusOr<MeasuredProfile> MeasureBinned(const std::string& subject, const std::string& source,
                                              const BinnedSeries& series,
                                              const ExtractorOptions& options) {
  absl::StatusOr<ExtractedProfile> p = ExtractProfile(series, options);
  if (!p.ok()) return absl::InvalidArgumentError(p.status().message());
  MeasuredProfile out;
  out.subject = subject;
  out.source = source;
  out.extracted = *std::move(p);
  return out;
}

absl::StatusOr<Measurement> Measure(CounterSource& source, const MeasureOptions& options) {
  absl::StatusOr<CounterCollection> collected = source.Collect();
  if (!collected.ok()) return collected.status();
  return MeasureCollection(*std::move(collected), options);
}

absl::StatusOr<Measurement> MeasureCollection(CounterCollection collection,
                                              const MeasureOptions& options) {
  Measurement out;
  out.notes = std::move(collection.notes);
  ResampleOptions ro;
  ro.bin_us = options.bin_us ? options.bin_us : collection.bin_us;
  // An interval a few bins long is slow sampling, not a gap.
  ro.max_interval_us = std::max<int64_t>(ro.max_interval_us, 4 * int64_t{ro.bin_us});
  for (const CounterSeries& s : collection.series) {
    absl::StatusOr<BinnedSeries> binned = Resample(s.intervals, ro);
    if (!binned.ok()) {
      return absl::Status(binned.status().code(),
                          absl::StrCat(s.subject, ": ", binned.status().message()));
    }
    absl::StatusOr<MeasuredProfile> p =
        MeasureBinned(s.subject, s.source, *binned, options.extract);
    if (!p.ok()) return p.status();
    p->sampling = s.sampling;
    out.profiles.push_back(*std::move(p));
  }
  return out;
}

}  // namespace phasor::probe
