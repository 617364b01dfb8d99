#include "placer/traffic_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace phasor::placer {

absl::Status ValidateProfile(const TrafficProfile& p) {
  if (p.period_us == 0) {
    return absl::InvalidArgumentError("period_us: must be a positive number of microseconds");
  }
  if (p.period_us > kMaxPeriodUs) {
    return absl::InvalidArgumentError(
        absl::StrCat("period_us: ", p.period_us, " is outside 1..", kMaxPeriodUs));
  }
  if (p.t0_epoch_us && (*p.t0_epoch_us < 0 || *p.t0_epoch_us > kMaxEpochUs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("t0_epoch_us: ", *p.t0_epoch_us, " is outside 0..", kMaxEpochUs));
  }
  auto demand_ok = [](double g) { return std::isfinite(g) && g >= 0 && g <= kMaxGbps; };
  if (p.square.has_value()) {
    if (!p.gbps.empty()) {
      return absl::InvalidArgumentError("gbps: give either gbps or square, not both");
    }
    const SquareWave& s = *p.square;
    if (s.up_us > p.period_us) {
      return absl::InvalidArgumentError(
          absl::StrCat("square.up_us: ", s.up_us, " exceeds period_us ", p.period_us));
    }
    if (s.start_us >= p.period_us) {
      return absl::InvalidArgumentError(
          absl::StrCat("square.start_us: ", s.start_us, " must be below period_us ", p.period_us));
    }
    if (!std::isfinite(s.up_gbps) || s.up_gbps < 0) {
      return absl::InvalidArgumentError("square.up_gbps: must be a finite number >= 0");
    }
    if (!demand_ok(s.up_gbps)) {
      return absl::InvalidArgumentError(
          absl::StrCat("square.up_gbps: ", s.up_gbps, " is outside 0..", kMaxGbps));
    }
    if (!std::isfinite(s.down_gbps) || s.down_gbps < 0) {
      return absl::InvalidArgumentError("square.down_gbps: must be a finite number >= 0");
    }
    if (!demand_ok(s.down_gbps)) {
      return absl::InvalidArgumentError(
          absl::StrCat("square.down_gbps: ", s.down_gbps, " is outside 0..", kMaxGbps));
    }
    return absl::OkStatus();
  }
  if (p.bin_us == 0) {
    return absl::InvalidArgumentError("bin_us: must be a positive number of microseconds");
  }
  if (p.gbps.empty()) {
    return absl::InvalidArgumentError("gbps: the profile is empty (give gbps or square)");
  }
  const uint64_t expected = (uint64_t{p.period_us} + p.bin_us - 1) / p.bin_us;
  if (p.gbps.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("gbps: has ", p.gbps.size(), " bins, but period_us ", p.period_us,
                     " / bin_us ", p.bin_us, " needs ", expected));
  }
  for (size_t i = 0; i < p.gbps.size(); ++i) {
    if (!std::isfinite(p.gbps[i]) || p.gbps[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("gbps[", i, "]: must be a finite number >= 0, got ", p.gbps[i]));
    }
    if (!demand_ok(p.gbps[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("gbps[", i, "]: ", p.gbps[i], " is outside 0..", kMaxGbps));
    }
  }
  return absl::OkStatus();
}

namespace {

// Calls visit(segment) for the profile's constant-demand segments in time
// order (what Segments returns, without building the vector).
template <typename Visit>
void ForEachSegment(const TrafficProfile& p, Visit visit) {
  const double period = p.period_us;
  if (p.square.has_value()) {
    const SquareWave& s = *p.square;
    const double begin = s.start_us;
    const double end = begin + s.up_us;
    if (end <= period) {
      if (begin > 0) visit(DemandSegment{0, begin, s.down_gbps});
      if (end > begin) visit(DemandSegment{begin, end, s.up_gbps});
      if (end < period) visit(DemandSegment{end, period, s.down_gbps});
    } else {  // the Up phase wraps around the end of the period
      visit(DemandSegment{0, end - period, s.up_gbps});
      visit(DemandSegment{end - period, begin, s.down_gbps});
      visit(DemandSegment{begin, period, s.up_gbps});
    }
    return;
  }
  for (size_t k = 0; k < p.gbps.size(); ++k) {
    const double begin = static_cast<double>(k) * p.bin_us;
    visit(DemandSegment{begin, std::min(period, begin + p.bin_us), p.gbps[k]});
  }
}

}  // namespace

std::vector<DemandSegment> Segments(const TrafficProfile& p) {
  std::vector<DemandSegment> out;
  out.reserve(p.square.has_value() ? 3 : p.gbps.size());
  ForEachSegment(p, [&](const DemandSegment& s) { out.push_back(s); });
  return out;
}

double MeanGbps(const TrafficProfile& p) {
  double area = 0;
  ForEachSegment(p, [&](const DemandSegment& s) { area += (s.end_us - s.begin_us) * s.gbps; });
  return area / p.period_us;
}

uint32_t QuantizedPeriodUs(uint32_t period_us, uint32_t quantum_us) {
  const uint64_t q = std::max<uint32_t>(quantum_us, 1);
  // In 64 bits n * q <= period_us + q / 2 < 2^33: no overflow; it may not fit
  // 32 bits, and then the multiple below (at most period_us, or one quantum) does.
  uint64_t n = std::max<uint64_t>(1, (uint64_t{period_us} + q / 2) / q);
  if (n * q > std::numeric_limits<uint32_t>::max()) n = std::max<uint64_t>(1, period_us / q);
  return static_cast<uint32_t>(n * q);
}

QuantizedProfile Quantize(const TrafficProfile& profile, uint32_t quantum_us, double share) {
  QuantizedProfile q;
  q.quantum_us = quantum_us;
  q.period_us = QuantizedPeriodUs(profile.period_us, quantum_us);
  q.rounding_error_us = int64_t{q.period_us} - int64_t{profile.period_us};
  const size_t bins = q.period_us / quantum_us;
  q.gbps.assign(bins, 0.0);

  // Target bin k covers source time [k * step, (k + 1) * step) with
  // step = quantum * T / T'; it receives the bytes found there, spread over one
  // quantum. Segments and target bins are both ordered: one merge pass.
  const double step = static_cast<double>(quantum_us) * profile.period_us / q.period_us;
  size_t k = 0;
  ForEachSegment(profile, [&](const DemandSegment& seg) {
    double t = seg.begin_us;
    while (t < seg.end_us && k < bins) {
      const double bin_end = (k + 1 == bins) ? profile.period_us : (k + 1) * step;
      const double end = std::min(seg.end_us, bin_end);
      q.gbps[k] += (end - t) * seg.gbps;
      t = end;
      if (end >= bin_end) ++k;
    }
  });
  for (double& v : q.gbps) v = v * share / quantum_us;
  return q;
}

}  // namespace phasor::placer
