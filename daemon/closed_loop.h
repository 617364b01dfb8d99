// The closed loop (SPEC section 7, beyond Cassini): probes report each job's
// observed phase (t0_epoch_us); a job whose iterations start more than a
// threshold away from its slots gets its offset re-sent, at most once per
// interval. Also the score a link's measured profile earns against its
// capacity, with the placer's formula.
//
// Pure decisions, no I/O. Not thread-safe (one thread owns a Realigner).
#ifndef PHASOR_DAEMON_CLOSED_LOOP_H_
#define PHASOR_DAEMON_CLOSED_LOOP_H_

#include <cstdint>
#include <map>
#include <string>

#include "placer/traffic_profile.h"

namespace phasor::daemon {

// The signed phase error of an iteration start `t0_epoch_us` against slots
// origin + shift + n * period, in (-period/2, period/2]. period_us > 0.
int64_t PhaseErrorUs(int64_t origin_epoch_us, uint32_t period_us, uint32_t shift_us, int64_t t0_epoch_us);

// The score of a link carrying `profile` alone: 1 - mean excess / capacity
// (placer::ScoreFromExcess over the profile's exact segments), and the
// excess ratio 1 - score. capacity_gbps > 0.
struct MeasuredLinkScore {
  double score = 1;
  double excess = 0;
};
MeasuredLinkScore ScoreMeasuredLink(const placer::TrafficProfile& profile, double capacity_gbps);

class Realigner {
 public:
  Realigner(uint32_t threshold_us, uint32_t min_interval_ms)
      : threshold_us_(threshold_us), min_interval_us_(static_cast<int64_t>(min_interval_ms) * 1000) {}

  // True when the job's offset should be re-sent now: |error| above the
  // threshold and no re-send for this job within the interval (a true answer
  // starts a new interval).
  bool ShouldRealign(const std::string& job, int64_t error_us, int64_t now_us);
  // Forgets a job that left the placement.
  void Forget(const std::string& job) { last_us_.erase(job); }

 private:
  int64_t threshold_us_;
  int64_t min_interval_us_;
  std::map<std::string, int64_t> last_us_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_CLOSED_LOOP_H_
