#include "placer/shift_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

#include "placer/pair_bound.h"

namespace phasor::placer {
namespace {

// Scores closer than this (in units of score) count as equal.
constexpr double kScoreTolerance = 1e-9;

// The best-first search keeps one entry (bound, configuration) per
// configuration: at most this many (32 MiB).
constexpr long double kMaxBestFirstConfigurations = 1 << 21;

// The best-first search's work per configuration (its bound and its queue
// entry) in bin evaluations, as measured against the summing kernels.
constexpr uint64_t kBestFirstConfigurationCost = 8;

// A fold of every shift (CircleEvaluator::ExcessForAllShiftsAgainst) takes
// about this many times what AllShiftsCost says next to ExcessAtCost
// (measured on the ranking benchmarks' folds and sums: 0.76 and 0.27 ns per
// unit of those estimates).
constexpr double kFoldTimeRatio = 3;

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
      if (!is_fixed(j)) free_.push_back(j);
    }
    // Longest patterns first: the shortest is searched last, where folding
    // (CircleEvaluator::ExcessForAllShifts) makes its whole range cheap.
    std::stable_sort(free_.begin(), free_.end(), [&](size_t a, size_t b) {
      return circle.JobBins(a) > circle.JobBins(b);
    });
    if (anchored_.empty() && !free_.empty()) {
      anchored_.push_back(free_.front());  // a common rotation is free: hold one job at 0
      free_.erase(free_.begin());
    }
    order_all_ = anchored_;
    order_all_.insert(order_all_.end(), free_.begin(), free_.end());
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

  // The number of configurations the exhaustive search distinguishes.
  long double Configurations() const {
    long double configurations = 1;
    for (uint64_t r : Ranges()) configurations *= static_cast<long double>(r);
    return configurations;
  }

  // The best-first search's work before its first configuration is summed:
  // the pair tables, then a star bound (k(k-1)/2 lookups) and a heap entry
  // per configuration. Infinite when the configurations do not fit memory.
  long double BestFirstCost() const {
    const long double configurations = Configurations();
    if (!options_.pair_bounds || free_.empty() ||
        configurations > kMaxBestFirstConfigurations) {
      return std::numeric_limits<long double>::infinity();
    }
    return static_cast<long double>(PairwiseBound::BuildCost(eval_.circle())) +
           configurations * kBestFirstConfigurationCost;
  }

  // The search's cost in bin evaluations as planned: the best-first search's
  // upfront work when it fits, else the depth-first search's (which cannot
  // prune before summing bins).
  uint64_t ExactCost() const {
    const long double cost = std::min(BestFirstCost(), static_cast<long double>(DepthFirstCost()));
    return cost > 1e19L ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(cost);
  }

  // The depth-first search's bin evaluations: N per configuration of the
  // levels above the last, then the last level by direct sums or folded.
  uint64_t DepthFirstCost() const {
    if (free_.empty()) return n_;
    const std::vector<uint64_t> ranges = Ranges();
    long double prefix = 1;
    for (size_t i = 0; i + 1 < ranges.size(); ++i) prefix *= ranges[i];
    const long double n = static_cast<long double>(n_);
    const long double cost = prefix * (n * (ranges.size() > 1 ? 1 : 0) + LastLevelCost(ranges.back()));
    return cost > 1e19L ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(cost);
  }

  // One visit of the last level: `range` direct sums of N bins, or one fold.
  long double LastLevelCost(uint64_t range) const {
    const long double n = static_cast<long double>(n_);
    const long double direct = n * static_cast<long double>(range);
    return FoldLast(range) ? FoldCost() : direct;
  }
  long double FoldCost() const { return eval_.FoldingCost(free_.back()); }
  bool FoldLast(uint64_t range) const {
    return eval_.FoldingPays(free_.back()) &&
           FoldCost() < static_cast<long double>(n_) * static_cast<long double>(range);
  }

  LinkSolution Refine(const std::vector<uint32_t>& start, uint32_t window) {
    for (size_t j : free_) shifts_[j] = start[j] % eval_.JobBins(j);
    window_ = window;
    Record(DescendFrom());
    return Finish(Proven());
  }

