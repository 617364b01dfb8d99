#include "placer/ranker.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <type_traits>
#include <utility>
#include <unordered_map>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "placer/affinity_graph.h"
#include "topology/lru_cache.h"

namespace phasor::placer {
namespace {

// A link's baseline score is how it fares without phasor (its gain is its
// optimum minus that): the expected score at independent uniformly random
// phases. It is computed exactly (ExpectedExcessAtRandomPhases) within
// kBaselineExactSteps steps of its walk, about what the estimate below costs
// (on bench/rank_digest's small requests, 2^16-2^18 steps ranked in the same
// time); past them (links of several jobs with many distinct levels each)
// it is estimated from kBaselineDraws random draws, each one bin of every
// job's pattern, as independent uniformly random phases put them together.
constexpr uint64_t kBaselineExactSteps = uint64_t{1} << 17;
constexpr int kBaselineDraws = 4096;

// One contended link solved alone. Shared between the candidates of a request
// that put jobs of the same profiles, with the same shares, on a link of the
// same capacity, and between the requests of the process (SolveMemo): it
// is never changed once solved but for its baseline, computed once.
struct LinkSolve {
  UnifiedCircle circle;
  LinkSolution solution;
  double capacity_gbps = 0;
  uint64_t seed = 0;

  // The expected score at independent uniformly random phases (how the link
  // fares without phasor; the circle's expected excess is N times a random
  // bin's), exact or estimated (kBaselineExactSteps), computed on first use:
  // only loops need it. Safe to call from concurrent rankings.
  double BaselineScore() const {
    std::call_once(baseline_once_, [this] {
      if (std::optional<double> exact = ExpectedExcessAtRandomPhases(circle, capacity_gbps, kBaselineExactSteps)) {
        baseline_score_ = 1.0 - *exact / capacity_gbps;
        return;
      }
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
    });
    return baseline_score_;
  }

  // What it holds, for SolveMemo's budget.
  size_t Bytes() const {
    size_t bytes = sizeof(LinkSolve) + solution.shifts.size() * sizeof(uint32_t);
    for (const QuantizedProfile& job : circle.jobs) bytes += sizeof(QuantizedProfile) + job.gbps.size() * sizeof(double);
    return bytes;
  }

 private:
  mutable std::once_flag baseline_once_;
  mutable double baseline_score_ = 0;
};

// Link solves by their inputs, shared by every ranking of the process: the
// links only running jobs load come back, the same, in every request ranked
// around them until a job starts or ends (at 10,000 servers thousands of
// them, most of a request's solving), and phasord's closed loop ranks the
// same placements again. A solve is a deterministic function of its key, so
// the memo changes no result. The key (built in Ranker::SolveAlone) holds the
// capacity, the options every solve reads, and per job its profile's 128-bit digest, its
// share and the pin the solve keeps. At most kMaxBytes of solves, the least
// recently used forgotten first.
class SolveMemo {
 public:
  static constexpr size_t kMaxBytes = size_t{128} << 20;

  static SolveMemo& Get() {
    static SolveMemo* memo = new SolveMemo;
    return *memo;
  }

  std::shared_ptr<const LinkSolve> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return solves_.Find(key).value_or(nullptr);
  }
  void Put(const std::string& key, std::shared_ptr<const LinkSolve> solve) {
    const size_t cost = solve->Bytes() + key.size();
    std::lock_guard<std::mutex> lock(mu_);
    solves_.Put(key, std::move(solve), cost);
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    solves_.Clear();
  }

