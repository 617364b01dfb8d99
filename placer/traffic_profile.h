// Traffic profiles: a job's bandwidth demand on one link over one iteration
// (SPEC section 2), and their resampling to a common quantum (SPEC 3.1).
//
// All types here are plain values; functions are pure and thread-safe.
#ifndef PHASOR_PLACER_TRAFFIC_PROFILE_H_
#define PHASOR_PLACER_TRAFFIC_PROFILE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace phasor::placer {

// Valid ranges of the numbers a profile is made of (ValidateProfile checks
// them; every input format, JSON, protobuf or stored row, goes through it).
// Within them no arithmetic of the placer on periods, quanta and bins can
// overflow, and no sum of demands can reach infinity.
inline constexpr uint32_t kMaxPeriodUs = 3'600'000'000;  // one hour: period_us in 1..kMaxPeriodUs
inline constexpr double kMaxGbps = 1e6;  // one demand (a bin, up_gbps, down_gbps): 0..1 Pbit/s
inline constexpr int64_t kMaxEpochUs = int64_t{1} << 53;  // t0_epoch_us in 0..2^53 (year 2255)

// Square-wave shorthand: demand `up_gbps` on [start_us, start_us + up_us)
// modulo the period, `down_gbps` elsewhere.
struct SquareWave {
  uint32_t up_us = 0;
  double up_gbps = 0.0;
  uint32_t start_us = 0;
  double down_gbps = 0.0;
};

// A job's demand over one iteration of `period_us`. Exactly one form is set:
// the array form (`bin_us` and `gbps`, bin k covering [k*bin_us, (k+1)*bin_us)
// clipped to the period, so there are ceil(period_us / bin_us) bins), or the
// square form (`square`).
struct TrafficProfile {
  uint32_t period_us = 0;
  uint32_t bin_us = 0;
  std::vector<double> gbps;
  std::optional<SquareWave> square;
  // An absolute time at which an iteration started (phase reference from probes).
  std::optional<int64_t> t0_epoch_us;
};

// A piece of constant demand on [begin_us, end_us) within one period.
struct DemandSegment {
  double begin_us = 0;
  double end_us = 0;
  double gbps = 0;
};

// Checks the profile's invariants. Errors are InvalidArgument and name the
// offending field relative to the profile ("period_us", "gbps[3]", ...).
absl::Status ValidateProfile(const TrafficProfile& profile);

// The profile as ordered, non-overlapping segments covering [0, period_us).
// Requires a valid profile.
std::vector<DemandSegment> Segments(const TrafficProfile& profile);

// Mean demand over one period in Gbit/s.
double MeanGbps(const TrafficProfile& profile);

// The period rounded to the nearest multiple of `quantum_us` (halves round up),
// never less than one quantum (SPEC 3.1). When that multiple does not fit 32
// bits (a period near 2^32 us), the multiple below it (which does). A quantum
// of 0 counts as 1. Never 0, never wraps.
uint32_t QuantizedPeriodUs(uint32_t period_us, uint32_t quantum_us);

// A profile resampled to bins of one quantum over the quantized period.
struct QuantizedProfile {
  uint32_t quantum_us = 0;
  uint32_t period_us = 0;        // T', a multiple of quantum_us
  int64_t rounding_error_us = 0;  // T' - T: the drift per iteration enforcement absorbs
  std::vector<double> gbps;       // B = T' / quantum_us bins
};

// Resamples `profile` (scaled by `share`) to `quantum_us` bins. The period is
// stretched from T to T' and every bin receives exactly the bytes of the
// source interval that maps onto it, so the bytes per iteration are preserved
// (area-preserving average). Requires a valid profile, quantum_us > 0 and
// share >= 0.
QuantizedProfile Quantize(const TrafficProfile& profile, uint32_t quantum_us, double share = 1.0);

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_TRAFFIC_PROFILE_H_
