#include "placer/ranking_policy.h"

#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "placer/traffic_profile.h"

#include "absl/strings/str_cat.h"

namespace phasor::placer {

absl::Status ValidateRankingPolicyOptions(const RankingPolicyOptions& options) {
  if (!std::isfinite(options.min_gain)) {
    return absl::InvalidArgumentError("ranking_policy.min_gain: must be finite");
  }
  if (!(options.min_headroom >= 0 && options.min_headroom < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ranking_policy.min_headroom: ", options.min_headroom, " is not in [0, 1)"));
  }
  if (!(options.shift_confidence >= 0 && options.shift_confidence <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("ranking_policy.shift_confidence: ", options.shift_confidence,
                                                   " is not in [0, 1]"));
  }
  return absl::OkStatus();
}

namespace {

// A job's link shares: the candidate's own, or the request's running part's
// (a job is in one or the other, ValidateRankRequest); nullptr when neither.
const std::map<std::string, double>* JobShares(const RankRequest& request, const Candidate& candidate,
                                               const std::string& job) {
  auto own = candidate.links.find(job);
  if (own != candidate.links.end()) return &own->second;
  auto running = request.running.links.find(job);
  return running != request.running.links.end() ? &running->second : nullptr;
}

// Calls visit(profile, share) for each job of `link` that the request defines
// and that has a share of the link in `candidate` (or the running part).
template <typename Visit>
void ForEachJobOnLink(const RankRequest& request, const Candidate& candidate, const LinkResult& link,
                      Visit visit) {
  for (const std::string& job : link.jobs) {
    const Job* spec = nullptr;
    for (const Job& j : request.jobs) {
      if (j.id == job) spec = &j;
    }
    const std::map<std::string, double>* links = JobShares(request, candidate, job);
    if (spec == nullptr || links == nullptr) continue;
    auto share = links->find(link.id);
    if (share == links->end()) continue;
    visit(spec->profile, share->second);
  }
}

}  // namespace

double LinkHeadroom(const RankRequest& request, const Candidate& candidate, const LinkResult& link) {
  if (!(link.capacity_gbps > 0)) return 0;
  double load = 0;
  ForEachJobOnLink(request, candidate, link, [&](const TrafficProfile& profile, double share) {
    load += MeanGbps(profile) * share;
  });
  return 1 - load / link.capacity_gbps;
}

namespace {

// A discrete distribution: value -> probability.
using Distribution = std::map<double, double>;

constexpr size_t kMaxDistributionValues = 4096;

// The distribution of a job's demand at a uniformly random instant.
Distribution DemandDistribution(const TrafficProfile& profile, double share) {
  Distribution d;
  const double period = profile.period_us;
  if (!(period > 0)) return {{0.0, 1.0}};
  for (const DemandSegment& s : Segments(profile)) {
    d[s.gbps * share] += (s.end_us - s.begin_us) / period;
  }
  return d;
}

// The distribution of the sum of independent draws from a and b, binned onto
// kMaxDistributionValues values (each bin at its probability-weighted mean)
// when it has more.
Distribution Convolve(const Distribution& a, const Distribution& b) {
  Distribution sum;
  for (const auto& [x, p] : a) {
    for (const auto& [y, q] : b) sum[x + y] += p * q;
  }
  if (sum.size() <= kMaxDistributionValues) return sum;
  const double lo = sum.begin()->first, hi = sum.rbegin()->first;
  const double width = (hi - lo) / static_cast<double>(kMaxDistributionValues);
  std::vector<std::pair<double, double>> bins(kMaxDistributionValues, {0.0, 0.0});  // (sum of p x, sum of p)
  for (const auto& [x, p] : sum) {
    size_t i = std::min(kMaxDistributionValues - 1, static_cast<size_t>((x - lo) / width));
    bins[i].first += p * x;
    bins[i].second += p;
  }
  Distribution binned;
  for (const auto& [px, p] : bins) {
    if (p > 0) binned[px / p] += p;
  }
  return binned;
}

}  // namespace

double RandomPhaseScore(const RankRequest& request, const Candidate& candidate, const LinkResult& link) {
  if (!(link.capacity_gbps > 0)) return 0;
  Distribution load{{0.0, 1.0}};
  ForEachJobOnLink(request, candidate, link, [&](const TrafficProfile& profile, double share) {
    load = Convolve(load, DemandDistribution(profile, share));
  });
  double excess = 0;
  for (const auto& [x, p] : load) excess += p * std::max(0.0, x - link.capacity_gbps);
  return 1 - excess / link.capacity_gbps;
}

size_t Footprint(const Candidate& candidate) {
  size_t n = 0;
  for (const auto& [job, links] : candidate.links) {
    for (const auto& [link, share] : links) n += share > 0 ? 1 : 0;
  }
  return n;
}

namespace {

size_t PairsAtRisk(const RankedCandidate& c) {
  size_t pairs = 0;
  for (const LinkResult& l : c.links) pairs += l.jobs.size();
  return pairs;
}

}  // namespace

PolicyDecision ApplyRankingPolicy(const RankRequest& request, const RankingPolicyOptions& options,
                                  Ranking& ranking) {
  PolicyDecision decision;
  if (options.discard_loops) {
    std::erase_if(ranking.ranked, [&](const RankedCandidate& c) {
      if (!c.cycle) return false;
      ranking.rejected.push_back({c.candidate, "affinity graph has a loop (discarded, as Cassini)"});
      ++decision.discarded_loops;
      return true;
    });
  }
  if (ranking.ranked.empty()) {
    decision.reason = "none";
    return decision;
  }
  // The host's first ranked candidate: the earliest in the request's order.
  std::map<std::string, size_t> host_order;
  std::map<std::string, const Candidate*> by_id;
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    host_order.emplace(request.candidates[i].id, i);
    by_id.emplace(request.candidates[i].id, &request.candidates[i]);
  }
  auto order_of = [&](const RankedCandidate& c) {
    auto it = host_order.find(c.candidate);
    return it == host_order.end() ? request.candidates.size() : it->second;
  };
  size_t host = 0;
  for (size_t i = 1; i < ranking.ranked.size(); ++i) {
    if (order_of(ranking.ranked[i]) < order_of(ranking.ranked[host])) host = i;
  }
  decision.host_first = ranking.ranked[host].candidate;
  decision.host_first_score = ranking.ranked[host].score;
  decision.score_best = ranking.ranked.front().candidate;
  decision.score_best_score = ranking.ranked.front().score;
  decision.host_first_effective = decision.host_first_score;
  decision.score_best_effective = decision.score_best_score;
  if (options.min_gain < 0) {
    decision.chosen = ranking.ranked.front().candidate;
    decision.reason = "off";
    return decision;
  }
  const RankedCandidate& first = ranking.ranked[host];
  // R + shift_confidence x (S - R), R the mean random-phase score of the
  // contended links (1 when none, as S).
  auto random_score = [&](const RankedCandidate& c) {
    auto spec = by_id.find(c.candidate);
    if (c.links.empty() || spec == by_id.end()) return c.score;
    double random = 0;
    for (const LinkResult& l : c.links) random += RandomPhaseScore(request, *spec->second, l);
    return random / static_cast<double>(c.links.size());
  };
  std::vector<double> effective_of(ranking.ranked.size(), 0), random_of(ranking.ranked.size(), 0);
  for (size_t i = 0; i < ranking.ranked.size(); ++i) {
    const RankedCandidate& c = ranking.ranked[i];
    random_of[i] = random_score(c);
    effective_of[i] = random_of[i] + options.shift_confidence * (c.score - random_of[i]);
  }
  decision.host_first_effective = effective_of[host];
  decision.score_best_effective = effective_of[0];
  auto footprint = [&](const RankedCandidate& c) {
    auto spec = by_id.find(c.candidate);
    return spec == by_id.end() ? std::numeric_limits<size_t>::max() : Footprint(*spec->second);
  };
  // The first test `c` fails ("" when it passes every one).
  auto verdict = [&](size_t i) -> std::string {
    const RankedCandidate& c = ranking.ranked[i];
    auto spec = by_id.find(c.candidate);
    if (spec == by_id.end()) return "footprint";
    // "At least", in doubles. A gain that holds with random phases (the
    // choice of links, not the shifts) needs no trust in the shifts.
    const bool choice_gain =
        options.trust_choice_gains && random_of[i] + 1e-9 >= random_of[host] + options.min_gain;
    if (!choice_gain) {
      if (effective_of[i] + 1e-9 < effective_of[host] + options.min_gain) return "gain";
      if (c.cycle && !c.exact) return "loop";
      for (const LinkResult& l : c.links) {
        if (LinkHeadroom(request, *spec->second, l) < options.min_headroom) return "headroom";
      }
    }
    if (PairsAtRisk(c) > PairsAtRisk(first)) return "pairs";
    if (footprint(c) > footprint(first)) return "footprint";
    return "";
  };
  size_t best = host;
  for (size_t i = 0; i < ranking.ranked.size(); ++i) {
    if (i == host) continue;
    const std::string failed = verdict(i);
    if (i == 0) decision.blocked = failed;
    if (!failed.empty()) continue;
    if (best == host || effective_of[i] > effective_of[best]) best = i;
  }
  // `best` first, the others in Rank()'s order.
  RankedCandidate chosen = std::move(ranking.ranked[best]);
  ranking.ranked.erase(ranking.ranked.begin() + static_cast<std::ptrdiff_t>(best));
  ranking.ranked.insert(ranking.ranked.begin(), std::move(chosen));
  decision.chosen = ranking.ranked.front().candidate;
  decision.reason = best == host ? "host-first" : "overtaken";
  return decision;
}

}  // namespace phasor::placer
