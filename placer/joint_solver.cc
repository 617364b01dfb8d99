#include "placer/joint_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "placer/scratch.h"

namespace phasor::placer {

size_t JointLink::PositionOf(size_t j) const {
  return static_cast<size_t>(std::find(jobs.begin(), jobs.end(), j) - jobs.begin());
}

uint32_t ShiftBins(const UnifiedCircle& circle, size_t pos, int64_t t_us) {
  const int64_t b = circle.JobBins(pos);
  const int64_t s = std::llround(static_cast<double>(t_us) / circle.quantum_us);
  return static_cast<uint32_t>(((s % b) + b) % b);
}

double JointLink::Cost(const std::vector<int64_t>& t) const {
  // The thread's scratch: a component's objective asks every link's cost,
  // thousands of them on a large fabric.
  thread_local std::vector<uint32_t> s;
  s.resize(jobs.size());
  for (size_t p = 0; p < jobs.size(); ++p) s[p] = Bins(p, t[jobs[p]]);
  // A rotation of the link's own optimum costs what the optimum does.
  const double excess = SameUpToRotation(*circle, s, solution->shifts)
                            ? solution->total_excess
                            : TotalExcess(*circle, capacity_gbps, s);
  return excess / (static_cast<double>(circle->bins) * capacity_gbps);
}

double JointObjective(const AffinityGraph::Component& component, const std::vector<JointLink>& links,
                      const std::vector<int64_t>& t) {
  double sum = 0;
  for (size_t l : component.links) sum += links[l].Cost(t);
  return sum;
}

namespace {

// t_j^l: job j's shift in us in link l's own optimum.
int64_t LinkShiftUs(const JointLink& link, size_t j) {
  return int64_t{link.solution->shifts[link.PositionOf(j)]} * link.circle->quantum_us;
}

// The middle of the longest circular run of consecutive `tries` (every shift
// of the job, in order) at which `optimal` holds; on a tie the run holding
// `best`. `best` when every shift is optimal or none is.
int64_t CentredShift(const std::vector<int64_t>& tries, int64_t best, const std::function<bool(int64_t)>& optimal) {
  const size_t n = tries.size();
  std::vector<char> ok(n);
  size_t first_bad = n;
  for (size_t i = 0; i < n; ++i) {
    ok[i] = optimal(tries[i]);
    if (!ok[i] && first_bad == n) first_bad = i;
  }
  if (first_bad == n) return best;
  size_t best_start = 0, best_len = 0;
  bool best_holds = false;
  for (size_t k = 1; k <= n;) {
    if (!ok[(first_bad + k) % n]) {
      ++k;
      continue;
    }
    size_t len = 0;
    bool holds = false;
    while (k + len <= n && ok[(first_bad + k + len) % n]) {
      holds |= tries[(first_bad + k + len) % n] == best;
      ++len;
    }
    if (len > best_len || (len == best_len && holds && !best_holds)) {
      best_start = (first_bad + k) % n;
      best_len = len;
      best_holds = holds;
    }
    k += len;
  }
  return best_len == 0 ? best : tries[(best_start + (best_len - 1) / 2) % n];
}

double Norm(const JointLink& link) {
  return static_cast<double>(link.circle->bins) * link.capacity_gbps;
}

}  // namespace

JointResult SolveJoint(const AffinityGraph& graph, const AffinityGraph::Component& component,
                       const std::vector<JointLink>& links, const std::vector<JointJob>& jobs,
                       const JointSolverOptions& options, std::vector<int64_t>& shifts,
                       const std::function<bool()>& out_of_time) {
  JointResult result;
  auto every_link_optimal = [&](const std::vector<int64_t>& t) {
    for (size_t l : component.links) {
      const JointLink& link = links[l];
      if (link.Cost(t) > link.solution->total_excess / Norm(link) + 1e-12) return false;
    }
    return true;
  };
  // Every job pinned (a loop of running jobs whose shifts phasord committed):
  // nothing to choose, every spanning tree ends at the pins.
  if (std::all_of(component.jobs.begin(), component.jobs.end(),
                  [&](size_t j) { return jobs[j].pinned_shift_us.has_value(); })) {
    for (size_t j : component.jobs) shifts[j] = *jobs[j].pinned_shift_us;
    result.optimal = every_link_optimal(shifts);
    return result;
  }
  size_t root = component.jobs.front();
  for (size_t j : component.jobs) {
    if (jobs[j].pinned_shift_us) {
      root = j;
      break;
    }
  }
  const int64_t root_shift = jobs[root].pinned_shift_us.value_or(0);
  auto link_shift = [&](size_t l, size_t j) { return LinkShiftUs(links[l], j); };
  auto period = [&](size_t l, size_t j) -> int64_t {
    return links[l].circle->jobs[links[l].PositionOf(j)].period_us;
  };
  auto pin = [&](std::vector<int64_t>& t) {
    for (size_t j : component.jobs) {
      if (jobs[j].pinned_shift_us) t[j] = *jobs[j].pinned_shift_us;
    }
  };

  std::vector<double> gain(links.size(), 0.0);
  for (size_t l : component.links) gain[l] = links[l].gain;
  std::vector<int64_t> best = shifts;
  double best_cost = std::numeric_limits<double>::infinity();
  // Trees that place the free jobs alike give the same objective: each
  // placement of the free jobs is scored once (with most jobs pinned, the
  // many trees of a loop give a handful of placements).
  std::vector<size_t> free_jobs;
  for (size_t j : component.jobs) {
    if (!jobs[j].pinned_shift_us) free_jobs.push_back(j);
  }
  absl::flat_hash_set<std::vector<int64_t>> tried;
  std::vector<int64_t> placed(free_jobs.size());
  // The first tree is best until a second one is scored, so its objective
  // is summed only then (a large component with one tree summed every link
  // for nothing). Objectives are finite (capacities > 0): the first tree
  // always beats the initial infinity, as it did when summed at once.
  bool first_cost_due = false;
  auto try_tree = [&](const std::vector<AffinityGraph::Edge>& tree) {
    std::vector<int64_t> t = shifts;
    WalkSpanningTree(tree, root, root_shift, link_shift, period, t);
    pin(t);
    for (size_t i = 0; i < free_jobs.size(); ++i) placed[i] = t[free_jobs[i]];
    if (!tried.insert(placed).second) return;
    if (tried.size() == 1) {
      best = std::move(t);
      first_cost_due = true;
      return;
    }
    if (first_cost_due) {
      best_cost = JointObjective(component, links, best);
      first_cost_due = false;
    }
    const double cost = JointObjective(component, links, t);
    if (cost < best_cost - 1e-15) {
      best_cost = cost;
      best = std::move(t);
    }
  };
  try_tree(graph.MaxWeightSpanningTree(component, gain));
  if (every_link_optimal(best)) {
    shifts = std::move(best);
    result.optimal = true;
    return result;
  }
  if (AffinityGraph::DropSetCount(component) <= uint64_t{8} * options.max_spanning_trees) {
    graph.ForEachSpanningTree(component, options.max_spanning_trees, try_tree);
  }
  shifts = std::move(best);

  // Coordinate descent over the free jobs, within an evaluation budget. A
  // link's evaluator (its patterns tiled around the circle, N + B_j values
  // per job) lives only while one of its jobs moves: a tangled component's
  // links would otherwise hold all their tiles at once.
  uint64_t spent = 0;
  std::vector<std::vector<size_t>> links_of_job(jobs.size());
  for (size_t l : component.links) {
    for (size_t j : links[l].jobs) links_of_job[j].push_back(l);
  }
  bool go_on = true;
  for (uint32_t sweep = 0; sweep < options.max_sweeps && go_on; ++sweep) {
    bool moved = false;
    for (size_t j : component.jobs) {
      if (jobs[j].pinned_shift_us) continue;
      if (spent > options.max_evaluations) {
        go_on = false;
        break;
      }
      if (out_of_time && out_of_time()) {
        result.stopped = true;
        go_on = false;
        break;
      }
      // Per link of j: its evaluator and the other jobs' load.
      std::vector<std::unique_ptr<CircleEvaluator>> evaluators;
      std::vector<ScratchBuffer> others;
      uint32_t step = std::numeric_limits<uint32_t>::max();
      uint64_t bins_per_try = 0;
      for (size_t l : links_of_job[j]) {
        const JointLink& link = links[l];
        evaluators.push_back(std::make_unique<CircleEvaluator>(*link.circle, link.capacity_gbps));
        // The others' load in link order, as AddJob would sum it (only j's
        // pattern is tiled, for its tries).
        std::vector<size_t> order;
        std::vector<uint32_t> at(link.jobs.size(), 0);
        for (size_t p = 0; p < link.jobs.size(); ++p) {
          if (link.jobs[p] == j) continue;
          order.push_back(p);
          at[p] = link.Bins(p, shifts[link.jobs[p]]);
        }
        ScratchBuffer load(link.circle->bins, ScratchBuffer::Uninitialized{});
        evaluators.back()->LoadOf(order, at, link.circle->bins, load.get());
        others.push_back(std::move(load));
        step = std::min(step, link.circle->quantum_us);
        bins_per_try = bins_per_try > std::numeric_limits<uint64_t>::max() - link.circle->bins
                           ? std::numeric_limits<uint64_t>::max()
                           : bins_per_try + link.circle->bins;
      }
      const int64_t job_period = QuantizedPeriodUs(jobs[j].period_us, step);
      auto cost_at = [&](int64_t t, double bound) {
        double sum = 0;
        for (size_t i = 0; i < links_of_job[j].size() && sum <= bound; ++i) {
          const JointLink& link = links[links_of_job[j][i]];
          const double n = Norm(link);
          const size_t pos = link.PositionOf(j);
          sum += evaluators[i]->ExcessWith(others[i].get(), pos, link.Bins(pos, t), (bound - sum) * n) / n;
        }
        return sum;
      };
      // Every shift when affordable (the product checked for overflow), else
      // those that line j up with a neighbour k as their shared link's own
      // optimum would.
      std::vector<int64_t> tries;
      uint64_t full_scan = 0;
      bool every_shift = false;
      if (!__builtin_mul_overflow(static_cast<uint64_t>(job_period / step), bins_per_try, &full_scan) &&
          full_scan <= options.full_scan_evaluations) {
        every_shift = true;
        for (int64_t t = 0; t < job_period; t += step) tries.push_back(t);
      } else {
        for (size_t l : links_of_job[j]) {
          for (size_t k : links[l].jobs) {
            if (k == j) continue;
            const int64_t t = shifts[k] - link_shift(l, k) + link_shift(l, j);
            tries.push_back(((t % job_period) + job_period) % job_period);
          }
        }
      }
      double current = cost_at(shifts[j], std::numeric_limits<double>::infinity());
      int64_t best_t = shifts[j];
      for (int64_t t : tries) {
        const double c = cost_at(t, current);
        if (c < current - 1e-12) {
          current = c;
          best_t = t;
        }
      }
      if (options.centre && every_shift) {
        best_t = CentredShift(tries, best_t, [&](int64_t t) { return cost_at(t, current + 1e-12) <= current + 1e-12; });
      }
      for (const auto& evaluator : evaluators) spent += evaluator->evaluations();
      if (best_t != shifts[j]) {
        shifts[j] = best_t;
        moved = true;
      }
    }
    if (!moved) break;
  }
  result.optimal = every_link_optimal(shifts);
  return result;
}

}  // namespace phasor::placer
