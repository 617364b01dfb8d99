#include "placer/ranker.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "placer/affinity_graph.h"

namespace phasor::placer {
namespace {

// Random draws averaged for a link's baseline score (how a link fares
// without phasor; a link's gain is its optimum minus that): each draw takes
// one bin of every job's pattern, as independent uniformly random phases put
// them together in a bin.
constexpr int kBaselineDraws = 4096;

// One contended link solved alone. Shared between the candidates of a request
// that put the same jobs, with the same shares, on a link of the same capacity.
struct LinkSolve {
  UnifiedCircle circle;
  LinkSolution solution;
  double capacity_gbps = 0;
  uint64_t seed = 0;

  // The expected score at independent uniformly random phases (how the link
  // fares without phasor), estimated from kBaselineDraws random bins (the
  // circle's expected excess is N times a random bin's), computed on first
  // use: only loops need it.
  double BaselineScore() const {
    if (!baseline_score_) {
      std::mt19937_64 rng(seed);
      double excess = 0;
      for (int draw = 0; draw < kBaselineDraws; ++draw) {
        double load = 0;
        for (const QuantizedProfile& job : circle.jobs) {
          load += job.gbps[std::uniform_int_distribution<size_t>(0, job.gbps.size() - 1)(rng)];
        }
        excess += std::max(0.0, load - capacity_gbps);
      }
      baseline_score_ = 1.0 - excess / kBaselineDraws / capacity_gbps;
    }
    return *baseline_score_;
  }

 private:
  mutable std::optional<double> baseline_score_;
};

// A contended link as one candidate sees it.
struct ContendedLink {
  size_t link = 0;                 // index into request.links
  std::vector<size_t> jobs;        // local job indices, in request order
  std::vector<double> shares;
  std::shared_ptr<const LinkSolve> solve;

  // The position of local job j on this link.
  size_t PositionOf(size_t j) const {
    return static_cast<size_t>(std::find(jobs.begin(), jobs.end(), j) - jobs.begin());
  }
  uint32_t quantum() const { return solve->circle.quantum_us; }
  // t (us) -> bins of job at `pos` on this link's circle.
  uint32_t Bins(size_t pos, int64_t t_us) const {
    const int64_t b = solve->circle.JobBins(pos);
    const int64_t s = std::llround(static_cast<double>(t_us) / quantum());
    return static_cast<uint32_t>(((s % b) + b) % b);
  }
};

class Ranker {
 public:
  explicit Ranker(const RankRequest& request) : request_(request) {
    for (size_t j = 0; j < request.jobs.size(); ++j) job_index_.emplace(request.jobs[j].id, j);
    for (size_t l = 0; l < request.links.size(); ++l) link_index_.emplace(request.links[l].id, l);
  }

  absl::StatusOr<RankedCandidate> Evaluate(const Candidate& candidate);

 private:
  std::shared_ptr<const LinkSolve> SolveAlone(const Link& link,
                                              const std::vector<const Job*>& jobs,
                                              const std::vector<double>& shares);
  bool SolveConstrained(const AffinityGraph& graph, const AffinityGraph::Component& component,
                        std::vector<ContendedLink>& links, const std::vector<const Job*>& jobs,
                        std::vector<int64_t>& shifts);

