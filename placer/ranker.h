// Ranking candidate placements (SPEC section 5): for each candidate, the
// contended links, one shift per job (section 4) and the candidate's score;
// candidates sorted by score with the host scheduler's order breaking ties.
//
// Rank() is a pure function of its request; it is thread-safe and may run
// concurrently with itself.
#ifndef PHASOR_PLACER_RANKER_H_
#define PHASOR_PLACER_RANKER_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/iterator/indirect_iterator.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "placer/joint_solver.h"
#include "placer/link_score.h"
#include "placer/shift_solver.h"
#include "placer/traffic_profile.h"

namespace phasor::placer {

// Whose order a job's ring follows: the host's (its candidate's servers as
// given) or phasor's (placer/ring_order.h).
enum class RingOrderMode { kHost, kPhasor };

// "host" / "phasor"; InvalidArgument naming `field` otherwise.
absl::StatusOr<RingOrderMode> ParseRingOrderMode(std::string_view name, std::string_view field);
const char* RingOrderModeName(RingOrderMode mode);

// RankOptions::own_candidates is at most this.
inline constexpr uint32_t kMaxOwnCandidates = 64;

// A link's capacity is in kMinCapacityGbps..kMaxCapacityGbps (1 Mbit/s to
// 1 Pbit/s), shares in 0..kMaxShare: with demands of at most kMaxGbps every
// load, excess and score is finite by construction.
inline constexpr double kMinCapacityGbps = 1e-3;
inline constexpr double kMaxCapacityGbps = 1e6;
// A share is the part of a job's NIC-level traffic a link carries: 1 for one
// hop of its ring, k when k hops cross the link (ranks that alternate between
// racks; topology/traffic.h). No ring has this many hops over one link.
inline constexpr double kMaxShare = 65536;

struct Link {
  std::string id;
  double capacity_gbps = 0;  // kMinCapacityGbps..kMaxCapacityGbps
};

struct Job {
  std::string id;
  TrafficProfile profile;
  // A running job's shift that must be kept (< profile.period_us).
  std::optional<uint32_t> pinned_shift_us;
};

// A candidate placement. Link form: job -> link -> share of the job's profile
// that crosses the link (0..1). Server form: job -> its servers in rank order;
// a router (the topology module, `phasor rank --topology`) turns it into the
// link form before ranking, and Rank() rejects a candidate still in server form.
struct Candidate {
  std::string id;
  std::map<std::string, std::map<std::string, double>> links;
  std::map<std::string, std::vector<std::string>> servers;
  // Set by the router (RouteCandidates) for every job it routed from server
  // form that is not pinned (a pinned job runs already): the rank order the
  // ring was routed with (RankOptions::ring_order: the host's, or phasor's
  // ring order), which the job's launcher must use.
  std::map<std::string, std::vector<std::string>> rank_order;
  // phasor proposed this candidate (placer/candidates.h, OwnCandidates), not
  // the host scheduler.
  bool proposed_by_phasor = false;
};

// The placement of the jobs already running, given once per request and
// common to every candidate (the same two forms as a Candidate). Each
// candidate is ranked as if it named these jobs itself: a candidate names only
// the jobs it places. A job is either here or in candidates, never both
// (ValidateRankRequest: InvalidArgument naming the candidate's field).
struct RunningPlacement {
  std::map<std::string, std::map<std::string, double>> links;
  std::map<std::string, std::vector<std::string>> servers;