 private:
  std::mutex mu_;
  topology::LruCache<std::string, std::shared_ptr<const LinkSolve>> solves_{kMaxBytes};
};

void AppendBits(std::string& out, const void* data, size_t n) { out.append(static_cast<const char*>(data), n); }
template <typename T>
void AppendValue(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  AppendBits(out, &v, sizeof v);
}

// What a link solve reads of the request's options, as key bytes. The
// static_asserts fail when an options struct grows: add the new field here
// (a solve that reads it must not be found under a key that omits it).
std::string SolveOptionsKey(const RankOptions& o) {
  static_assert(sizeof(CircleOptions) == 16, "a new CircleOptions field: add it to SolveOptionsKey");
  static_assert(sizeof(ShiftSolverOptions) == 48, "a new ShiftSolverOptions field: add it to SolveOptionsKey");
  std::string key;
  AppendValue(key, o.circle.quantum_us);
  AppendValue(key, o.circle.max_bins);
  AppendValue(key, o.solver.exact_max_evaluations);
  AppendValue(key, o.solver.pair_bounds);
  AppendValue(key, o.solver.restarts);
  AppendValue(key, o.solver.max_sweeps);
  AppendValue(key, o.solver.heuristic_max_evaluations);
  AppendValue(key, o.solver.seed);
  AppendValue(key, o.solver.centre);
  return key;
}

// A profile's shape as a link solve reads it (t0_epoch_us is not read), as
// two independent 64-bit digests.
std::pair<uint64_t, uint64_t> ProfileDigest(const TrafficProfile& p) {
  std::string bytes;
  AppendValue(bytes, p.period_us);
  AppendValue(bytes, p.bin_us);
  AppendValue(bytes, p.square.has_value());
  if (p.square) {
    AppendValue(bytes, p.square->up_us);
    AppendValue(bytes, p.square->up_gbps);
    AppendValue(bytes, p.square->start_us);
    AppendValue(bytes, p.square->down_gbps);
  }
  AppendBits(bytes, p.gbps.data(), p.gbps.size() * sizeof(double));
  uint64_t b = 0xcbf29ce484222325ULL;  // FNV-1a, independent of absl's hash
  for (unsigned char c : bytes) b = (b ^ c) * 0x100000001b3ULL;
  return {absl::HashOf(std::string_view(bytes)), b};
}

// A link's result without its jobs and score: what its solve says alone.
LinkResult UnscoredResult(const Link& link, const LinkSolve& solve) {
  LinkResult r;
  r.id = link.id;
  r.capacity_gbps = link.capacity_gbps;
  r.quantum_us = solve.circle.quantum_us;
  r.circle_bins = solve.circle.bins;
  r.exact = solve.solution.exact;
  r.optimal_score = solve.solution.score;
  return r;
}

// The link's score at shifts `bins` of its circle: a rotation of its own
// optimum (always so on tree components) scores the same without summing
// the circle again.
double ScoreAt(const LinkSolve& solve, const std::vector<uint32_t>& bins) {
  return SameUpToRotation(solve.circle, bins, solve.solution.shifts)
             ? solve.solution.score
             : LinkScore(solve.circle, solve.capacity_gbps, bins);
}

// A contended link as one candidate sees it.
struct ContendedLink {
  size_t link = 0;                 // index into request.links
  std::vector<size_t> jobs;        // local job indices, in request order
  std::vector<double> shares;
  std::shared_ptr<const LinkSolve> solve;
  bool running_only = false;       // only the request's running jobs load it

  // The position of local job j on this link.
  size_t PositionOf(size_t j) const {
    return static_cast<size_t>(std::find(jobs.begin(), jobs.end(), j) - jobs.begin());
  }
  uint32_t quantum() const { return solve->circle.quantum_us; }
  // The link as the joint solver takes it (its gain left 0).
  JointLink AsJoint() const {
    JointLink out;
    out.circle = &solve->circle;
    out.solution = &solve->solution;
    out.capacity_gbps = solve->capacity_gbps;
    out.jobs = jobs;
    return out;
  }
  // t (us) -> bins of job at `pos` on this link's circle.
  uint32_t Bins(size_t pos, int64_t t_us) const { return ShiftBins(solve->circle, pos, t_us); }
};

class Ranker {
 public:
  // `out_of_time`, when set, is asked before every link solve and joint move.
  Ranker(const RankRequest& request, std::function<bool()> out_of_time)
      : request_(request), out_of_time_(std::move(out_of_time)), local_of_(request.jobs.size()) {
    job_index_.reserve(request.jobs.size());
    link_index_.reserve(request.links.size());
    for (size_t j = 0; j < request.jobs.size(); ++j) job_index_.emplace(request.jobs[j].id, j);
    for (size_t l = 0; l < request.links.size(); ++l) link_index_.emplace(request.links[l].id, l);
    options_key_ = SolveOptionsKey(request.options);
    for (const Job& job : request.jobs) profile_digest_.push_back(ProfileDigest(job.profile));
    IndexRunning();
  }

  absl::StatusOr<RankedCandidate> Evaluate(const Candidate& candidate);

  // True once out_of_time answered true: the ranking is incomplete.
  bool stopped() const { return stopped_; }
  bool OutOfTime() {
    if (!stopped_ && out_of_time_ && out_of_time_()) stopped_ = true;
    return stopped_;
  }

 private:
  // The first unknown job or link of `job_links` (job -> link -> share).
  absl::Status CheckNames(const std::string& job, const std::map<std::string, double>& job_links) const;
  // Indexes request.running once: its jobs, their shares per link.
  void IndexRunning();
  absl::StatusOr<std::shared_ptr<const LinkSolve>> SolveAlone(const Link& link,
                                                              const std::vector<const Job*>& jobs,
                                                              const std::vector<double>& shares);
  // A link only running jobs load, solved once per request.
  absl::StatusOr<std::shared_ptr<const LinkSolve>> SolveRunningLink(size_t l);
  // The result of running_pinned_ link l at the pins, built once per request
  // and shared by every candidate (SolveRunningLink(l) has succeeded).
  const std::shared_ptr<const LinkResult>& FixedResult(size_t l);