  LinkSolution Solve() {
    if (free_.empty()) {
      Record(eval_.Excess(FixedLoad()));
      return Finish(true);
    }
    const uint64_t budget = options_.exact_max_evaluations;
    ranges_ = Ranges();
    const long double best_first_cost = BestFirstCost();
    if (best_first_cost <= static_cast<long double>(budget)) {
      // A greedy incumbent first when it is cheap next to the search: it may
      // already meet the lower bound.
      if (static_cast<long double>(GreedyCost()) * 4 <= best_first_cost) {
        Greedy();
        Record(eval_.ExcessInOrder(order_all_, shifts_));
        if (Proven()) return Finish(true);
      }
      if (BestFirst(budget)) return Finish(true);
      // The bound left too many configurations to sum within the budget;
      // the depth-first search (when it fits) or the descent go on from the
      // best configuration found.
    }
    const uint64_t depth_first_cost = DepthFirstCost();
    if (depth_first_cost <= budget) {
      DepthFirst(depth_first_cost);
      return Finish(true);
    }
    if (!best_shifts_.empty()) {
      // The budget is spent: one descent from the best configuration found.
      shifts_ = best_shifts_;
      Record(DescendFrom());
      return Finish(Proven());
    }
    Descend();
    return Finish(Proven());
  }

 private:
  // Best-first branch and bound over whole configurations: every
  // configuration's star bound (PairwiseBound) first, then configurations
  // summed in increasing order of their bound until the next bound cannot
  // beat the best sum. True when that proved the optimum; false when the
  // sums would exceed `budget` bin evaluations (the best found is kept).
  bool BestFirst(uint64_t budget) {
    const PairwiseBound& pairs = Pairs();
    extra_evaluations_ += PairwiseBound::BuildCost(eval_.circle());
    const size_t levels = free_.size();
    const uint64_t last_range = ranges_.back();
    uint64_t configurations = 1;
    for (uint64_t r : ranges_) configurations *= r;
    // (bound, configuration index in mixed radix over ranges_, last level
    // fastest); the last level's run of bounds per configuration above it.
    std::vector<std::pair<double, uint32_t>> queue;
    queue.reserve(configurations);
    ScratchBuffer run_buffer(last_range, ScratchBuffer::Uninitialized{});
    double* run = run_buffer.get().data();
    std::vector<uint32_t> digit(levels, 0);
    for (size_t i = 0; i < levels; ++i) shifts_[free_[i]] = 0;
    size_t lowest = 0;
    for (uint64_t prefix = 0; prefix < configurations / last_range; ++prefix) {
      pairs.StarBoundRun(shifts_, free_.back(), 0, static_cast<uint32_t>(last_range), run);
      for (uint64_t s = 0; s < last_range; ++s) {
        if (queue.empty() || run[s] < queue[lowest].first) lowest = queue.size();
        queue.emplace_back(std::max(lower_bound_, run[s]),
                           static_cast<uint32_t>(prefix * last_range + s));
      }
      for (size_t i = levels - 1; i-- > 0;) {  // the next configuration above the last level
        if (++digit[i] < ranges_[i]) {
          shifts_[free_[i]] = digit[i];
          break;
        }
        digit[i] = 0;
        shifts_[free_[i]] = 0;
      }
    }
    extra_evaluations_ += configurations * kBestFirstConfigurationCost;
    // The lowest bound first: its sum rules out every configuration whose
    // bound is not below it, before the queue is built.
    SetConfiguration(queue[lowest].second);
    Record(eval_.ExcessAt(shifts_, best_excess_));
    if (Proven()) return true;
    const double cutoff = best_excess_ - tolerance_ * 1e-3;
    std::erase_if(queue, [cutoff](const std::pair<double, uint32_t>& e) { return e.first >= cutoff; });
    auto later = [](const std::pair<double, uint32_t>& a, const std::pair<double, uint32_t>& b) {
      return a.first > b.first || (a.first == b.first && a.second > b.second);
    };
    std::make_heap(queue.begin(), queue.end(), later);
    // A row (the configurations that differ in the last level only) with
    // many configurations left is summed at once by a fold of the last job
    // (RowFold) when that costs less than summing them one by one. Only once
    // the budget cannot end the search any more (every configuration left
    // summed whole would fit it), so that the search takes the same steps as
    // with sums alone and finds the same configuration: the fold decides,
    // and a new best is summed as ExcessAt sums it (the same value). The
    // entries a row would still sum at the current best are counted on its
    // bounds, sorted when the budget stops binding: those below the cutoff,
    // less those taken since (a row's entries leave the heap in bound order).
    const uint64_t rows = configurations / last_range;
    std::vector<uint32_t> row_begin, row_taken;
    std::vector<double> row_bounds;
    auto sort_rows = [&] {
      row_begin.assign(rows + 1, 0);
      row_taken.assign(rows, 0);
      for (const auto& e : queue) ++row_begin[e.second / last_range + 1];
      std::partial_sum(row_begin.begin(), row_begin.end(), row_begin.begin());
      row_bounds.resize(queue.size());
      std::vector<uint32_t> at(row_begin.begin(), row_begin.end() - 1);
      for (const auto& e : queue) row_bounds[at[e.second / last_range]++] = e.first;
      for (uint64_t r = 0; r < rows; ++r) std::sort(row_bounds.begin() + row_begin[r], row_bounds.begin() + row_begin[r + 1]);
    };
    row_slot_.assign(rows, -1);
    const double fold_cost = eval_.AllShiftsCost(free_.back()), sum_cost = eval_.ExcessAtCost();
    const uint64_t whole_sum = eval_.ExcessAtEvaluations();
    bool within_budget = false;  // no configuration left can pass the budget
    while (!queue.empty()) {
      std::pop_heap(queue.begin(), queue.end(), later);
      const auto [bound, index] = queue.back();
      queue.pop_back();
      if (bound >= best_excess_ - tolerance_ * 1e-3) return true;  // nothing left can beat it
      if (!within_budget) {
        if (Evaluations() > budget) return false;
        within_budget = static_cast<long double>(Evaluations()) +
                            static_cast<long double>(queue.size() + 1) * static_cast<long double>(whole_sum) <=
                        static_cast<long double>(budget);
        if (within_budget) {
          queue.push_back({bound, index});  // the entry taken, counted with its row
          sort_rows();
          queue.pop_back();
        }
      }
      SetConfiguration(index);
      const uint64_t row = index / last_range;
      if (within_budget && row_slot_[row] < 0) {
        const uint32_t taken = row_taken[row]++;
        const double* first = row_bounds.data() + row_begin[row];
        const double* below = std::lower_bound(first + taken, first + (row_begin[row + 1] - row_begin[row]),
                                               best_excess_ - tolerance_ * 1e-3);
        const auto left = below - first - taken;  // this one and the row's others still to sum
        if (static_cast<double>(left) * sum_cost > kFoldTimeRatio * fold_cost) {
          row_slot_[row] = static_cast<int32_t>(folded_rows_.size() / last_range);
          folded_rows_.resize(folded_rows_.size() + last_range);
          RowFold(folded_rows_.data() + row_slot_[row] * last_range);
        }
      }
      if (row_slot_[row] < 0) {
        Record(eval_.ExcessAt(shifts_, best_excess_));
      } else if (folded_rows_[row_slot_[row] * last_range + index % last_range] <
                 best_excess_ - tolerance_ * 1e-3) {
        Record(eval_.ExcessAt(shifts_, std::numeric_limits<double>::infinity()));
      }
      if (Proven()) return true;
    }
    return true;
  }