  bool empty() const { return links.empty() && servers.empty(); }
};

struct RankOptions {
  CircleOptions circle;        // quantum_us (default 1000), max_bins (default 65536)
  ShiftSolverOptions solver;   // exact search budget, restarts, seed
  JointSolverOptions joint;    // loops and pinned jobs: spanning trees, sweeps, budgets
  // Whose rank order a candidate's ring follows when a router turns its
  // servers into links (placer/ring_order.h; default phasor's: the reply's
  // rank_order then says how to launch the job).
  RingOrderMode ring_order = RingOrderMode::kPhasor;
  // Candidates phasor adds of its own when the request gives free_servers
  // and a fabric (placer/candidates.h; default 2; 0: none).
  uint32_t own_candidates = 2;
};

// What one request may cost, checked by CheckRankLimits before anything is
// allocated (ResourceExhausted naming the limit), and the wall-clock deadline
// RankWithin keeps. The defaults admit every request of the examples and
// tests with room to spare; a service raises them in its configuration,
// `phasor rank` with --max-... flags.
struct RankLimits {
  // Bins of one job's pattern: a profile's own gbps entries, and the bins a
  // pattern may take on a link's circle (options.max_bins bounds them).
  uint64_t max_job_bins = uint64_t{1} << 20;
  // Bins one contended link may hold while it is solved: for each of its jobs
  // the circle (at most options.max_bins) plus the job's pattern.
  uint64_t max_link_bins = uint64_t{1} << 25;
  // jobs x links of the request (every candidate is checked against them).
  uint64_t max_jobs_x_links = uint64_t{1} << 22;
  // Candidates of one request.
  uint64_t max_candidates = 10'000;
  // The largest budget in bin evaluations the options may give any solver
  // (options.exact_max_evaluations, .solver heuristic, .joint evaluations):
  // 5x the largest default. It also bounds the exact search's pair tables,
  // whose size its planned cost counts.
  uint64_t max_evaluations = 100'000'000;
  // Wall-clock time of one request in milliseconds (> 0); checked between
  // link solves and between the joint solver's moves.
  uint64_t deadline_ms = 10'000;
};
struct RankRequest {
  std::vector<Link> links;
  std::vector<Job> jobs;
  std::vector<Candidate> candidates;  // in the host scheduler's order of preference
  RunningPlacement running;           // common to every candidate (empty: none)
  RankOptions options;
  // The servers wholly free before this placement, in the host's view (empty:
  // not given). Rank() does not read them; the packing rule does
  // (placer/packing.h, RankingPolicyOptions::keep_packing).
  std::vector<std::string> free_servers;
};

struct LinkResult {
  std::string id;
  double score = 1;          // achieved with the candidate's shifts
  double optimal_score = 1;  // the link's own optimum (equal to score on tree components)
  double capacity_gbps = 0;
  std::vector<std::string> jobs;  // in the request's job order
  uint32_t quantum_us = 0;        // the quantum the link's circle used
  uint64_t circle_bins = 0;
  bool exact = false;             // the link's own optimum is proven
  // T'_j - T_j of each job of `jobs`, in that order (a vector, not a map by
  // id: at 10,000 servers a ranking holds 80,000 link results).
  std::vector<int64_t> rounding_error_us;
};

// A candidate's link results, read as a vector of LinkResult. Each result is
// held shared and immutable: a link that only pinned running jobs load has
// the same result in every candidate of a ranking, kept once (at 10,000
// servers 8,000 of them per candidate, which copies made a fifth of
// phasord's ranking time).
class LinkResults {
 public:
  using value_type = LinkResult;
  using const_iterator =
      boost::indirect_iterator<std::vector<std::shared_ptr<const LinkResult>>::const_iterator>;
  using iterator = const_iterator;

  LinkResults() = default;
  LinkResults(std::initializer_list<LinkResult> links) {
    for (const LinkResult& l : links) push_back(l);
  }
  void push_back(LinkResult link) { links_.push_back(std::make_shared<const LinkResult>(std::move(link))); }
  void push_back(std::shared_ptr<const LinkResult> link) { links_.push_back(std::move(link)); }
  void reserve(size_t n) { links_.reserve(n); }
  size_t size() const { return links_.size(); }
  bool empty() const { return links_.empty(); }
  const LinkResult& operator[](size_t i) const { return *links_[i]; }
  const LinkResult& at(size_t i) const { return *links_.at(i); }
  // The i-th result as held (the same object in every candidate that shares it).
  const std::shared_ptr<const LinkResult>& held(size_t i) const { return links_[i]; }
  const LinkResult& front() const { return *links_.front(); }
  const LinkResult& back() const { return *links_.back(); }
  const_iterator begin() const { return const_iterator(links_.begin()); }
  const_iterator end() const { return const_iterator(links_.end()); }