  const RankRequest& request_;
  std::function<bool()> out_of_time_;
  bool stopped_ = false;
  // By name (views of request_'s ids).
  absl::flat_hash_map<std::string_view, size_t> job_index_;
  absl::flat_hash_map<std::string_view, size_t> link_index_;
  // Per-link solves of the request by their SolveMemo key (capacity,
  // options, the jobs' profile digests, shares and pins): the memo may forget
  // an entry mid-request, this does not.
  std::unordered_map<std::string, std::shared_ptr<const LinkSolve>> cache_;
  std::string options_key_;
  std::vector<std::pair<uint64_t, uint64_t>> profile_digest_;  // by request job index
  // The running part, common to every candidate.
  absl::Status running_error_;       // its first unknown job or link (every candidate's reason)
  std::string running_error_job_;    // the job that error names
  std::vector<size_t> running_jobs_;  // request job indices, ascending
  // link -> (request job index, share) of running jobs with demand, ascending.
  std::vector<std::vector<std::pair<size_t, double>>> running_on_link_;
  std::vector<size_t> running_contended_;  // links two or more running jobs load, ascending
  std::vector<char> running_pinned_;       // by link: running_contended_ whose every job is pinned
  // Their results, at the pins, by link (FixedResult).
  std::unordered_map<size_t, std::shared_ptr<const LinkResult>> fixed_results_;
  std::unordered_map<size_t, std::shared_ptr<const LinkSolve>> running_solves_;
  // Jointly solved components of running-only links, by their links (request
  // indices, ascending): the component's shifts by request job index.
  struct RunningComponent {
    std::vector<std::pair<size_t, int64_t>> shifts;
    bool optimal = false;
  };
  std::map<std::vector<size_t>, RunningComponent> running_components_;
  std::vector<size_t> local_of_;  // request job index -> the candidate's local index
  // Per link solve (held by cache_), the last bins it was scored at and the score.
  std::unordered_map<const LinkSolve*, std::pair<std::vector<uint32_t>, double>> scored_;
};

absl::Status Ranker::CheckNames(const std::string& job, const std::map<std::string, double>& job_links) const {
  if (!job_index_.contains(job)) return absl::NotFoundError(absl::StrCat("job '", job, "' is not defined"));
  for (const auto& [link, share] : job_links) {
    if (!link_index_.contains(link)) {
      return absl::NotFoundError(absl::StrCat("link '", link, "' (job '", job, "') is not defined"));
    }
  }
  return absl::OkStatus();
}

void Ranker::IndexRunning() {
  running_on_link_.resize(request_.links.size());
  // Each job's (link index, share) entries with a share, names looked up
  // once (CheckNames' error for the first job, in name order, that has an
  // unknown name).
  std::vector<std::pair<size_t, std::vector<std::pair<size_t, double>>>> resolved;
  resolved.reserve(request_.running.links.size());
  for (const auto& [job, job_links] : request_.running.links) {
    auto j = job_index_.find(job);
    std::vector<std::pair<size_t, double>> on;
    on.reserve(job_links.size());
    bool known = j != job_index_.end();
    for (auto it = job_links.begin(); known && it != job_links.end(); ++it) {
      auto l = link_index_.find(it->first);
      known = l != link_index_.end();
      if (known && it->second > 0) on.emplace_back(l->second, it->second);
    }
    if (!known) {
      running_error_ = CheckNames(job, job_links);
      running_error_job_ = job;
      return;
    }
    running_jobs_.push_back(j->second);
    resolved.emplace_back(j->second, std::move(on));
  }
  // Per link in ascending job index.
  std::sort(resolved.begin(), resolved.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::sort(running_jobs_.begin(), running_jobs_.end());
  for (const auto& [j, on] : resolved) {
    if (MeanGbps(request_.jobs[j].profile) <= 0) continue;
    for (const auto& [l, share] : on) running_on_link_[l].emplace_back(j, share);
  }
  for (size_t l = 0; l < running_on_link_.size(); ++l) {
    if (running_on_link_[l].size() >= 2) running_contended_.push_back(l);
  }
  running_pinned_.assign(request_.links.size(), 0);
  for (size_t l : running_contended_) {
    running_pinned_[l] = std::all_of(running_on_link_[l].begin(), running_on_link_[l].end(),
                                     [&](const auto& on) { return request_.jobs[on.first].pinned_shift_us.has_value(); });
  }
}

absl::StatusOr<std::shared_ptr<const LinkSolve>> Ranker::SolveAlone(
    const Link& link, const std::vector<const Job*>& jobs, const std::vector<double>& shares) {
  // Pinned jobs constrain a link alone only when two or more share it; one
  // pinned job is the walk's root instead (section 4).
  size_t pinned = 0;
  for (const Job* job : jobs) pinned += job->pinned_shift_us.has_value();
  const bool use_pins = pinned >= 2;

  std::string key = options_key_;
  AppendValue(key, link.capacity_gbps);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto [a, b] = profile_digest_[static_cast<size_t>(jobs[i] - request_.jobs.data())];
    AppendValue(key, a);
    AppendValue(key, b);
    AppendValue(key, shares[i]);
    const bool pin = use_pins && jobs[i]->pinned_shift_us.has_value();
    AppendValue(key, pin);
    if (pin) AppendValue(key, *jobs[i]->pinned_shift_us);
  }
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (std::shared_ptr<const LinkSolve> known = SolveMemo::Get().Find(key)) {
    cache_.emplace(std::move(key), known);
    return known;
  }

  std::vector<LinkDemand> demands;
  std::vector<std::optional<uint32_t>> fixed_us(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    demands.push_back({&jobs[i]->profile, shares[i]});
    if (use_pins) fixed_us[i] = jobs[i]->pinned_shift_us;
  }
  // Validated options and profiles always give a circle (N = 1 fits at the
  // longest period); an error is still the candidate's, never a crash.
  absl::StatusOr<SolvedLink> solved_or = SolveLinkDemands(
      demands, link.capacity_gbps, fixed_us, request_.options.circle, request_.options.solver);
  if (!solved_or.ok()) return solved_or.status();
  SolvedLink solved = *std::move(solved_or);
  if (solved.solution.shifts.size() != solved.circle.jobs.size()) {
    return absl::InternalError(absl::StrCat("link '", link.id, "': the solver found no shifts"));
  }
  auto solve = std::make_shared<LinkSolve>();
  solve->circle = std::move(solved.circle);
  solve->solution = std::move(solved.solution);
  solve->capacity_gbps = link.capacity_gbps;
  solve->seed = request_.options.solver.seed;
  SolveMemo::Get().Put(key, solve);
  cache_.emplace(std::move(key), solve);
  return solve;
}

absl::StatusOr<std::shared_ptr<const LinkSolve>> Ranker::SolveRunningLink(size_t l) {
  if (auto it = running_solves_.find(l); it != running_solves_.end()) return it->second;
  std::vector<const Job*> jobs;
  std::vector<double> shares;
  for (const auto& [j, share] : running_on_link_[l]) {
    jobs.push_back(&request_.jobs[j]);
    shares.push_back(share);
  }
  absl::StatusOr<std::shared_ptr<const LinkSolve>> solve = SolveAlone(request_.links[l], jobs, shares);
  if (solve.ok()) running_solves_.emplace(l, *solve);
  return solve;
}

const std::shared_ptr<const LinkResult>& Ranker::FixedResult(size_t l) {
  auto [it, fresh] = fixed_results_.try_emplace(l);
  if (!fresh) return it->second;
  const LinkSolve& solve = *running_solves_.at(l);
  LinkResult r = UnscoredResult(request_.links[l], solve);
  const std::vector<std::pair<size_t, double>>& on_link = running_on_link_[l];
  std::vector<uint32_t> s(on_link.size());
  for (size_t p = 0; p < on_link.size(); ++p) {
    const Job& job = request_.jobs[on_link[p].first];
    s[p] = ShiftBins(solve.circle, p, *job.pinned_shift_us);
    r.jobs.push_back(job.id);
    r.rounding_error_us.push_back(solve.circle.jobs[p].rounding_error_us);
  }
  r.score = ScoreAt(solve, s);
  it->second = std::make_shared<const LinkResult>(std::move(r));
  return it->second;
}

absl::StatusOr<RankedCandidate> Ranker::Evaluate(const Candidate& candidate) {
  // The candidate as ranked is its own jobs plus the running part (never the
  // same job: ValidateRankRequest); each check below sees that union.
  const RunningPlacement& running = request_.running;
  if (candidate.links.empty() && running.links.empty() &&
      (!candidate.servers.empty() || !running.servers.empty())) {
    return absl::FailedPreconditionError(
        "candidate gives servers, but no topology was given to route them (--topology)");
  }
  // The candidate's jobs in request order; unknown names reject the candidate
  // (the first in job name order, over the candidate's and running's jobs).
  std::vector<size_t> own_ids;
  for (const auto& [job, job_links] : candidate.links) {
    if (absl::Status s = CheckNames(job, job_links); !s.ok()) {
      if (!running_error_.ok() && running_error_job_ < job) return running_error_;
      return s;
    }
    own_ids.push_back(job_index_.at(job));
  }
  if (!running_error_.ok()) return running_error_;
  std::sort(own_ids.begin(), own_ids.end());
  std::vector<size_t> job_ids;
  job_ids.reserve(own_ids.size() + running_jobs_.size());
  std::merge(own_ids.begin(), own_ids.end(), running_jobs_.begin(), running_jobs_.end(),
             std::back_inserter(job_ids));
  std::vector<const Job*> jobs;
  jobs.reserve(job_ids.size());
  for (size_t j = 0; j < job_ids.size(); ++j) {
    jobs.push_back(&request_.jobs[job_ids[j]]);
    local_of_[job_ids[j]] = j;
  }

  // The links the candidate's own jobs load: link -> (request job index,
  // share), ascending.
  std::map<size_t, std::vector<std::pair<size_t, double>>> own_on_link;
  for (size_t j : own_ids) {
    const Job& job = request_.jobs[j];
    if (MeanGbps(job.profile) <= 0) continue;
    for (const auto& [link, share] : candidate.links.at(job.id)) {
      if (share > 0) own_on_link[link_index_.at(link)].emplace_back(j, share);
    }
  }
  // The contended links in request order: those the running jobs contend on
  // alone (solved once per request) and those the candidate's jobs load.
  // A running-only link whose every job is pinned joins no component and
  // keeps the pins: its result is the same in every candidate, built once
  // per request (FixedResult) and listed in its place among the others.
  std::vector<ContendedLink> contended;
  std::vector<std::vector<size_t>> link_jobs;
  struct Listed {
    size_t link;         // request index
    bool fixed;          // FixedResult(link); else contended[index]
    size_t index = 0;
  };
  std::vector<Listed> listed;
  auto running_at = running_contended_.begin();
  auto own_at = own_on_link.begin();
  std::vector<std::pair<size_t, double>> on_link;
  while (running_at != running_contended_.end() || own_at != own_on_link.end()) {
    size_t l;
    bool running_only = false;
    on_link.clear();
    if (own_at == own_on_link.end() || (running_at != running_contended_.end() && *running_at < own_at->first)) {
      l = *running_at++;
      if (running_pinned_[l]) {
        if (OutOfTime()) return absl::ResourceExhaustedError("deadline_ms: the request ran out of time");
        if (absl::Status s = SolveRunningLink(l).status(); !s.ok()) return s;
        listed.push_back({l, true});
        continue;
      }
      on_link = running_on_link_[l];
      running_only = true;
    } else {
      l = own_at->first;
      if (running_at != running_contended_.end() && *running_at == l) ++running_at;
      const std::vector<std::pair<size_t, double>>& theirs = running_on_link_[l];
      std::merge(theirs.begin(), theirs.end(), own_at->second.begin(), own_at->second.end(),
                 std::back_inserter(on_link));
      ++own_at;
      if (on_link.size() < 2) continue;
    }
    ContendedLink cl;
    cl.link = l;
    std::vector<const Job*> link_job_ptrs;
    for (const auto& [j, share] : on_link) {
      cl.jobs.push_back(local_of_[j]);
      cl.shares.push_back(share);
      link_job_ptrs.push_back(&request_.jobs[j]);
    }
    if (OutOfTime()) return absl::ResourceExhaustedError("deadline_ms: the request ran out of time");
    absl::StatusOr<std::shared_ptr<const LinkSolve>> solve =
        running_only ? SolveRunningLink(l) : SolveAlone(request_.links[l], link_job_ptrs, cl.shares);
    if (!solve.ok()) return solve.status();
    cl.solve = *std::move(solve);
    cl.running_only = running_only;
    link_jobs.push_back(cl.jobs);
    listed.push_back({l, false, contended.size()});
    contended.push_back(std::move(cl));
  }

  RankedCandidate out;
  out.candidate = candidate.id;
  out.exact = true;
  out.rank_order = candidate.rank_order;
  out.proposed_by_phasor = candidate.proposed_by_phasor;
  std::vector<int64_t> shifts(jobs.size(), 0);
  for (size_t j = 0; j < jobs.size(); ++j) shifts[j] = jobs[j]->pinned_shift_us.value_or(0);

  // Pinned jobs join no links into one component: a running job at its
  // committed shift is a constant on each of its links, so a new job is
  // solved on its own links against it, not with every job it reaches
  // through the running jobs; a link of pinned jobs only keeps the pins.
  std::vector<bool> is_pinned(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) is_pinned[j] = jobs[j]->pinned_shift_us.has_value();
  const AffinityGraph graph(jobs.size(), link_jobs, is_pinned);
  // The joint solver's view, built when a component needs it.
  std::vector<JointLink> joint_links;
  std::vector<JointJob> joint_jobs;
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
      // A component of running-only links is the same in every candidate
      // that leaves it alone (same jobs, links, shares and pins): its joint
      // solve is done once per request.
      std::vector<size_t> running_key;
      for (size_t l : component.links) {
        if (!contended[l].running_only) {
          running_key.clear();
          break;
        }
        running_key.push_back(contended[l].link);
      }
      if (!running_key.empty()) {
        if (auto it = running_components_.find(running_key); it != running_components_.end()) {
          for (const auto& [job, shift] : it->second.shifts) shifts[local_of_[job]] = shift;
          out.exact &= it->second.optimal;
          continue;
        }
      }
      if (joint_links.empty()) {
        for (const ContendedLink& cl : contended) joint_links.push_back(cl.AsJoint());
        for (const Job* job : jobs) joint_jobs.push_back({job->profile.period_us, job->pinned_shift_us});
      }
      for (size_t l : component.links) {
        const ContendedLink& cl = contended[l];
        joint_links[l].gain = cl.solve->solution.score - cl.solve->BaselineScore();
      }
      const JointResult joint = SolveJoint(graph, component, joint_links, joint_jobs,
                                           request_.options.joint, shifts, [this] { return OutOfTime(); });
      if (joint.stopped) return absl::ResourceExhaustedError("deadline_ms: the request ran out of time");
      // Proven only when every link of the component reached its own optimum.
      out.exact &= joint.optimal;
      if (!running_key.empty()) {
        RunningComponent& solved = running_components_[std::move(running_key)];
        solved.optimal = joint.optimal;
        for (size_t j : component.jobs) solved.shifts.emplace_back(job_ids[j], shifts[j]);
      }
    }
  }

  double sum = 0;
  out.min_link_score = 1.0;
  out.links.reserve(listed.size());
  for (const Listed& entry : listed) {
    if (entry.fixed) {
      const std::shared_ptr<const LinkResult>& r = FixedResult(entry.link);
      out.exact &= r->exact;
      sum += r->score;
      out.min_link_score = std::min(out.min_link_score, r->score);
      out.links.push_back(r);
      continue;
    }
    const ContendedLink& cl = contended[entry.index];
    const Link& link = request_.links[cl.link];
    LinkResult r = UnscoredResult(link, *cl.solve);
    std::vector<uint32_t> s(cl.jobs.size());
    r.jobs.reserve(cl.jobs.size());
    r.rounding_error_us.reserve(cl.jobs.size());
    for (size_t p = 0; p < cl.jobs.size(); ++p) {
      s[p] = cl.Bins(p, shifts[cl.jobs[p]]);
      r.jobs.push_back(jobs[cl.jobs[p]]->id);
      r.rounding_error_us.push_back(cl.solve->circle.jobs[p].rounding_error_us);
    }
    // Not scored again at the shifts the last candidate gave this solve (a
    // running-only link keeps them in every candidate that leaves its
    // component alone).
    auto [last, fresh] = scored_.try_emplace(cl.solve.get());
    if (fresh || last->second.first != s) {
      last->second.second = ScoreAt(*cl.solve, s);
      last->second.first = std::move(s);
    }
    r.score = last->second.second;
    out.exact &= r.exact;
    sum += r.score;
    out.min_link_score = std::min(out.min_link_score, r.score);
    out.links.push_back(std::move(r));
  }
  out.score = listed.empty() ? 1.0 : sum / static_cast<double>(listed.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    out.shifts_us.emplace_back(jobs[j]->id, static_cast<uint32_t>(shifts[j]));
  }
  return out;
}

