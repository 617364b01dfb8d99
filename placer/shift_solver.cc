#include "placer/shift_solver.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

namespace phasor::placer {
namespace {

// Scores closer than this (in units of score) count as equal.
constexpr double kScoreTolerance = 1e-9;

class Search {
 public:
  Search(const UnifiedCircle& circle, double capacity,
         const std::vector<std::optional<uint32_t>>& fixed, const ShiftSolverOptions& options)
      : eval_(circle, capacity), n_(circle.bins), options_(options) {
    const size_t jobs = circle.jobs.size();
    shifts_.assign(jobs, 0);
    auto is_fixed = [&](size_t j) { return !fixed.empty() && fixed[j].has_value(); };
    for (size_t j = 0; j < jobs; ++j) {
      if (is_fixed(j)) {
        shifts_[j] = *fixed[j] % circle.JobBins(j);
        anchored_.push_back(j);
      }
    }
    for (size_t j = 0; j < jobs; ++j) {
      if (is_fixed(j)) continue;
      if (anchored_.empty()) {
        anchored_.push_back(j);  // a common rotation is free: hold the first job at 0
      } else {
        free_.push_back(j);
      }
    }
    fixed_load_.assign(n_, 0.0);
    for (size_t j : anchored_) eval_.AddJob(j, shifts_[j], fixed_load_);
    lower_bound_ = LowerBound();
    tolerance_ = kScoreTolerance * static_cast<double>(n_) * capacity;
  }

  // Free job i ranges over gcd(L, B_i) shifts, L the lcm of the periods placed
  // before it: a common rotation by a multiple of L moves job i by exactly the
  // multiples of gcd(L, B_i) and leaves the earlier jobs where they are.
  std::vector<uint64_t> Ranges() const {
    uint64_t l = 1;
    for (size_t j : anchored_) l = std::lcm(l, uint64_t{eval_.JobBins(j)});
    std::vector<uint64_t> ranges;
    for (size_t j : free_) {
      ranges.push_back(std::gcd(l, uint64_t{eval_.JobBins(j)}));
      l = std::lcm(l, uint64_t{eval_.JobBins(j)});
    }
    return ranges;
  }

  uint64_t ExactCost() const {
    long double cost = static_cast<long double>(n_);
    for (uint64_t r : Ranges()) cost *= r;
    return cost > 1e19L ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(cost);
  }

  LinkSolution Solve() {
    if (free_.empty()) {
      Record(eval_.Excess(fixed_load_));
      return Finish(true);
    }
    if (ExactCost() <= options_.exact_max_evaluations) {
      ranges_ = Ranges();
      levels_.assign(free_.size(), std::vector<double>());
      levels_[0] = fixed_load_;
      Exhaust(0);
      return Finish(true);
    }
    Descend();
    return Finish(Proven());
  }

 private:
  // No choice of shifts has less excess than each job's own excess, nor than
  // the area above N * C.
  double LowerBound() const {
    const double cap = eval_.capacity_gbps();
    double lone = 0, area = 0;
    for (const QuantizedProfile& job : eval_.circle().jobs) {
      double lone_j = 0, area_j = 0;
      for (double v : job.gbps) {
        lone_j += std::max(0.0, v - cap);
        area_j += v;
      }
      const double repeats = static_cast<double>(n_) / job.gbps.size();
      lone += lone_j * repeats;
      area += area_j * repeats;
    }
    return std::max({0.0, lone, area - static_cast<double>(n_) * cap});
  }

  bool Proven() const { return best_excess_ <= lower_bound_ + tolerance_; }

  // Keeps the current configuration if it is strictly better than the best.
  void Record(double excess) {
    if (excess < best_excess_ - tolerance_ * 1e-3) {
      best_excess_ = excess;
      best_shifts_ = shifts_;
    }
  }

