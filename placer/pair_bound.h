// Lower bounds on a link's excess from its pairs of jobs: the exact solver's
// pruning (SPEC 3.5).
//
// For jobs i and j alone on the circle, the excess depends only on their
// relative shift modulo g = gcd(B_i, B_j): by the Chinese remainder theorem
// the bins of the unified circle meet every pair of pattern bins (a, b) with
// a - b = s_j - s_i (mod g) exactly N / lcm(B_i, B_j) times. One table per
// pair holds that excess for every relative shift.
//
// The excess function f(x) = max(0, x - C) is convex, so adding a job's demand
// raises f at least as much on a larger base: f(x_c + sum_j x_j) >= f(x_c) +
// sum_j [f(x_c + x_j) - f(x_c)] for non-negative demands. Summed over the
// circle, for any "centre" job c:
//   TotalExcess(s) >= sum_{j != c} Pair(c, j) - (k - 2) * Lone(c),
// the star bound. It costs O(k^2) table lookups instead of N bin evaluations,
// and is tight when no bin carries three jobs' bursts at once.
//
// A plain value built once per circle; const methods are thread-safe.
#ifndef PHASOR_PLACER_PAIR_BOUND_H_
#define PHASOR_PLACER_PAIR_BOUND_H_

#include <cstdint>
#include <vector>

#include "placer/link_score.h"

namespace phasor::placer {

class PairwiseBound {
 public:
  // The tables of every pair of jobs of `circle` at capacity `capacity_gbps`
  // (> 0). Costs BuildCost(circle) bin-pair evaluations.
  PairwiseBound(const UnifiedCircle& circle, double capacity_gbps);

  // The work of building the tables: sum over pairs of the product of their
  // non-zero bin counts (only bins where both jobs send can interact).
  static uint64_t BuildCost(const UnifiedCircle& circle);

  // The excess over the whole circle (N bins) of jobs i and j alone, at
  // shifts s_i and s_j (bins).
  double PairExcess(size_t i, size_t j, uint32_t s_i, uint32_t s_j) const;

  // Job j's excess over the circle when alone on the link.
  double LoneExcess(size_t j) const { return lone_[j]; }

  // The star bound at `shifts` (one per job), the largest over all centres;
  // never above TotalExcess(circle, capacity, shifts).
  double StarBound(const std::vector<uint32_t>& shifts) const;

  // StarBound for the shifts first, first + 1, ..., first + count - 1 of job
  // `moving` (its entry in `shifts` is ignored), into out[0..count): the pairs
  // of the other jobs are looked up once, the moving job's pairs walk their
  // tables. StarBound is the run of one.
  void StarBoundRun(const std::vector<uint32_t>& shifts, size_t moving, uint32_t first,
                    uint32_t count, double* out) const;

 private:
  struct Table {
    uint32_t g = 1;              // gcd(B_i, B_j)
    std::vector<double> excess;  // [ (s_j - s_i) mod g ]
  };
  const Table& TableOf(size_t i, size_t j) const { return tables_[i * jobs_ + j]; }

  size_t jobs_ = 0;
  std::vector<double> lone_;
  std::vector<Table> tables_;  // [i * jobs + j] for i < j
};

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_PAIR_BOUND_H_