  const RankRequest& request_;
  std::unordered_map<std::string, size_t> job_index_;
  std::unordered_map<std::string, size_t> link_index_;
  std::unordered_map<std::string, std::shared_ptr<const LinkSolve>> cache_;
};

std::shared_ptr<const LinkSolve> Ranker::SolveAlone(const Link& link,
                                                    const std::vector<const Job*>& jobs,
                                                    const std::vector<double>& shares) {
  // Pinned jobs constrain a link alone only when two or more share it; one
  // pinned job is the walk's root instead (section 4).
  size_t pinned = 0;
  for (const Job* job : jobs) pinned += job->pinned_shift_us.has_value();
  const bool use_pins = pinned >= 2;

  std::string key = absl::StrCat(std::bit_cast<uint64_t>(link.capacity_gbps));
  for (size_t i = 0; i < jobs.size(); ++i) {
    absl::StrAppend(&key, "|", jobs[i]->id, ":", std::bit_cast<uint64_t>(shares[i]));
    if (use_pins && jobs[i]->pinned_shift_us) absl::StrAppend(&key, "@", *jobs[i]->pinned_shift_us);
  }
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;

  std::vector<LinkDemand> demands;
  std::vector<std::optional<uint32_t>> fixed_us(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    demands.push_back({&jobs[i]->profile, shares[i]});
    if (use_pins) fixed_us[i] = jobs[i]->pinned_shift_us;
  }
  // Validated options and profiles always give a circle (N = 1 fits at the
  // longest period), so this cannot fail here.
  SolvedLink solved = *SolveLinkDemands(demands, link.capacity_gbps, fixed_us,
                                        request_.options.circle, request_.options.solver);
  auto solve = std::make_shared<LinkSolve>();
  solve->circle = std::move(solved.circle);
  solve->solution = std::move(solved.solution);
  solve->capacity_gbps = link.capacity_gbps;
  solve->seed = request_.options.solver.seed;
  cache_.emplace(std::move(key), solve);
  return solve;
}

// Loops and multiple pinned jobs: assign along the maximum-weight spanning
// tree (weight = how much a link stands to gain); when every link then sits at
// its own optimum the loop is harmless and the result is optimal. Otherwise
// also try the other spanning trees (when few), then improve the free jobs'
// shifts on the true objective (the sum of the component's link scores, every
// job's shift applied on all its links) by coordinate descent. Returns true
// when every link ends at its own optimum.
bool Ranker::SolveConstrained(const AffinityGraph& graph,
                              const AffinityGraph::Component& component,
                              std::vector<ContendedLink>& links,
                              const std::vector<const Job*>& jobs, std::vector<int64_t>& shifts) {
  const RankOptions& options = request_.options;
  size_t root = component.jobs.front();
  for (size_t j : component.jobs) {
    if (jobs[j]->pinned_shift_us) {
      root = j;
      break;
    }
  }
  const int64_t root_shift = jobs[root]->pinned_shift_us.value_or(0);
  auto link_shift = [&](size_t l, size_t j) -> int64_t {
    const ContendedLink& cl = links[l];
    return int64_t{cl.solve->solution.shifts[cl.PositionOf(j)]} * cl.quantum();
  };
  auto period = [&](size_t l, size_t j) -> int64_t {
    const ContendedLink& cl = links[l];
    return cl.solve->circle.jobs[cl.PositionOf(j)].period_us;
  };
  auto norm = [&](const ContendedLink& cl) {
    return static_cast<double>(cl.solve->circle.bins) * request_.links[cl.link].capacity_gbps;
  };
  // A link's normalised excess under shifts t (the objective sums them; lower is better).
  auto link_cost = [&](size_t l, const std::vector<int64_t>& t) {
    ContendedLink& cl = links[l];
    std::vector<uint32_t> s(cl.jobs.size());
    for (size_t p = 0; p < cl.jobs.size(); ++p) s[p] = cl.Bins(p, t[cl.jobs[p]]);
    // A rotation of the link's own optimum costs what the optimum does.
    const double excess =
        SameUpToRotation(cl.solve->circle, s, cl.solve->solution.shifts)
            ? cl.solve->solution.total_excess
            : TotalExcess(cl.solve->circle, request_.links[cl.link].capacity_gbps, s);
    return excess / norm(cl);
  };
  auto objective = [&](const std::vector<int64_t>& t) {
    double sum = 0;
    for (size_t l : component.links) sum += link_cost(l, t);
    return sum;
  };
  auto every_link_optimal = [&](const std::vector<int64_t>& t) {
    for (size_t l : component.links) {
      const ContendedLink& cl = links[l];
      if (link_cost(l, t) > cl.solve->solution.total_excess / norm(cl) + 1e-12) return false;
    }
    return true;
  };
  auto pin = [&](std::vector<int64_t>& t) {
    for (size_t j : component.jobs) {
      if (jobs[j]->pinned_shift_us) t[j] = *jobs[j]->pinned_shift_us;
    }
  };

  std::vector<double> gain(links.size(), 0.0);
  for (size_t l : component.links) {
    gain[l] = links[l].solve->solution.score - links[l].solve->BaselineScore();
  }
  std::vector<int64_t> best = shifts;
  double best_cost = std::numeric_limits<double>::infinity();
  auto try_tree = [&](const std::vector<AffinityGraph::Edge>& tree) {
    std::vector<int64_t> t = shifts;
    WalkSpanningTree(tree, root, root_shift, link_shift, period, t);
    pin(t);
    const double cost = objective(t);
    if (cost < best_cost - 1e-15) {
      best_cost = cost;
      best = std::move(t);
    }
  };
  try_tree(graph.MaxWeightSpanningTree(component, gain));
  if (every_link_optimal(best)) {
    shifts = std::move(best);
    return true;
  }
  if (AffinityGraph::DropSetCount(component) <= uint64_t{8} * options.max_spanning_trees) {
    graph.ForEachSpanningTree(component, options.max_spanning_trees, try_tree);
  }
  shifts = std::move(best);

  // Joint coordinate descent over the free jobs, within an evaluation budget.
  // A link's evaluator (its patterns tiled around the circle, N + B_j values
  // per job) lives only while one of its jobs moves: a tangled component's
  // links would otherwise hold all their tiles at once.
  uint64_t spent = 0;
  std::vector<std::vector<size_t>> links_of_job(jobs.size());
  for (size_t l : component.links) {
    for (size_t j : links[l].jobs) links_of_job[j].push_back(l);
  }
  bool budget_left = true;
  for (uint32_t sweep = 0; sweep < options.joint_max_sweeps && budget_left; ++sweep) {
    bool moved = false;
    for (size_t j : component.jobs) {
      if (jobs[j]->pinned_shift_us) continue;
      if (spent > options.joint_max_evaluations) {
        budget_left = false;
        break;
      }
      // Per link of j: its evaluator and the other jobs' load.
      std::vector<std::unique_ptr<CircleEvaluator>> evaluators;
      std::vector<ScratchBuffer> others;
      uint32_t step = std::numeric_limits<uint32_t>::max();
      uint64_t bins_per_try = 0;
      for (size_t l : links_of_job[j]) {
        ContendedLink& cl = links[l];
        evaluators.push_back(std::make_unique<CircleEvaluator>(cl.solve->circle,
                                                               request_.links[cl.link].capacity_gbps));
        ScratchBuffer load(cl.solve->circle.bins);
        for (size_t p = 0; p < cl.jobs.size(); ++p) {
          if (cl.jobs[p] != j) evaluators.back()->AddJob(p, cl.Bins(p, shifts[cl.jobs[p]]), load.get());
        }
        others.push_back(std::move(load));
        step = std::min(step, cl.quantum());
        bins_per_try += cl.solve->circle.bins;
      }
      const int64_t job_period = QuantizedPeriodUs(jobs[j]->profile.period_us, step);
      auto cost_at = [&](int64_t t, double bound) {
        double sum = 0;
        for (size_t i = 0; i < links_of_job[j].size() && sum <= bound; ++i) {
          ContendedLink& cl = links[links_of_job[j][i]];
          const double n = norm(cl);
          const size_t pos = cl.PositionOf(j);
          sum += evaluators[i]->ExcessWith(others[i].get(), pos, cl.Bins(pos, t), (bound - sum) * n) / n;
        }
        return sum;
      };
      // Every shift when affordable, else those that line j up with a
      // neighbour k as their shared link's own optimum would.
      std::vector<int64_t> tries;
      if (static_cast<uint64_t>(job_period / step) * bins_per_try <=
          options.joint_full_scan_evaluations) {
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
      for (const auto& evaluator : evaluators) spent += evaluator->evaluations();
      if (best_t != shifts[j]) {
        shifts[j] = best_t;
        moved = true;
      }
    }
    if (!moved) break;
  }
  return every_link_optimal(shifts);
}

absl::StatusOr<RankedCandidate> Ranker::Evaluate(const Candidate& candidate) {
  if (candidate.links.empty() && !candidate.servers.empty()) {
    return absl::FailedPreconditionError(
        "candidate gives servers, but no topology was given to route them (--topology)");
  }
  // The candidate's jobs in request order; unknown names reject the candidate.
  std::vector<size_t> job_ids;
  for (const auto& [job, job_links] : candidate.links) {
    auto it = job_index_.find(job);
    if (it == job_index_.end()) return absl::NotFoundError(absl::StrCat("job '", job, "' is not defined"));
    for (const auto& [link, share] : job_links) {
      if (!link_index_.contains(link)) {
        return absl::NotFoundError(absl::StrCat("link '", link, "' (job '", job, "') is not defined"));
      }
    }
    job_ids.push_back(it->second);
  }
  std::sort(job_ids.begin(), job_ids.end());
  std::vector<const Job*> jobs;
  for (size_t id : job_ids) jobs.push_back(&request_.jobs[id]);

  // Each link's jobs with non-zero demand, in request order.
  std::vector<std::vector<std::pair<size_t, double>>> on_link(request_.links.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (MeanGbps(jobs[j]->profile) <= 0) continue;
    for (const auto& [link, share] : candidate.links.at(jobs[j]->id)) {
      if (share > 0) on_link[link_index_.at(link)].emplace_back(j, share);
    }
  }
  std::vector<ContendedLink> contended;
  std::vector<std::vector<size_t>> link_jobs;
  for (size_t l = 0; l < on_link.size(); ++l) {
    if (on_link[l].size() < 2) continue;
    ContendedLink cl;
    cl.link = l;
    std::vector<const Job*> link_job_ptrs;
    for (const auto& [j, share] : on_link[l]) {
      cl.jobs.push_back(j);
      cl.shares.push_back(share);
      link_job_ptrs.push_back(jobs[j]);
    }
    cl.solve = SolveAlone(request_.links[l], link_job_ptrs, cl.shares);
    link_jobs.push_back(cl.jobs);
    contended.push_back(std::move(cl));
  }

  RankedCandidate out;
  out.candidate = candidate.id;
  out.exact = true;
  std::vector<int64_t> shifts(jobs.size(), 0);
  for (size_t j = 0; j < jobs.size(); ++j) shifts[j] = jobs[j]->pinned_shift_us.value_or(0);

  const AffinityGraph graph(jobs.size(), link_jobs);
  for (const AffinityGraph::Component& component : graph.components()) {
    size_t pinned = 0;
    for (size_t j : component.jobs) pinned += jobs[j]->pinned_shift_us.has_value();
    if (!component.has_cycle() && pinned <= 1) {
      size_t root = component.jobs.front();
      for (size_t j : component.jobs) {
        if (jobs[j]->pinned_shift_us) root = j;
      }
      WalkSpanningTree(
          component.edges, root, shifts[root],
          [&](size_t l, size_t j) {
            const ContendedLink& cl = contended[l];
            return int64_t{cl.solve->solution.shifts[cl.PositionOf(j)]} * cl.quantum();
          },
          [&](size_t l, size_t j) -> int64_t {
            const ContendedLink& cl = contended[l];
            return cl.solve->circle.jobs[cl.PositionOf(j)].period_us;
          },
          shifts);
    } else {
      out.cycle |= component.has_cycle();
      // Proven only when every link of the component reached its own optimum.
      out.exact &= SolveConstrained(graph, component, contended, jobs, shifts);
    }
  }

  double sum = 0;
  out.min_link_score = 1.0;
  for (const ContendedLink& cl : contended) {
    const Link& link = request_.links[cl.link];
    LinkResult r;
    r.id = link.id;
    r.capacity_gbps = link.capacity_gbps;
    r.quantum_us = cl.quantum();
    r.circle_bins = cl.solve->circle.bins;
    r.exact = cl.solve->solution.exact;
    r.optimal_score = cl.solve->solution.score;
    std::vector<uint32_t> s(cl.jobs.size());
    for (size_t p = 0; p < cl.jobs.size(); ++p) {
      s[p] = cl.Bins(p, shifts[cl.jobs[p]]);
      r.jobs.push_back(jobs[cl.jobs[p]]->id);
      r.rounding_error_us[jobs[cl.jobs[p]]->id] = cl.solve->circle.jobs[p].rounding_error_us;
    }
    // A rotation of the link's own optimum (always so on tree components)
    // scores the same: no need to sum the circle again.
    r.score = SameUpToRotation(cl.solve->circle, s, cl.solve->solution.shifts)
                  ? cl.solve->solution.score
                  : LinkScore(cl.solve->circle, link.capacity_gbps, s);
    out.exact &= r.exact;
    sum += r.score;
    out.min_link_score = std::min(out.min_link_score, r.score);
    out.links.push_back(std::move(r));
  }
  out.score = contended.empty() ? 1.0 : sum / static_cast<double>(contended.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    out.shifts_us.emplace_back(jobs[j]->id, static_cast<uint32_t>(shifts[j]));
  }
  return out;
}

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

}  // namespace

absl::Status ValidateRankRequest(const RankRequest& request) {
  std::set<std::string> seen;
  for (size_t l = 0; l < request.links.size(); ++l) {
    const Link& link = request.links[l];
    const std::string field = absl::StrCat("links[", l, "]");
    if (link.id.empty()) return Invalid(field + ".id", "must be a non-empty string");
    if (!seen.insert(link.id).second) return Invalid(field + ".id", absl::StrCat("duplicate id '", link.id, "'"));
    if (!std::isfinite(link.capacity_gbps) || link.capacity_gbps <= 0) {
      return Invalid(field + ".capacity_gbps", absl::StrCat("must be > 0, got ", link.capacity_gbps));
    }
  }
  seen.clear();
  for (size_t j = 0; j < request.jobs.size(); ++j) {
    const Job& job = request.jobs[j];
    const std::string field = absl::StrCat("jobs[", j, "]");
    if (job.id.empty()) return Invalid(field + ".id", "must be a non-empty string");
    if (!seen.insert(job.id).second) return Invalid(field + ".id", absl::StrCat("duplicate id '", job.id, "'"));
    if (absl::Status s = ValidateProfile(job.profile); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".profile.", s.message()));
    }
    if (job.pinned_shift_us && *job.pinned_shift_us >= job.profile.period_us) {
      return Invalid(field + ".pinned_shift_us",
                     absl::StrCat("must be below the period (", job.profile.period_us, " us)"));
    }
  }
  seen.clear();
  for (size_t c = 0; c < request.candidates.size(); ++c) {
    const Candidate& candidate = request.candidates[c];
    const std::string field = absl::StrCat("candidates[", c, "]");
    if (candidate.id.empty()) return Invalid(field + ".id", "must be a non-empty string");
    if (!seen.insert(candidate.id).second) {
      return Invalid(field + ".id", absl::StrCat("duplicate id '", candidate.id, "'"));
    }
    for (const auto& [job, job_links] : candidate.links) {
      for (const auto& [link, share] : job_links) {
        if (!std::isfinite(share) || share < 0 || share > 1) {
          return Invalid(absl::StrCat(field, ".links.", job, ".", link),
                         absl::StrCat("share must be in 0..1, got ", share));
        }
      }
    }
  }
  if (request.options.circle.quantum_us == 0) return Invalid("options.quantum_us", "must be > 0");
  if (request.options.circle.max_bins == 0) return Invalid("options.max_bins", "must be > 0");
  return absl::OkStatus();
}

Ranking Rank(const RankRequest& request) {
  Ranker ranker(request);
  Ranking out;
  for (const Candidate& candidate : request.candidates) {
    absl::StatusOr<RankedCandidate> r = ranker.Evaluate(candidate);
    if (r.ok()) {
      out.ranked.push_back(*std::move(r));
    } else {
      out.rejected.push_back({candidate.id, std::string(r.status().message())});
    }
  }
  // Scores equal to 1e-9 tie; ties keep the host scheduler's order.
  auto key = [](const RankedCandidate& c) { return std::llround(c.score * 1e9); };
  std::stable_sort(out.ranked.begin(), out.ranked.end(),
                   [&](const RankedCandidate& a, const RankedCandidate& b) { return key(a) > key(b); });
  return out;
}

}  // namespace phasor::placer
