// The closed loop (SPEC section 7, beyond Cassini): probes report each job's
// observed phase (t0_epoch_us); a job whose iterations start more than a
// threshold away from its slots gets its offset re-sent, at most once per
// interval. Also the score a link's measured profile earns against its
// capacity, with the placer's formula.
//
// The frame (docs/phasord.md "Frames"): an offset's slot origin + shift +
// n * period is the start of an iteration (compute first), and every profile
// phasord ranks is measured from an iteration start (a model profile's
// Down, compute_us, then Up). A probe cannot see where an iteration starts:
// its profile and t0_epoch_us begin at the start of the Up phase. phasord
// turns a probe's job profile into the iteration frame (IterationFrame) and
// compares the observed t0 with slot + the Up start of the profile the job
// was committed with (UpStartUs), so both compare like with like.
//
// Pure decisions, no I/O. Not thread-safe (one thread owns a Realigner).
#ifndef PHASOR_DAEMON_CLOSED_LOOP_H_
#define PHASOR_DAEMON_CLOSED_LOOP_H_

#include <cstdint>
#include <map>
#include <optional>
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

// Where a profile's Up phase starts and ends, in us from its bin 0 (end may
// be below start when the phase wraps around the period end). The Up phase is
// the longest run of bins above the midpoint of the profile's smallest and
// largest demand (the probe's rule, docs/probe.md; the first such run on a
// tie); a square wave's is [start_us, start_us + up_us). nullopt for a flat
// profile (no Up phase).
struct UpPhase {
  uint32_t start_us = 0;
  uint32_t end_us = 0;
};
std::optional<UpPhase> FindUpPhase(const placer::TrafficProfile& profile);

// The Up phase's start (0 for a flat profile): how long after its iteration's
// start a job committed with `profile` begins to communicate, i.e. the
// lead the closed loop adds to the slot before comparing with a probe's t0.
uint32_t UpStartUs(const placer::TrafficProfile& profile);

// A probe's job profile (Up phase first) in the iteration frame: rotated so
// that bin 0 is the end of its Up phase, where a free-running job's next
// iteration (its compute) starts; its Up phase then starts one compute time
// (the Down phase) after bin 0. Same period and bin width; bytes per
// iteration preserved (a bin the rotation splits, possible only when the
// period is not a multiple of the bin, gets the mean of what it covers).
// Assumes the job ran free while it was measured (alone, or `once`): a
// paced job's Down phase also holds its wait for the slot. A flat profile
// is returned as it is.
placer::TrafficProfile IterationFrame(const placer::TrafficProfile& probe_profile);

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
