#include "daemon/closed_loop.h"

#include <algorithm>
#include <cstdlib>

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

bool Realigner::ShouldRealign(const std::string& job, int64_t error_us, int64_t now_us) {
  if (std::llabs(error_us) <= threshold_us_) return false;
  auto last = last_us_.find(job);
  if (last != last_us_.end() && now_us - last->second < min_interval_us_) return false;
  last_us_[job] = now_us;
  return true;
}

}  // namespace phasor::daemon
