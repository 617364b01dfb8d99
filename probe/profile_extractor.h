// Profile extraction (SPEC section 8): from a byte time series, the period of
// its repeating pattern, the mean per-phase profile, and how sure we are.
//
// Method, in order:
//  1. Idle (mean below `idle_gbps`) or constant series (relative standard
//     deviation below 1e-3) have no periodic pattern.
//  2. Autocorrelation by FFT (KISS FFT, double precision), gap-aware: missing
//     bins (NaN) are left out and every lag is normalised by the number of
//     valid pairs it has.
//  3. Coarse period, the fundamental rather than a multiple or a
//     super-period: the shortest autocorrelation peak (past the first lag
//     where it goes below zero) that stands out (at least `harmonic_ratio`
//     of the highest peak, 0.05, and 4 sigma of chance), repeats (peaks near
//     2x and 3x it within a factor of two of its own), has the highest peak
//     among its multiples, and explains the pattern (a fold at it explains
//     at least half of what a fold at the highest peak does); else the
//     highest peak. Every candidate, and the highest peak, is judged at its
//     refined period (step 4a), not at its lag: with per-iteration timing
//     noise a one-period peak is broad and off-centre, and a fold 1-2% off
//     the period explains almost nothing. docs/probe.md explains each test.
//  4. Refinement below one bin: (a) the period within 5% of the peak at
//     which the autocorrelation averaged over all its multiples (up to
//     `fold_cycles`) is highest (every hill is centred on its multiple on
//     average, even where timing noise or a counter refresh moves its top);
//     where that agrees with the peak to 0.6 bin, (b) the peaks near k
//     times the period (k = 2, 4, 8, ... while they stay at least half as
//     high and agree with the estimate so far and with (a)) each narrow it
//     down to about 1/k bin; where it does not (the peak is off-centre), (a)
//     is the estimate; then (c) epoch folding (the period that maximises the
//     variance between phase bins of the folded series) on a fine grid
//     within the remaining uncertainty. Candidates (step 3) are judged at
//     the estimate of (a).
//  5. Confidence: the share of the variance the folded mean profile
//     explains, corrected for chance (white noise scores about 0), in [0, 1],
//     after removing variation slower than one period (the series minus its
//     moving mean over one period). Calibrated: a pattern carrying a share s
//     of the variance scores s (docs/probe.md says what 0.5 and 0.9 mean).
//     Folds are taken over chunks of `fold_cycles` periods and averaged, so
//     that a slow phase drift over a long series does not erase the pattern.
//     Below `min_confidence`, or below 5 standard deviations of what white
//     noise scores for this length, the answer is "no periodic pattern".
//  6. The profile is the fold of the newest chunk, rotated to start at the
//     start of its longest run of high demand; t0 is the newest such
//     iteration start inside the series.
//
// Pure functions, thread-safe.
#ifndef PHASOR_PROBE_PROFILE_EXTRACTOR_H_
#define PHASOR_PROBE_PROFILE_EXTRACTOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace phasor::probe {

// Bytes per bin on a regular grid: bin k covers
// [t0_epoch_us + k*bin_us, t0_epoch_us + (k+1)*bin_us). NaN marks a bin
// without data (a gap), which is different from 0 (no traffic).
struct BinnedSeries {
  int64_t t0_epoch_us = 0;
  uint32_t bin_us = 0;
  std::vector<double> bytes;
};

struct ExtractorOptions {
  double min_confidence = 0.1;    // below (or within noise): "no periodic pattern"
  double min_cycles = 3.0;        // the series must span this many periods
  uint32_t min_period_us = 0;     // 0: two bins
  uint32_t max_period_us = 0;     // 0: no limit beyond min_cycles
  double idle_gbps = 0.001;       // mean rate below which a series is idle
  double max_gap_fraction = 0.5;  // more missing bins than this: no answer
  double harmonic_ratio = 0.1;    // a shorter peak this share of the highest may be the period
                                  // (step 3)
  double fold_cycles = 32;        // periods per fold chunk (steps 4-6)
};

struct ExtractedProfile {
  bool periodic = false;
  std::string reason;          // why not periodic ("idle", "no periodic pattern", ...)
  double period_exact_us = 0;  // refined period, fractional
  uint32_t period_us = 0;      // rounded
  uint32_t bin_us = 0;         // the series' bin width
  std::vector<double> gbps;    // ceil(period_us / bin_us) bins, starting at an Up phase
  int64_t t0_epoch_us = 0;     // an iteration start (the newest in the series)
  double confidence = 0;       // [0, 1], see step 5
  double up_fraction = 0;      // share of the period at the high level of a two-level fit
  double peak_gbps = 0;        // max of gbps
  double mean_gbps = 0;        // mean rate of the whole series (valid bins)
  double acf_peak = 0;         // autocorrelation at the coarse period
};

// InvalidArgument for bin_us 0, an empty series, negative or infinite
// values, or options out of range (naming the field). "No periodic pattern"
// is not an error: it is a value with periodic == false and a reason.
absl::StatusOr<ExtractedProfile> ExtractProfile(const BinnedSeries& series,
                                                const ExtractorOptions& options = {});

// Gap-aware normalised autocorrelation for lags 0..max_lag (NaN where a lag
// has fewer than 8 valid pairs). Exposed for tests and tools.
std::vector<double> Autocorrelation(const std::vector<double>& values, size_t max_lag);

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_PROFILE_EXTRACTOR_H_
