#include "daemon/closed_loop.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "placer/link_score.h"

namespace phasor::daemon {

int64_t PhaseErrorUs(int64_t origin_epoch_us, uint32_t period_us, uint32_t shift_us, int64_t t0_epoch_us) {
  const int64_t period = period_us;
  int64_t error = (t0_epoch_us - origin_epoch_us - static_cast<int64_t>(shift_us)) % period;
  if (error < 0) error += period;
  if (error > period / 2) error -= period;
  return error;
}

MeasuredLinkScore ScoreMeasuredLink(const placer::TrafficProfile& profile, double capacity_gbps) {
  // The exact segments are a circle of period_us one-microsecond bins.
  double excess = 0;
  for (const placer::DemandSegment& seg : placer::Segments(profile)) {
    excess += std::max(0.0, seg.gbps - capacity_gbps) * (seg.end_us - seg.begin_us);
  }
  const double score = placer::ScoreFromExcess(excess, profile.period_us, capacity_gbps);
  return {score, 1 - score};
}

std::optional<UpPhase> FindUpPhase(const placer::TrafficProfile& profile) {
  const uint32_t period = profile.period_us;
  if (period == 0) return std::nullopt;
  if (profile.square) {
    const placer::SquareWave& sq = *profile.square;
    if (sq.up_us == 0 || sq.up_us >= period || !(sq.up_gbps > sq.down_gbps)) return std::nullopt;
    const uint32_t start = sq.start_us % period;
    return UpPhase{start, static_cast<uint32_t>((uint64_t{start} + sq.up_us) % period)};
  }
  const std::vector<double>& g = profile.gbps;
  const size_t n = g.size();
  if (n == 0 || profile.bin_us == 0) return std::nullopt;
  const auto [mn, mx] = std::minmax_element(g.begin(), g.end());
  if (!(*mx > *mn)) return std::nullopt;
  const double mid = 0.5 * (*mn + *mx);
  size_t best_start = 0, best_len = 0;
  for (size_t s = 0; s < n; ++s) {
    if (!(g[s] > mid) || g[(s + n - 1) % n] > mid) continue;  // s must begin a run
    size_t len = 0;
    while (len < n && g[(s + len) % n] > mid) ++len;
    if (len > best_len) {
      best_len = len;
      best_start = s;
    }
  }
  if (best_len == 0 || best_len == n) return std::nullopt;
  const uint64_t bin = profile.bin_us;
  const size_t last = (best_start + best_len - 1) % n;
  const uint64_t end = std::min<uint64_t>((last + 1) * bin, period) % period;
  return UpPhase{static_cast<uint32_t>(best_start * bin), static_cast<uint32_t>(end)};
}

uint32_t UpStartUs(const placer::TrafficProfile& profile) {
  const std::optional<UpPhase> up = FindUpPhase(profile);
  return up ? up->start_us : 0;
}

placer::TrafficProfile IterationFrame(const placer::TrafficProfile& probe_profile) {
  const std::optional<UpPhase> up = FindUpPhase(probe_profile);
  if (!up || up->end_us == 0) return probe_profile;  // flat, or already ends at bin 0
  const double period = probe_profile.period_us;
  const double r = up->end_us;  // bin 0 of the result is time r of the probe's profile
  placer::TrafficProfile out = probe_profile;
  // The probe's t0 is an Up start; the iteration that follows starts r later.
  if (out.t0_epoch_us) *out.t0_epoch_us += up->end_us;
  if (out.square) {
    out.square->start_us = static_cast<uint32_t>(
        (uint64_t{out.square->start_us} + probe_profile.period_us - up->end_us) % probe_profile.period_us);
    return out;
  }
  const double bin = probe_profile.bin_us;
  const size_t n = probe_profile.gbps.size();
  std::vector<double> bytes(n, 0.0);  // Gbit/s x us per result bin
  auto add = [&](double begin, double end, double gbps) {
    // [begin, end) in the result's time, inside [0, period).
    for (size_t k = static_cast<size_t>(begin / bin); k < n && k * bin < end; ++k) {
      const double lo = std::max(begin, k * bin), hi = std::min(end, std::min((k + 1) * bin, period));
      if (hi > lo) bytes[k] += gbps * (hi - lo);
    }
  };
  for (const placer::DemandSegment& seg : placer::Segments(probe_profile)) {
    double begin = seg.begin_us - r;
    double end = seg.end_us - r;
    if (begin < 0) {
      begin += period;
      end += period;
    }
    if (end <= period) {
      add(begin, end, seg.gbps);
    } else {
      add(begin, period, seg.gbps);
      add(0, end - period, seg.gbps);
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const double width = std::min((k + 1) * bin, period) - k * bin;
    out.gbps[k] = width > 0 ? bytes[k] / width : 0;
  }
  return out;
}

bool Realigner::ShouldRealign(const std::string& job, int64_t error_us, int64_t now_us) {
  if (std::llabs(error_us) <= threshold_us_) return false;
  auto last = last_us_.find(job);
  if (last != last_us_.end() && now_us - last->second < min_interval_us_) return false;
  last_us_[job] = now_us;
  return true;
}

}  // namespace phasor::daemon