// Upper ends of the options' ranges (ValidateRankRequest).
constexpr uint64_t kMaxOptionBins = uint64_t{1} << 32;
constexpr uint32_t kMaxRestarts = 1000;
constexpr uint32_t kMaxSweeps = 1000;
constexpr uint32_t kMaxSpanningTrees = 1'000'000;

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

}  // namespace

void ClearSolveMemo() { SolveMemo::Get().Clear(); }

absl::StatusOr<RingOrderMode> ParseRingOrderMode(std::string_view name, std::string_view field) {
  if (name == "host") return RingOrderMode::kHost;
  if (name == "phasor") return RingOrderMode::kPhasor;
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), ": '", std::string(name), "' is not host or phasor"));
}

const char* RingOrderModeName(RingOrderMode mode) { return mode == RingOrderMode::kHost ? "host" : "phasor"; }

void MoveRunningIntoCandidates(RankRequest& request) {
  if (request.running.empty()) return;
  for (Candidate& c : request.candidates) {
    c.links.insert(request.running.links.begin(), request.running.links.end());
    c.servers.insert(request.running.servers.begin(), request.running.servers.end());
  }
  request.running = {};
}

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
    if (link.capacity_gbps < kMinCapacityGbps || link.capacity_gbps > kMaxCapacityGbps) {
      return Invalid(field + ".capacity_gbps", absl::StrCat(link.capacity_gbps, " is outside ",
                                                            kMinCapacityGbps, "..", kMaxCapacityGbps));
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
        if (!std::isfinite(share) || share < 0 || share > kMaxShare) {
          return Invalid(absl::StrCat(field, ".links.", job, ".", link),
                         absl::StrCat("share must be in 0..", kMaxShare, ", got ", share));
        }
      }
    }
    // The merge rule: a job is running (request.running) or placed by the
    // candidate, never both.
    if (request.running.empty()) continue;
    auto running = [&](const std::string& job) { return request.running.links.contains(job) ||
                                                       request.running.servers.contains(job); };
    auto both = [&](const char* form, const std::string& job) {
      return Invalid(absl::StrCat(field, ".", form, ".", job),
                     absl::StrCat("job '", job, "' is also in running (a job is either running or placed by a candidate)"));
    };
    for (const auto& [job, unused] : candidate.links) {
      if (running(job)) return both("links", job);
    }
    for (const auto& [job, unused] : candidate.servers) {
      if (running(job)) return both("servers", job);
    }
  }
  for (const auto& [job, job_links] : request.running.links) {
    for (const auto& [link, share] : job_links) {
      if (!std::isfinite(share) || share < 0 || share > kMaxShare) {
        return Invalid(absl::StrCat("running.links.", job, ".", link),
                       absl::StrCat("share must be in 0..", kMaxShare, ", got ", share));
      }
    }
    if (request.running.servers.contains(job)) {
      return Invalid(absl::StrCat("running.servers.", job), absl::StrCat("job '", job, "' is also in running.links"));
    }
  }
  for (const auto& [job, servers] : request.running.servers) {
    if (servers.empty()) return Invalid(absl::StrCat("running.servers.", job), "must be a non-empty list of server ids");
  }
  const RankOptions& o = request.options;
  if (o.circle.quantum_us == 0) return Invalid("options.quantum_us", "must be > 0");
  if (o.circle.quantum_us > kMaxPeriodUs) {
    return Invalid("options.quantum_us", absl::StrCat(o.circle.quantum_us, " is outside 1..", kMaxPeriodUs));
  }
  if (o.circle.max_bins == 0) return Invalid("options.max_bins", "must be > 0");
  if (o.circle.max_bins > kMaxOptionBins) {
    return Invalid("options.max_bins", absl::StrCat(o.circle.max_bins, " is outside 1..", kMaxOptionBins));
  }
  if (o.solver.restarts > kMaxRestarts) {
    return Invalid("options.restarts", absl::StrCat(o.solver.restarts, " is outside 0..", kMaxRestarts));
  }
  if (o.solver.max_sweeps > kMaxSweeps) {
    return Invalid("options.max_sweeps", absl::StrCat(o.solver.max_sweeps, " is outside 0..", kMaxSweeps));
  }
  if (o.joint.max_sweeps > kMaxSweeps) {
    return Invalid("options.joint_max_sweeps",
                   absl::StrCat(o.joint.max_sweeps, " is outside 0..", kMaxSweeps));
  }
  if (o.own_candidates > kMaxOwnCandidates) {
    return Invalid("options.own_candidates", absl::StrCat(o.own_candidates, " is outside 0..", kMaxOwnCandidates));
  }
  if (o.joint.max_spanning_trees > kMaxSpanningTrees) {
    return Invalid("options.max_spanning_trees",
                   absl::StrCat(o.joint.max_spanning_trees, " is outside 0..", kMaxSpanningTrees));
  }
  return absl::OkStatus();
}

