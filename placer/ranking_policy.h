// The ranking policy (SPEC section 5, applied after Rank()): how the host
// scheduler's order, phasor's predicted gain and the prediction's confidence
// combine into the candidate that runs.
//
// Rank() sorts candidates by predicted score alone (ties keep the host's
// order). That trades the host's objective (its first choice: fairness,
// goodput, packing) for a predicted network gain, and the prediction can be
// wrong: the score assumes each job's Up phase keeps its isolated length,
// but a job that shares a saturated link stretches its Up phase (max-min
// sharing), so a link predicted "compatible" with little headroom collides
// in practice; shifts on loops of the affinity graph are heuristic. A
// predicted gain has two parts: what choosing the candidate gains whatever
// the phases (its links' random-phase score R, RandomPhaseScore: less load
// on shared links, or none shared), and what its shifts add on top (S - R).
// Only the second depends on the shifts being delivered. The policy keeps
// the host's first choice unless another candidate
//   1. beats it by at least `min_gain` in its effective score R +
//      shift_confidence x (S - R), or, with `trust_choice_gains`, in R alone
//      (a choice gain: test 2 does not apply),
//   2. is trusted (skipped for a choice gain when trust_choice_gains is
//      set): not on a loop of the affinity graph unless proven exact, and
//      every contended link keeps at
//      least `min_headroom` of its capacity-time free after the jobs' Up
//      phases (so a stretched Up phase still fits), and
//   3. puts no more (job, contended link) pairs at risk than the host's
//      first choice (in particular: when the host's first shares no link,
//      nothing overtakes it), and has no larger footprint: no more (job,
//      link) entries in its request candidate, so a candidate that spreads
//      jobs over more servers than the host chose (more links, more
//      fragmentation for later jobs) never overtakes on a prediction.
// Among the candidates that pass, the best effective score goes first; the others keep
// Rank()'s order behind it. With min_gain < 0 the policy is off (Rank()'s
// order stands).
//
// `discard_loops` (Cassini's rule, for the ablation; default off): before
// anything else, every candidate whose affinity graph has a loop is moved
// from `ranked` to `rejected`; when that leaves none, nothing is ranked and
// the caller runs the host's first choice without shifts.
//
// Pure functions; thread-safe.
#ifndef PHASOR_PLACER_RANKING_POLICY_H_
#define PHASOR_PLACER_RANKING_POLICY_H_

#include <string>

#include "absl/status/status.h"
#include "placer/ranker.h"

namespace phasor::placer {

struct RankingPolicyOptions {
  // Predicted score gain (on the 0..1 score) another candidate needs over the
  // host's first choice to overtake it (default 0.05); < 0: policy off.
  double min_gain = 0.05;
  // Fraction of a contended link's capacity-time that must stay free after
  // the Up phases of its jobs, each at its full profile rate, for the
  // prediction to be trusted (default 0.1).
  double min_headroom = 0.1;
  // Cassini (NSDI'24): candidates whose affinity graph has a loop are
  // discarded, not solved (default false: phasor solves them, SPEC 4).
  bool discard_loops = false;
  // How much of a candidate's predicted gain from its shifts counts, in 0..1.
  // A candidate's effective score is R + shift_confidence x (S - R): S its
  // predicted score (the shifts held), R the score its contended links get
  // with random phases (RandomPhaseScore: the shifts not delivered, as when
  // an Up phase stretches or a job drifts). 1 trusts the shifts fully (the
  // gain is S's alone); 0 counts only what choosing the candidate gains
  // whatever the phases (default 1).
  double shift_confidence = 1;
  // A gain in R alone (the candidate's links get a better score whatever the
  // phases) overtakes without the trust tests (loop, headroom). Default
  // false: measured on the bundled trace it turns a gain into a loss in one
  // seed of ten, on the Cassini workload a loss into a gain in one of twenty
  // (docs/simulator.md).
  bool trust_choice_gains = false;
  // The host's packing kept (placer/packing.h): a candidate in server form
  // that leaves fewer whole free servers or whole free racks than the host's
  // first is not ranked. Applied before Rank() by whoever knows which servers
  // are free (KeepPacking: the trace replay, phasord for a request with
  // free_servers, the Slurm controller), not by ApplyRankingPolicy. Default
  // true; Cassini mode turns it off.
  bool keep_packing = true;
  // When no candidate overtakes the host's first on a predicted gain, one
  // whose predicted score is at least as high and that puts less at risk
  // (fewer (job, contended link) pairs, then a smaller footprint, neither
  // larger) goes first (SPEC 5 (c); reason "less-at-risk"), provided it
  // places every job the host's first places from server form, none on more
  // servers (their rank orders): a job left waiting or spread thinner is not
  // less at risk, whatever its links. Default true; Cassini mode turns it off.
  bool prefer_less_at_risk = true;
};

// InvalidArgument naming the field: min_headroom outside [0, 1),
// shift_confidence outside [0, 1], or a non-finite min_gain.
absl::Status ValidateRankingPolicyOptions(const RankingPolicyOptions& options);

struct PolicyDecision {
  std::string host_first;  // the host's first ranked candidate ("" when none ranked)
  std::string chosen;      // the candidate now first
  // "host-first" (kept), "overtaken" (another passed every test),
  // "less-at-risk" (as good a prediction with less at risk:
  // prefer_less_at_risk), "off" (policy off), "none" (nothing ranked).
  std::string reason;
  size_t discarded_loops = 0;  // candidates moved to `rejected` by discard_loops
  // Rank()'s first (the best predicted score) before the policy, its score
  // and the host's first's ("" / 1 when none ranked).
  std::string score_best;
  double score_best_score = 1, host_first_score = 1;
  // Their effective scores (R + shift_confidence x (S - R)); equal to the
  // scores when the policy is off, and with shift_confidence 1 and
  // trust_choice_gains off (R is then not computed: the score is S itself).
  double score_best_effective = 1, host_first_effective = 1;
  // Why score_best did not overtake the host's first: "" (it is the host's
  // first, or it overtook, or the policy is off), else the first test it
  // failed: "gain", "loop", "headroom", "pairs", "footprint".
  std::string blocked;
};

// The fraction of `link`'s capacity-time left free by its jobs' Up phases
// over one period of each: 1 - sum_j (mean rate_j x share_j) / capacity,
// with the shares of `candidate` (link form) and, for the jobs it does not
// name, of `request.running`. Shares of jobs not in `request.jobs` count as 0.
double LinkHeadroom(const RankRequest& request, const Candidate& candidate, const LinkResult& link);

// The expected score of `link` (a contended link of `candidate`, link form)
// when its jobs' phases are independent and uniformly random: 1 - E[max(0,
// sum_j X_j - C)] / C, X_j the demand of job j (profile x share) at a random
// instant of its period. Exact (a convolution of the jobs' demand
// distributions) up to 4096 distinct load values, binned beyond. Shares come
// from the candidate or, for the jobs it does not name, `request.running`;
// jobs or shares missing from the request count as no demand.
double RandomPhaseScore(const RankRequest& request, const Candidate& candidate, const LinkResult& link);

// The (job, link) entries of a candidate in link form with a share > 0 (the
// request's running part is common to every candidate and not counted).
size_t Footprint(const Candidate& candidate);

// Reorders `ranking` (from Rank(request)) by the policy and says what it did.
PolicyDecision ApplyRankingPolicy(const RankRequest& request, const RankingPolicyOptions& options,
                                  Ranking& ranking);

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_RANKING_POLICY_H_