  void Exhaust(size_t level) {
    const size_t j = free_[level];
    const std::vector<double>& load = levels_[level];
    for (uint32_t s = 0; s < ranges_[level] && !Proven(); ++s) {
      shifts_[j] = s;
      if (level + 1 == free_.size()) {
        Record(eval_.ExcessWith(load, j, s, best_excess_));
      } else {
        std::vector<double>& next = levels_[level + 1];
        next = load;
        eval_.AddJob(j, s, next);
        Exhaust(level + 1);
      }
    }
  }

  // The best shift of job j against the load of every other job; ties keep
  // `current`, then the lowest shift.
  uint32_t BestShift(size_t j, const std::vector<double>& others, uint32_t current,
                     double* excess) {
    double best = eval_.ExcessWith(others, j, current, std::numeric_limits<double>::infinity());
    uint32_t best_s = current;
    for (uint32_t s = 0; s < eval_.JobBins(j); ++s) {
      if (s == current) continue;
      const double e = eval_.ExcessWith(others, j, s, best);
      if (e < best - tolerance_ * 1e-3) {
        best = e;
        best_s = s;
      }
    }
    *excess = best;
    return best_s;
  }

  // Coordinate descent from `shifts_`; returns the excess reached.
  double DescendFrom() {
    std::vector<double> others(n_);
    double excess = std::numeric_limits<double>::infinity();
    for (uint32_t sweep = 0; sweep < options_.max_sweeps; ++sweep) {
      bool moved = false;
      for (size_t j : free_) {
        others = fixed_load_;
        for (size_t i : free_) {
          if (i != j) eval_.AddJob(i, shifts_[i], others);
        }
        const uint32_t s = BestShift(j, others, shifts_[j], &excess);
        moved |= (s != shifts_[j]);
        shifts_[j] = s;
        if (excess <= lower_bound_ + tolerance_) return excess;
      }
      if (!moved) break;
    }
    return excess;
  }

  void Descend() {
    // Greedy start: each free job in turn at its best shift against those placed.
    std::vector<double> placed = fixed_load_;
    for (size_t j : free_) {
      double unused = 0;
      shifts_[j] = BestShift(j, placed, 0, &unused);
      eval_.AddJob(j, shifts_[j], placed);
    }
    Record(DescendFrom());
    std::mt19937_64 rng(options_.seed);
    for (uint32_t r = 0; r < options_.restarts && !Proven(); ++r) {
      for (size_t j : free_) {
        shifts_[j] = std::uniform_int_distribution<uint32_t>(0, eval_.JobBins(j) - 1)(rng);
      }
      Record(DescendFrom());
    }
  }

  LinkSolution Finish(bool exact) {
    LinkSolution out;
    out.shifts = best_shifts_;
    out.total_excess = best_excess_;
    out.score = ScoreFromExcess(best_excess_, n_, eval_.capacity_gbps());
    out.exact = exact;
    out.evaluations = eval_.evaluations();
    return out;
  }

  CircleEvaluator eval_;
  const uint64_t n_;
  const ShiftSolverOptions& options_;
  std::vector<size_t> anchored_;  // jobs whose shift is given (pinned, or the anchor)
  std::vector<size_t> free_;      // jobs the search places
  std::vector<uint32_t> shifts_;  // the configuration under examination
  std::vector<double> fixed_load_;
  std::vector<uint64_t> ranges_;
  std::vector<std::vector<double>> levels_;
  double lower_bound_ = 0;
  double tolerance_ = 0;
  double best_excess_ = std::numeric_limits<double>::infinity();
  std::vector<uint32_t> best_shifts_;
};

}  // namespace

LinkSolution SolveLink(const UnifiedCircle& circle, double capacity_gbps,
                       const std::vector<std::optional<uint32_t>>& fixed,
                       const ShiftSolverOptions& options) {
  return Search(circle, capacity_gbps, fixed, options).Solve();
}

uint64_t ExactSearchCost(const UnifiedCircle& circle,
                         const std::vector<std::optional<uint32_t>>& fixed) {
  const ShiftSolverOptions options;
  return Search(circle, 1.0, fixed, options).ExactCost();
}

}  // namespace phasor::placer