absl::Status CheckRankLimits(const RankRequest& request, const RankLimits& limits) {
  auto over = [](const std::string& what, uint64_t value, const char* limit, uint64_t bound) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": ", value, " exceeds the limit ", limit, " (", bound, ")"));
  };
  if (request.candidates.size() > limits.max_candidates) {
    return over("candidates", request.candidates.size(), "max_candidates", limits.max_candidates);
  }
  // jobs x links in 128 bits: the product of two sizes cannot wrap.
  const absl::uint128 jobs_x_links = absl::uint128(request.jobs.size()) * request.links.size();
  if (jobs_x_links > limits.max_jobs_x_links) {
    return absl::ResourceExhaustedError(
        absl::StrCat("jobs x links: ", request.jobs.size(), " x ", request.links.size(),
                     " exceed the limit max_jobs_x_links (", limits.max_jobs_x_links, ")"));
  }
  const RankOptions& o = request.options;
  if (o.circle.max_bins > limits.max_job_bins) {
    return over("options.max_bins", o.circle.max_bins, "max_job_bins", limits.max_job_bins);
  }
  for (size_t j = 0; j < request.jobs.size(); ++j) {
    const uint64_t bins = request.jobs[j].profile.gbps.size();
    if (bins > limits.max_job_bins) {
      return over(absl::StrCat("jobs[", j, "].profile.gbps bins"), bins, "max_job_bins",
                  limits.max_job_bins);
    }
  }
  const std::pair<const char*, uint64_t> budgets[] = {
      {"options.exact_max_evaluations", o.solver.exact_max_evaluations},
      {"options.heuristic_max_evaluations", o.solver.heuristic_max_evaluations},
      {"options.joint_max_evaluations", o.joint.max_evaluations},
      {"options.joint_full_scan_evaluations", o.joint.full_scan_evaluations}};
  for (const auto& [field, budget] : budgets) {
    if (budget > limits.max_evaluations) return over(field, budget, "max_evaluations", limits.max_evaluations);
  }
  if (limits.deadline_ms == 0) return absl::InvalidArgumentError("limits.deadline_ms: must be > 0");
  // Per contended link of every candidate: each job's circle (<= max_bins) and
  // pattern (<= min(max_bins, its period in quanta)). Names only, no solving.
  absl::flat_hash_map<std::string_view, uint64_t> pattern_bins;
  for (const Job& job : request.jobs) {
    const uint64_t q = o.circle.quantum_us;
    pattern_bins[job.id] = std::min<uint64_t>(o.circle.max_bins, QuantizedPeriodUs(job.profile.period_us,
                                                                                o.circle.quantum_us) / q);
  }
  // Links by index (the request's links first, then names only candidates
  // or running give, which Rank rejects): one lookup per share and no
  // allocation per candidate.
  absl::flat_hash_map<std::string_view, size_t> link_index;
  link_index.reserve(request.links.size());
  for (size_t l = 0; l < request.links.size(); ++l) link_index.emplace(request.links[l].id, link_index.size());
  std::vector<std::string_view> link_name;
  for (const Link& link : request.links) link_name.push_back(link.id);
  // The running part's bins and jobs per link, counted once; then each
  // candidate's own on top of them.
  std::vector<absl::uint128> running_bins(link_name.size());
  std::vector<uint32_t> running_jobs(link_name.size());
  std::vector<absl::uint128> link_bins(link_name.size());
  std::vector<uint32_t> link_jobs(link_name.size());
  std::vector<size_t> touched;  // this candidate's links, in first-seen order
  auto add = [&](const std::map<std::string, std::map<std::string, double>>& shares,
                 std::vector<absl::uint128>& bins_of, std::vector<uint32_t>& jobs_of) {
    for (const auto& [job, job_links] : shares) {
      auto it = pattern_bins.find(job);
      if (it == pattern_bins.end()) continue;  // Rank rejects the candidate
      for (const auto& [link, share] : job_links) {
        if (share <= 0) continue;
        auto at = link_index.find(link);
        if (at == link_index.end()) {
          at = link_index.emplace(link, link_name.size()).first;
          link_name.push_back(link);
          for (auto* v : {&running_bins, &link_bins}) v->push_back(0);
          for (auto* v : {&running_jobs, &link_jobs}) v->push_back(0);
        }
        const size_t l = at->second;
        if (jobs_of[l] == 0) touched.push_back(l);
        bins_of[l] += absl::uint128(o.circle.max_bins) + it->second;
        ++jobs_of[l];
      }
    }
  };
  auto exceeds = [&](const std::string& where, size_t l, absl::uint128 bins, uint32_t jobs) {
    return absl::ResourceExhaustedError(absl::StrCat(
        where, " (link '", std::string(link_name[l]), "'): up to ",
        static_cast<uint64_t>(std::min(bins, absl::uint128(std::numeric_limits<uint64_t>::max()))), " bins for ",
        jobs, " jobs exceed the limit max_link_bins (", limits.max_link_bins, ")"));
  };
  add(request.running.links, running_bins, running_jobs);
  for (size_t l : touched) {
    if (running_jobs[l] >= 2 && running_bins[l] > limits.max_link_bins) {
      return exceeds("running.links", l, running_bins[l], running_jobs[l]);
    }
  }
  touched.clear();
  for (size_t c = 0; c < request.candidates.size(); ++c) {
    add(request.candidates[c].links, link_bins, link_jobs);
    for (size_t l : touched) {
      const absl::uint128 bins = link_bins[l] + running_bins[l];
      const uint32_t jobs = link_jobs[l] + running_jobs[l];
      if (jobs >= 2 && bins > limits.max_link_bins) {
        return exceeds(absl::StrCat("candidates[", c, "].links"), l, bins, jobs);
      }
      link_bins[l] = 0;
      link_jobs[l] = 0;
    }
    touched.clear();
  }
  return absl::OkStatus();
}