 private:
  std::vector<std::shared_ptr<const LinkResult>> links_;
};

struct RankedCandidate {
  std::string candidate;
  double score = 1;           // mean of the contended links' achieved scores (1 when none)
  double min_link_score = 1;  // minimum of them (1 when none)
  bool cycle = false;         // some component of the affinity graph has a loop
  // Proven optimal: every link solved exactly and every link keeps its own
  // optimum (always so on trees; on loops when the links agree).
  bool exact = false;
  std::vector<std::pair<std::string, uint32_t>> shifts_us;  // per job, request order
  LinkResults links;                                         // contended links, request order
  // The candidate's rank orders (Candidate::rank_order) and who proposed it.
  std::map<std::string, std::vector<std::string>> rank_order;
  bool proposed_by_phasor = false;
};

struct RejectedCandidate {
  std::string candidate;
  std::string reason;
};

struct Ranking {
  std::vector<RankedCandidate> ranked;  // best first; ties keep the request's order
  std::vector<RejectedCandidate> rejected;
};

// The long form of `request`: its running part copied into every candidate
// and cleared (a job a candidate names itself keeps the candidate's entry).
// It ranks the same as the request (for a request ValidateRankRequest
// accepted); for readers that look a job up in its candidate, and for
// `phasor rank` inputs older than the running part.
void MoveRunningIntoCandidates(RankRequest& request);

// Checks what makes the whole request unusable (InvalidArgument naming the
// field, e.g. "links[2].capacity_gbps: must be > 0"): ids, capacities,
// profiles, pinned shifts, shares, options, and a job named both in running
// and in a candidate ("candidates[1].servers.j: job 'j' is also in running")
// or in both forms of running. Unknown job or link names in a candidate or in
// running are not errors here: Rank() rejects the candidates they concern.
absl::Status ValidateRankRequest(const RankRequest& request);

// Checks `request` against `limits` without allocating in proportion to what
// it asks for: ResourceExhausted naming the limit ("candidates: 20000 exceed
// the limit max_candidates (10000)"). Requires a request ValidateRankRequest
// accepted. The running part counts once: a link's bins are its running
// jobs' plus, per candidate, the candidate's own jobs' on it.
absl::Status CheckRankLimits(const RankRequest& request, const RankLimits& limits);

// Ranks a request that ValidateRankRequest accepted, with no limits (trusted
// callers: tests, the simulator).
Ranking Rank(const RankRequest& request);

// The path for a request from outside, once ValidateRankRequest accepted it
// (and a router added its links; routed shares may exceed 1):
// CheckRankLimits (ResourceExhausted), then Rank within limits.deadline_ms
// of `now()` at the start (ResourceExhausted naming deadline_ms when it
// passes; the work stops at the next check). `now` is the clock (injected
// for tests).
absl::StatusOr<Ranking> RankWithin(const RankRequest& request, const RankLimits& limits,
                                   const std::function<absl::Time()>& now = absl::Now);

// RankWithin for a request CheckRankLimits already accepted with `limits`
// (phasord checks before it queues a request): the deadline only.
absl::StatusOr<Ranking> RankWithinDeadline(const RankRequest& request, const RankLimits& limits,
                                           const std::function<absl::Time()>& now = absl::Now);

// Rankings of a process share a memo of link solves (at most 128 MiB, the
// least recently used forgotten first), keyed by what a solve reads: the
// link's capacity, the options, and per job its profile's shape, share and
// kept pin. A link's solve, and its random-phase baseline when a loop needs
// it, is computed once and found again by every request that holds the same
// jobs on such a link: the links only running jobs load recur in every
// request ranked around them (at 10,000 servers, most of a request's
// solving), and phasord's closed loop ranks the same placements again. It
// changes no result; this forgets it (tests, and the benchmarks that measure
// a first request).
void ClearSolveMemo();

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_RANKER_H_