  // The best-first search's fold of job j at the row of shifts_, when j is
  // the last free job and that row was folded; else null. Its
  // ranges_.back() = gcd(OthersBins(j), B_j) values are every class of j's
  // shifts (shift t is class t mod that gcd).
  const double* FoldedRow(size_t j) const {
    if (row_slot_.empty() || j != free_.back()) return nullptr;
    uint64_t row = 0;
    for (size_t i = 0; i + 1 < free_.size(); ++i) {
      if (shifts_[free_[i]] >= ranges_[i]) return nullptr;
      row = row * ranges_[i] + shifts_[free_[i]];
    }
    const int32_t slot = row_slot_[row];
    return slot < 0 ? nullptr : folded_rows_.data() + slot * ranges_.back();
  }

  // Every job but j in the order a whole load is summed in (order_all_).
  std::vector<size_t> OthersInOrder(size_t j) const {
    std::vector<size_t> order;
    for (size_t i : order_all_) {
      if (i != j) order.push_back(i);
    }
    return order;
  }

  // shifts_ of the free jobs at configuration `index` (mixed radix over
  // ranges_, the last level fastest).
  void SetConfiguration(uint64_t index) {
    for (size_t i = free_.size(); i-- > 0;) {
      shifts_[free_[i]] = static_cast<uint32_t>(index % ranges_[i]);
      index /= ranges_[i];
    }
  }

  // The excess of the last free job at each of its first ranges_.back()
  // shifts, the others at shifts_, into out: one fold of its shifts against
  // one period of the others' load.
  void RowFold(double* out) {
    const size_t last = free_.back();
    ScratchBuffer all_buffer(eval_.JobBins(last), ScratchBuffer::Uninitialized{});
    eval_.ExcessForAllShiftsAgainst(OthersInOrder(last), shifts_, last, all_buffer.get());
    std::copy_n(all_buffer.get().begin(), ranges_.back(), out);
  }