namespace {

// Rank with a stop: nullopt when out_of_time answered true.
std::optional<Ranking> RankUntil(const RankRequest& request, std::function<bool()> out_of_time) {
  Ranker ranker(request, std::move(out_of_time));
  Ranking out;
  for (const Candidate& candidate : request.candidates) {
    if (ranker.OutOfTime()) return std::nullopt;
    absl::StatusOr<RankedCandidate> r = ranker.Evaluate(candidate);
    if (ranker.stopped()) return std::nullopt;
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

}  // namespace

Ranking Rank(const RankRequest& request) { return *RankUntil(request, nullptr); }

absl::StatusOr<Ranking> RankWithin(const RankRequest& request, const RankLimits& limits,
                                   const std::function<absl::Time()>& now) {
  if (absl::Status s = CheckRankLimits(request, limits); !s.ok()) return s;
  return RankWithinDeadline(request, limits, now);
}

absl::StatusOr<Ranking> RankWithinDeadline(const RankRequest& request, const RankLimits& limits,
                                           const std::function<absl::Time()>& now) {
  if (limits.deadline_ms == 0) return absl::InvalidArgumentError("limits.deadline_ms: must be > 0");
  const uint64_t ms = std::min<uint64_t>(limits.deadline_ms, uint64_t{1} << 40);
  const absl::Time deadline = now() + absl::Milliseconds(static_cast<int64_t>(ms));
  std::optional<Ranking> ranking = RankUntil(request, [&] { return now() >= deadline; });
  if (!ranking) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "deadline_ms: the request did not finish within the limit deadline_ms (", limits.deadline_ms, ")"));
  }
  return *std::move(ranking);
}

}  // namespace phasor::placer
