// The shift solver of one link (SPEC 3.5): the shifts that maximise the link
// score, found by exhaustive search when the search space is small and by
// coordinate descent with restarts otherwise.
//
// Stateless and thread-safe: every call owns its scratch space.
#ifndef PHASOR_PLACER_SHIFT_SOLVER_H_
#define PHASOR_PLACER_SHIFT_SOLVER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "placer/link_score.h"

namespace phasor::placer {

struct ShiftSolverOptions {
  // The exhaustive search runs when its planned cost is at most this many bin
  // evaluations, and is abandoned (its best kept, `exact` false) when the
  // configurations its bound cannot rule out would cost more.
  uint64_t exact_max_evaluations = 10'000'000;
  // Exhaustive search order. True: best first, every configuration's pairwise
  // star bound (placer/pair_bound.h) computed up front and configurations
  // summed in increasing order of it, so most are never summed. False:
  // depth first over the jobs, each level's load summed (the plain search,
  // kept for comparison and for searches with too many configurations).
  bool pair_bounds = true;
  // Heuristic: random starting points tried after the greedy one.
  uint32_t restarts = 4;
  // Heuristic: a descent stops after this many sweeps over the jobs.
  uint32_t max_sweeps = 32;
  // Heuristic: no new sweep or restart starts once this many bin evaluations
  // are spent (bounds the time of one link solve).
  uint64_t heuristic_max_evaluations = 20'000'000;
  // Seed of the restarts' random starting points (results are deterministic).
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  // Centring (default true): among the shifts that keep the optimal score,
  // each free job in turn (search order, the others held) moves to the middle
  // of the longest run of consecutive shifts at which the link keeps that
  // score, so it has the most slack on both sides before drift makes its Up
  // phase meet another's. For two jobs this is the centre of the feasible
  // interval: the largest smallest gap between their Up phases. A job whose
  // every shift keeps the score stays where the search put it. Skipped for
  // the jobs beyond heuristic_max_evaluations bin evaluations of centring.
  bool centre = true;
};

struct LinkSolution {
  std::vector<uint32_t> shifts;  // per job, in bins of the circle's quantum, < B_j
  double total_excess = 0;        // sum_k Excess(k) at `shifts`
  double score = 0;               // SPEC 3.4 score at `shifts`
  // True only when `shifts` are proven optimal: the exhaustive search ran, or
  // the heuristic reached a lower bound no choice of shifts can beat.
  bool exact = false;
  uint64_t evaluations = 0;  // bin evaluations spent (the work done)
};

// Maximises the score of `circle` at `capacity_gbps` (> 0). `fixed[j]`, when
// set, is a shift (in bins, < B_j) job j must keep (a pinned job); `fixed` is
// empty or has one entry per job. Without fixed jobs, job 0 gets shift 0 (the
// score is invariant to a common rotation).
LinkSolution SolveLink(const UnifiedCircle& circle, double capacity_gbps,
                       const std::vector<std::optional<uint32_t>>& fixed,
                       const ShiftSolverOptions& options);

// Coordinate descent from `start` (bins, one per job) in which each free job
// only tries shifts within `window` bins of its current one; sweeps until no
// job moves (or the heuristic budget is spent). `exact` is true only when the
// result meets the lower bound.
LinkSolution RefineLink(const UnifiedCircle& circle, double capacity_gbps,
                        const std::vector<std::optional<uint32_t>>& fixed,
                        const std::vector<uint32_t>& start, uint32_t window,
                        const ShiftSolverOptions& options);

// A link solved from its demands.
struct SolvedLink {
  UnifiedCircle circle;
  LinkSolution solution;
};

// Solves a link from its jobs' demands, on the circle of `circle_options`:
// exactly when the search fits `options.exact_max_evaluations`; otherwise
// exactly on a coarser circle (the quantum doubled until the search fits),
// whose shifts are then refined on the fine circle by a descent within one
// coarse bin (multi-resolution). `fixed_us[j]`, when set, is a
// shift in microseconds job j must keep. Errors as BuildUnifiedCircle.
absl::StatusOr<SolvedLink> SolveLinkDemands(const std::vector<LinkDemand>& demands,
                                            double capacity_gbps,
                                            const std::vector<std::optional<uint32_t>>& fixed_us,
                                            const CircleOptions& circle_options,
                                            const ShiftSolverOptions& options);

// The exhaustive search's planned cost in bin evaluations: the best-first
// search's work before it sums a configuration, or the depth-first search's
// whole work, whichever is smaller (`options.pair_bounds` false: the latter).
uint64_t ExactSearchCost(const UnifiedCircle& circle,
                         const std::vector<std::optional<uint32_t>>& fixed,
                         const ShiftSolverOptions& options = {});

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_SHIFT_SOLVER_H_