  // Depth-first branch and bound over the levels (one free job each), each
  // level's load summed once per configuration above it; the last level by
  // direct sums or folded. `cost` is DepthFirstCost().
  void DepthFirst(uint64_t cost) {
    // A greedy incumbent first, when there is none yet and it is cheap next
    // to the search: it may already meet the lower bound, and it lets the
    // search abandon most configurations after their first bins.
    if (best_shifts_.empty() && GreedyCost() * 4 <= cost) {
      Greedy();
      Record(eval_.ExcessInOrder(order_all_, shifts_));
      if (Proven()) return;
    }
    fold_last_ = FoldLast(ranges_.back());
    // Where the plan sums the last job's shifts one by one, one fold of
    // them all (against one period of the others' load) may still take less
    // time: it decides, and the sums are kept for new bests.
    sums_folded_ = !fold_last_ && kFoldTimeRatio * eval_.AllShiftsCost(free_.back()) <
                                      static_cast<double>(ranges_.back()) * eval_.ExcessWithCost();
    // lone_after_[i]: the own excess of the free jobs from level i on.
    lone_after_.assign(free_.size() + 1, 0.0);
    for (size_t i = free_.size(); i-- > 0;) {
      lone_after_[i] = lone_after_[i + 1] + LoneExcess(free_[i]);
    }
    for (size_t i = 0; i < free_.size(); ++i) {
      levels_.emplace_back(n_, ScratchBuffer::Uninitialized{});
    }
    levels_[0].get() = FixedLoad();
    Exhaust(0);
  }

  // The greedy incumbent's cost: each free job's shifts against a load.
  uint64_t GreedyCost() const {
    uint64_t cost = 0;
    for (size_t j : free_) {
      cost += eval_.FoldingPays(j) ? static_cast<uint64_t>(eval_.FoldingCost(j))
                                   : uint64_t{eval_.JobBins(j)} * n_;
    }
    return cost;
  }

  // The load of the anchored jobs (pinned, or the one held at 0).
  const std::vector<double>& FixedLoad() {
    if (!fixed_load_) {
      fixed_load_.emplace(n_);
      for (size_t j : anchored_) eval_.AddJob(j, shifts_[j], fixed_load_->get());
    }
    return fixed_load_->get();
  }

  uint64_t Evaluations() const { return eval_.evaluations() + extra_evaluations_; }

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

  // Job j's excess over the circle when alone on the link.
  double LoneExcess(size_t j) const {
    const QuantizedProfile& job = eval_.circle().jobs[j];
    double lone = 0;
    for (double v : job.gbps) lone += std::max(0.0, v - eval_.capacity_gbps());
    return lone * static_cast<double>(n_) / static_cast<double>(job.gbps.size());
  }

  // Keeps the current configuration if it is strictly better than the best.
  void Record(double excess) {
    if (excess < best_excess_ - tolerance_ * 1e-3) {
      best_excess_ = excess;
      best_shifts_ = shifts_;
    }
  }

  void Exhaust(size_t level) {
    const size_t j = free_[level];
    const std::vector<double>& load = levels_[level].get();
    for (uint32_t s = 0; s < ranges_[level] && !Proven(); ++s) {
      shifts_[j] = s;
      if (level + 1 == free_.size()) {
        if (fold_last_) {
          // Every shift of the last job at once; shifts s and s + range are
          // the same configuration up to a common rotation.
          ScratchBuffer all_buffer(eval_.JobBins(j));
          std::vector<double>& all = all_buffer.get();
          eval_.ExcessForAllShiftsOfOthers(load, j, all);
          for (uint32_t t = 0; t < ranges_[level]; ++t) {
            shifts_[j] = t;
            Record(all[t]);
          }
          return;
        }
        if (!sums_folded_) {
          Record(eval_.ExcessWith(load, j, s, best_excess_));
          continue;
        }
        // The fold's value decides; a new best is summed as ExcessWith sums
        // it, so that the search records the same configurations and values.
        if (s == 0) {
          last_all_.resize(eval_.JobBins(j));
          eval_.ExcessForAllShiftsOfOthers(load, j, last_all_);
        }
        if (last_all_[s] < best_excess_ - tolerance_ * 1e-3) {
          Record(eval_.ExcessWith(load, j, s, std::numeric_limits<double>::infinity()));
        }
      } else {
        std::vector<double>& next = levels_[level + 1].get();
        const double placed = eval_.AddJobAndExcess(load, j, s, next);
        // Branch and bound: the jobs still to place can only add to the
        // excess of those placed, by at least their own excess each.
        if (placed + lone_after_[level + 1] >= best_excess_ - tolerance_ * 1e-3) {
          continue;
        }
        Exhaust(level + 1);
      }
    }
  }

