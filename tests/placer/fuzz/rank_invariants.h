// What every fuzz target of the placer checks on a ranking: the answer of
// RankWithin is a Status or a ranking whose numbers are finite and whose
// shifts lie within their jobs' periods. abort() on a violation.
#ifndef PHASOR_TESTS_PLACER_FUZZ_RANK_INVARIANTS_H_
#define PHASOR_TESTS_PLACER_FUZZ_RANK_INVARIANTS_H_

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "placer/ranker.h"

namespace phasor::placer::fuzz {

// Validates (as ParseRankRequest does, and phasord after FromProto), keeps
// one input's work small (the budgets a request may ask for are legal but
// slow under ASan), then ranks within tight limits and checks the answer.
inline void RankAndCheck(RankRequest& request) {
  RankOptions& o = request.options;
  o.circle.max_bins = std::min<uint64_t>(o.circle.max_bins, 4096);
  o.solver.exact_max_evaluations = std::min<uint64_t>(o.solver.exact_max_evaluations, 200'000);
  o.solver.heuristic_max_evaluations = std::min<uint64_t>(o.solver.heuristic_max_evaluations, 200'000);
  o.solver.restarts = std::min<uint32_t>(o.solver.restarts, 2);
  o.joint.max_evaluations = std::min<uint64_t>(o.joint.max_evaluations, 200'000);
  o.joint.full_scan_evaluations = std::min<uint64_t>(o.joint.full_scan_evaluations, 50'000);
  o.joint.max_spanning_trees = std::min<uint32_t>(o.joint.max_spanning_trees, 16);
  if (absl::Status s = ValidateRankRequest(request); !s.ok()) {
    if (s.code() != absl::StatusCode::kInvalidArgument) std::abort();
    return;
  }
  RankLimits limits;
  limits.max_candidates = 64;
  limits.max_jobs_x_links = 4096;
  limits.deadline_ms = 2000;
  absl::StatusOr<Ranking> ranking = RankWithin(request, limits);
  if (!ranking.ok()) {
    const absl::StatusCode code = ranking.status().code();
    if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kResourceExhausted) {
      std::abort();
    }
    return;
  }
  std::map<std::string, uint32_t> period;
  for (const Job& job : request.jobs) period[job.id] = job.profile.period_us;
  if (ranking->ranked.size() + ranking->rejected.size() != request.candidates.size()) std::abort();
  for (const RankedCandidate& c : ranking->ranked) {
    if (!std::isfinite(c.score) || !std::isfinite(c.min_link_score) || c.score > 1 + 1e-9) std::abort();
    // A shift lives on its job's period rounded to a link's quantum (T',
    // which may exceed T), or on T when the job crosses no contended link.
    for (const auto& [job, shift] : c.shifts_us) {
      uint32_t bound = period.at(job);
      for (const LinkResult& l : c.links) {
        if (std::find(l.jobs.begin(), l.jobs.end(), job) != l.jobs.end()) {
          bound = std::max(bound, QuantizedPeriodUs(period.at(job), l.quantum_us));
        }
      }
      if (shift >= bound) std::abort();
    }
    for (const LinkResult& l : c.links) {
      if (!std::isfinite(l.score) || l.quantum_us == 0 || l.circle_bins == 0) std::abort();
      if (l.circle_bins > request.options.circle.max_bins) std::abort();
    }
  }
}

}  // namespace phasor::placer::fuzz

#endif  // PHASOR_TESTS_PLACER_FUZZ_RANK_INVARIANTS_H_