  // The best shift of job j against the load of every other job; ties keep
  // `current`, then the lowest shift.
  uint32_t BestShift(size_t j, const std::vector<double>& others, uint32_t current,
                     double* excess) {
    if (window_ > 0 && 2 * window_ + 1 < eval_.JobBins(j)) {
      // Only shifts within the window around the current one.
      const uint32_t b = eval_.JobBins(j);
      double best = eval_.ExcessWith(others, j, current, std::numeric_limits<double>::infinity());
      uint32_t best_s = current;
      for (uint32_t d = 1; d <= window_; ++d) {
        for (uint32_t s : {(current + d) % b, (current + b - d) % b}) {
          const double e = eval_.ExcessWith(others, j, s, best);
          if (e < best - tolerance_ * 1e-3) {
            best = e;
            best_s = s;
          }
        }
      }
      *excess = best;
      return best_s;
    }
    if (eval_.FoldingPays(j)) {
      ScratchBuffer all_buffer(eval_.JobBins(j));
      std::vector<double>& all = all_buffer.get();
      eval_.ExcessForAllShiftsOfOthers(others, j, all);
      uint32_t best_s = current;
      for (uint32_t s = 0; s < all.size(); ++s) {
        if (all[s] < all[best_s] - tolerance_ * 1e-3) best_s = s;
      }
      *excess = all[best_s];
      return best_s;
    }
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
    ScratchBuffer others_buffer(n_, ScratchBuffer::Uninitialized{});
    std::vector<double>& others = others_buffer.get();
    double excess = eval_.ExcessInOrder(order_all_, shifts_);  // where the descent starts
    for (uint32_t sweep = 0; sweep < options_.max_sweeps && !OverBudget(); ++sweep) {
      bool moved = false;
      for (size_t j : free_) {
        others = FixedLoad();
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

  // Each free job in turn at its best shift against those placed before it.
  void Greedy() {
    ScratchBuffer placed_buffer(n_, ScratchBuffer::Uninitialized{});
    std::vector<double>& placed = placed_buffer.get();
    placed = FixedLoad();
    for (size_t j : free_) {
      double unused = 0;
      shifts_[j] = BestShift(j, placed, 0, &unused);
      eval_.AddJob(j, shifts_[j], placed);
    }
  }

  bool OverBudget() const { return Evaluations() > options_.heuristic_max_evaluations; }

  void Descend() {
    Greedy();
    Record(DescendFrom());
    std::mt19937_64 rng(options_.seed);
    for (uint32_t r = 0; r < options_.restarts && !Proven() && !OverBudget(); ++r) {
      for (size_t j : free_) {
        shifts_[j] = std::uniform_int_distribution<uint32_t>(0, eval_.JobBins(j) - 1)(rng);
      }
      Record(DescendFrom());
    }
  }

  // The pair tables, built on first use (the best-first search, centring).
  const PairwiseBound& Pairs() {
    if (!pairs_) pairs_.emplace(eval_.circle(), eval_.capacity_gbps());
    return *pairs_;
  }

  // Which shifts of free job j keep the excess within `limit` (the others at
  // shifts_), as the plan would decide it: `fold` (FoldingPays) sums every
  // shift folded (ExcessForAllShifts), else each shift directly, stopped past
  // the limit (ExcessWith). Deciding each shift that way costs the whole fold
  // or b direct sums; instead, from one period of the others' load (P bins,
  // g = gcd(P, B_j) classes: bin x of it meets pattern bin y of job j exactly
  // once on the circle when x = y + s mod g):
  //   - a shift at which every busy bin y of j meets only loads at or below
  //     C - d_y (each class's largest load M_c) adds no excess to the others'
  //     E_0: its sum is E_0's terms, the same at every such shift, and the
  //     optimum is at least E_0, so it is within the limit;
  //   - otherwise it adds at least max_y min(d_y, M_c + d_y - C); a shift for
  //     which E_0 plus that, or its star bound (PairwiseBound: never above its
  //     excess), is more than `band` above the limit is not within it;
  //   - the rest are summed (ExcessAt, or all folded at once when that costs
  //     less), and one more than `band` from the limit is decided by that sum;
  //   - one within `band` of the limit, where two ways of rounding the same
  //     sum could disagree, is summed as planned.
  // True ties with the optimum sit a whole tolerance_ x 1e-3 below the limit,
  // outside the band; a sum's rounding is far below the band.
  void WithinLimit(size_t j, bool fold, double limit, double band, std::vector<char>& within) {
    const uint32_t b = eval_.JobBins(j);
    const std::vector<double>& d = eval_.circle().jobs[j].gbps;
    const double cap = eval_.capacity_gbps();
    const std::vector<size_t> order = OthersInOrder(j);
    const uint64_t period = eval_.OthersBins(j);
    // The excess depends on j's shift modulo g only (its pattern meets the
    // same loads): shifts s0 < g are decided, then s0 + g, s0 + 2g, ... alike
    // (each of those alone where the planned sums could round differently).
    const uint32_t g = static_cast<uint32_t>(std::gcd(period, uint64_t{b}));
    ScratchBuffer load_buffer(period, ScratchBuffer::Uninitialized{});
    std::vector<double>& load = load_buffer.get();
    eval_.OthersLoad(order, shifts_, j, load);
    std::vector<double> top(g, -std::numeric_limits<double>::infinity());  // M_c
    double own = 0;  // E_0, over one period
    for (uint64_t x = 0, c = 0; x < period; ++x) {
      top[c] = std::max(top[c], load[x]);
      own += std::max(0.0, load[x] - cap);
      if (++c == g) c = 0;
    }
    own *= static_cast<double>(n_ / period);
    // Per class offset of j's busy bins, their largest demand (what a bin
    // adds, min(d_y, M_c + d_y - C) when positive, never falls as d_y rises,
    // so the largest of a class offset decides it); per class, its largest
    // load less C.
    std::vector<double> largest(g, 0.0);
    for (uint32_t y = 0, yc = 0; y < b; ++y) {
      largest[yc] = std::max(largest[yc], d[y]);
      if (++yc == g) yc = 0;
    }
    std::vector<std::pair<uint32_t, double>> busy;
    for (uint32_t yc = 0; yc < g; ++yc) {
      if (largest[yc] != 0.0) busy.emplace_back(yc, largest[yc]);
    }
    for (double& t : top) t -= cap;
    const double room = limit + band - own;  // what j may add and stay a candidate
    // 1: within, 0: not, 2: within for some of s0 + k g (decided one by one).
    std::vector<char> of_class(g, 0);
    std::vector<uint32_t> candidates;
    for (uint32_t s = 0; s < g; ++s) {
      double added = 0;  // at least what j adds at s
      for (const auto& [yc, dy] : busy) {
        const uint32_t c = yc + s >= g ? yc + s - g : yc + s;
        const double over = top[c] + dy;
        if (over > 0) {
          added = std::max(added, std::min(dy, over));
          if (added > room) break;
        }
      }
      if (added == 0) {
        of_class[s] = 1;
      } else if (added <= room) {
        candidates.push_back(s);
      }
    }
    // The current shift is the configuration found (and centred so far):
    // within the limit, as its sum decided.
    const uint32_t current_class = shifts_[j] % g;
    if (std::erase(candidates, current_class) > 0) of_class[current_class] = 1;
    if (candidates.size() > 1 &&
        (pairs_ || static_cast<double>(PairwiseBound::BuildCost(eval_.circle())) < eval_.AllShiftsCost(j))) {
      ScratchBuffer bound_buffer(g, ScratchBuffer::Uninitialized{});
      double* bound = bound_buffer.get().data();
      Pairs().StarBoundRun(shifts_, j, 0, g, bound);
      std::erase_if(candidates, [&](uint32_t s) { return bound[s] > limit + band; });
    }
    std::vector<double> all;  // every shift folded, when computed
    auto fold_all = [&] {
      if (!all.empty()) return;
      all.resize(b);
      if (const double* row = FoldedRow(j)) {
        // The same fold of the same load, made by the best-first search.
        for (uint32_t t = 0; t < b; ++t) all[t] = row[t % g];
        return;
      }
      eval_.ExcessForAllShiftsPeriodic(load.data(), period, j, all);
    };
    std::vector<double> sum(g, 0.0);
    if (!candidates.empty()) {
      // Summing the candidates one by one, or all shifts in one fold.
      if (static_cast<double>(candidates.size()) * eval_.ExcessAtCost() > eval_.AllShiftsCost(j)) {
        fold_all();
        for (uint32_t s : candidates) sum[s] = all[s];
      } else {
        const uint32_t current = shifts_[j];
        for (uint32_t s : candidates) {
          shifts_[j] = s;
          sum[s] = eval_.ExcessAt(shifts_, limit + 2 * band);
        }
        shifts_[j] = current;
      }
    }
    std::optional<ScratchBuffer> others;  // the others' load on the whole circle, for direct sums
    within.assign(b, 0);
    for (uint32_t s : candidates) {
      if (std::abs(sum[s] - limit) > band) {
        of_class[s] = sum[s] <= limit;
        continue;
      }
      of_class[s] = 2;
      if (fold) {
        fold_all();
        for (uint32_t t = s; t < b; t += g) within[t] = all[t] <= limit;
        continue;
      }
      if (!others) {
        others.emplace(n_, ScratchBuffer::Uninitialized{});
        others->get() = FixedLoad();
        for (size_t i : free_) {
          if (i != j) eval_.AddJob(i, shifts_[i], others->get());
        }
      }
      for (uint32_t t = s; t < b; t += g) within[t] = eval_.ExcessWith(others->get(), j, t, limit) <= limit;
    }
    for (uint32_t t = 0; t < b; ++t) {
      if (of_class[t % g] != 2) within[t] = of_class[t % g];
    }
  }

  // ShiftSolverOptions::centre on the best configuration found.
  void Centre() {
    if (!options_.centre || best_shifts_.empty() || free_.empty()) return;
    shifts_ = best_shifts_;
    const double limit = best_excess_ + tolerance_ * 1e-3;  // still the optimal score
    uint64_t spent = 0;
    bool moved = false;
    std::vector<char> within;  // per shift: its excess is within `limit`
    const double band = tolerance_ * 0.5e-3;
    for (size_t j : free_) {
      const uint32_t b = eval_.JobBins(j);
      // The budget as planned: a fold or b direct sums (FoldingPays).
      const bool fold = eval_.FoldingPays(j);
      const uint64_t cost = fold ? static_cast<uint64_t>(eval_.FoldingCost(j)) : uint64_t{b} * n_;
      if (spent + cost > options_.heuristic_max_evaluations) break;
      spent += cost;
      WithinLimit(j, fold, limit, band, within);
      // The longest circular run of shifts within `limit`; on a tie the run
      // holding the current shift, else the first.
      uint32_t first_bad = b;
      for (uint32_t s = 0; s < b; ++s) {
        if (!within[s]) {
          first_bad = s;
          break;
        }
      }
      if (first_bad == b) continue;  // every shift keeps the score
      uint32_t best_start = 0, best_len = 0;
      bool best_holds_current = false;
      for (uint32_t k = 1; k <= b;) {  // scan from just after a bad shift, once around
        const uint32_t s = (first_bad + k) % b;
        if (!within[s]) {
          ++k;
          continue;
        }
        uint32_t len = 0;
        bool holds_current = false;
        while (k + len <= b && within[(first_bad + k + len) % b]) {
          holds_current |= (first_bad + k + len) % b == shifts_[j];
          ++len;
        }
        if (len > best_len || (len == best_len && holds_current && !best_holds_current)) {
          best_start = s;
          best_len = len;
          best_holds_current = holds_current;
        }
        k += len;
      }
      if (best_len == 0) continue;
      const uint32_t centre = (best_start + (best_len - 1) / 2) % b;
      moved |= centre != shifts_[j];
      shifts_[j] = centre;
    }
    if (!moved) return;
    const double excess = eval_.ExcessInOrder(order_all_, shifts_);
    if (excess <= limit) {
      best_excess_ = excess;
      best_shifts_ = shifts_;
    }
  }

  LinkSolution Finish(bool exact) {
    Centre();
    LinkSolution out;
    out.shifts = best_shifts_;
    out.total_excess = best_excess_;
    out.score = ScoreFromExcess(best_excess_, n_, eval_.capacity_gbps());
    out.exact = exact;
    out.evaluations = Evaluations();
    return out;
  }

  CircleEvaluator eval_;
  const uint64_t n_;
  const ShiftSolverOptions& options_;
  std::vector<size_t> anchored_;  // jobs whose shift is given (pinned, or the anchor)
  std::vector<size_t> free_;      // jobs the search places
  std::vector<size_t> order_all_;  // anchored_ then free_: the order a whole load is summed in
  std::vector<uint32_t> shifts_;  // the configuration under examination
  std::optional<ScratchBuffer> fixed_load_;  // the anchored jobs' load, built on first use
  std::optional<PairwiseBound> pairs_;       // Pairs()
  std::vector<uint64_t> ranges_;
  std::vector<ScratchBuffer> levels_;
  double lower_bound_ = 0;
  double tolerance_ = 0;
  bool fold_last_ = false;
  bool sums_folded_ = false;      // DepthFirst: the last level's sums decided by a fold
  std::vector<double> last_all_;  // that fold, per visit of the last level
  std::vector<double> lone_after_;
  uint32_t window_ = 0;  // descent: 0 tries every shift, else only those this close
  uint64_t extra_evaluations_ = 0;  // work outside eval_: pair tables, bounds
  // The best-first search's row folds (RowFold): per row, its place in
  // folded_rows_ (ranges_.back() values each), or -1.
  std::vector<int32_t> row_slot_;
  std::vector<double> folded_rows_;
  double best_excess_ = std::numeric_limits<double>::infinity();
  std::vector<uint32_t> best_shifts_;
};

}  // namespace

LinkSolution SolveLink(const UnifiedCircle& circle, double capacity_gbps,
                       const std::vector<std::optional<uint32_t>>& fixed,
                       const ShiftSolverOptions& options) {
  return Search(circle, capacity_gbps, fixed, options).Solve();
}

LinkSolution RefineLink(const UnifiedCircle& circle, double capacity_gbps,
                        const std::vector<std::optional<uint32_t>>& fixed,
                        const std::vector<uint32_t>& start, uint32_t window,
                        const ShiftSolverOptions& options) {
  return Search(circle, capacity_gbps, fixed, options).Refine(start, window);
}

absl::StatusOr<SolvedLink> SolveLinkDemands(const std::vector<LinkDemand>& demands,
                                            double capacity_gbps,
                                            const std::vector<std::optional<uint32_t>>& fixed_us,
                                            const CircleOptions& circle_options,
                                            const ShiftSolverOptions& options) {
  auto to_bins = [&](const UnifiedCircle& c) {
    std::vector<std::optional<uint32_t>> fixed(c.jobs.size());
    for (size_t j = 0; j < fixed_us.size() && j < c.jobs.size(); ++j) {
      if (fixed_us[j]) {
        // In 64 bits: a shift and half a quantum may pass 2^32; the result is < B_j.
        fixed[j] = static_cast<uint32_t>((uint64_t{*fixed_us[j]} + c.quantum_us / 2) /
                                         c.quantum_us % c.JobBins(j));
      }
    }
    return fixed;
  };
  absl::StatusOr<UnifiedCircle> fine = BuildUnifiedCircle(demands, circle_options);
  if (!fine.ok()) return fine.status();
  SolvedLink out;
  out.circle = *std::move(fine);
  const std::vector<std::optional<uint32_t>> fixed = to_bins(out.circle);
  std::optional<LinkSolution> fine_solution;
  if (ExactSearchCost(out.circle, fixed, options) <= options.exact_max_evaluations) {
    fine_solution = SolveLink(out.circle, capacity_gbps, fixed, options);
    if (fine_solution->exact) {
      out.solution = *std::move(fine_solution);
      return out;
    }
    // The search's bound could not finish within the budget: the coarser
    // circles may still do better than the best it found.
  }
  auto better = [&](LinkSolution refined) {
    if (fine_solution && fine_solution->total_excess <= refined.total_excess) {
      fine_solution->evaluations += refined.evaluations;
      return *std::move(fine_solution);
    }
    if (fine_solution) refined.evaluations += fine_solution->evaluations;
    return refined;
  };
  // Coarser circles until the exhaustive search fits, then refine.
  CircleOptions coarse_options = circle_options;
  for (int doubling = 0; doubling < 16; ++doubling) {
    // The quantum doubles in 32 bits: stop before it would wrap.
    if (__builtin_mul_overflow(coarse_options.quantum_us, 2u, &coarse_options.quantum_us)) break;
    absl::StatusOr<UnifiedCircle> coarse = BuildUnifiedCircle(demands, coarse_options);
    if (!coarse.ok()) break;
    const std::vector<std::optional<uint32_t>> coarse_fixed = to_bins(*coarse);
    if (ExactSearchCost(*coarse, coarse_fixed, options) > options.exact_max_evaluations) continue;
    const LinkSolution rough = SolveLink(*coarse, capacity_gbps, coarse_fixed, options);
    std::vector<uint32_t> start(out.circle.jobs.size());
    for (size_t j = 0; j < start.size(); ++j) {
      const uint64_t t = uint64_t{rough.shifts[j]} * coarse->quantum_us;
      start[j] = static_cast<uint32_t>((t + out.circle.quantum_us / 2) / out.circle.quantum_us %
                                       out.circle.JobBins(j));
      if (fixed[j]) start[j] = *fixed[j];
    }
    const uint32_t window = coarse->quantum_us / out.circle.quantum_us;
    out.solution = better(RefineLink(out.circle, capacity_gbps, fixed, start, window, options));
    return out;
  }
  out.solution = fine_solution ? *std::move(fine_solution)
                               : SolveLink(out.circle, capacity_gbps, fixed, options);
  return out;
}

uint64_t ExactSearchCost(const UnifiedCircle& circle,
                         const std::vector<std::optional<uint32_t>>& fixed,
                         const ShiftSolverOptions& options) {
  return Search(circle, 1.0, fixed, options).ExactCost();
}

}  // namespace phasor::placer
