#include "placer/ranking_policy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
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

// A discrete distribution: (value, probability), values distinct and
// ascending. The arithmetic below is that of accumulating into a
// std::map<double, double> (each value's probability summed in the order its
// terms arrive, values visited in ascending order), so every result is the
// same bit for bit, without a tree node per value.
using Distribution = std::vector<std::pair<double, double>>;

constexpr size_t kMaxDistributionValues = 4096;

// `terms` (value, weight) grouped by value: each value once, ascending, its
// weights summed in the order they appear in `terms` (a stable sort keeps
// that order among equal values).
Distribution Grouped(std::vector<std::pair<double, double>>& terms) {
  std::stable_sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Distribution out;
  for (const auto& [v, w] : terms) {
    if (out.empty() || out.back().first < v) {
      out.emplace_back(v, 0.0);
    }
    out.back().second += w;
  }
  return out;
}

// The distribution of a job's demand at a uniformly random instant.
Distribution DemandDistribution(const TrafficProfile& profile, double share) {
  const double period = profile.period_us;
  if (!(period > 0)) return {{0.0, 1.0}};
  std::vector<std::pair<double, double>> terms;
  for (const DemandSegment& s : Segments(profile)) terms.emplace_back(s.gbps * share, (s.end_us - s.begin_us) / period);
  return Grouped(terms);
}

// The distribution of the sum of independent draws from a and b, binned onto
// kMaxDistributionValues values (each bin at its probability-weighted mean)
// when it has more. The terms p x q of a sum x + y arrive in the order of x,
// then y (both ascending).
//
// The bins are [lo + i w, lo + (i + 1) w) of the sum's range, w its width
// over kMaxDistributionValues. Every term goes first to its bin (a stable
// counting sort: each bin keeps the terms' order), each bin is grouped by
// value, and only then it is known whether there are more values than
// kMaxDistributionValues: if not, the groups are the sum; if so, each bin is
// its groups' weighted mean. The bins are where the binning would put each
// value anyway, and grouping a bin sorts only its own terms.
Distribution Convolve(const Distribution& a, const Distribution& b) {
  const size_t terms = a.size() * b.size();
  if (terms == 0) return {};
  const double lo = a.front().first + b.front().first, hi = a.back().first + b.back().first;
  if (terms <= kMaxDistributionValues || !(hi > lo)) {
    std::vector<std::pair<double, double>> all;
    all.reserve(terms);
    for (const auto& [x, p] : a) {
      for (const auto& [y, q] : b) all.emplace_back(x + y, p * q);
    }
    return Grouped(all);
  }
  const double width = (hi - lo) / static_cast<double>(kMaxDistributionValues);
  auto bin_of = [&](double v) { return std::min(kMaxDistributionValues - 1, static_cast<size_t>((v - lo) / width)); };
  // Scratch reused by the thread's later calls (a sum of 4096 x 500 terms is
  // 32 MiB of them).
  thread_local std::vector<uint16_t> bin;
  thread_local std::vector<std::pair<double, double>> by_bin;
  std::vector<size_t> start(kMaxDistributionValues + 1, 0);
  bin.resize(terms);
  size_t t = 0;
  for (const auto& [x, p] : a) {
    for (const auto& [y, q] : b) {
      const size_t i = bin_of(x + y);
      bin[t++] = static_cast<uint16_t>(i);
      ++start[i + 1];
    }
  }
  for (size_t i = 0; i < kMaxDistributionValues; ++i) start[i + 1] += start[i];
  by_bin.resize(terms);
  {
    std::vector<size_t> next(start.begin(), start.end() - 1);
    t = 0;
    for (const auto& [x, p] : a) {
      for (const auto& [y, q] : b) by_bin[next[bin[t++]]++] = {x + y, p * q};
    }
  }
  // Each bin grouped in place: its distinct values, ascending, at the front
  // of its range.
  std::vector<size_t> groups(kMaxDistributionValues, 0);
  size_t values = 0;
  for (size_t i = 0; i < kMaxDistributionValues; ++i) {
    if (start[i] == start[i + 1]) continue;
    std::stable_sort(by_bin.begin() + static_cast<ptrdiff_t>(start[i]),
                     by_bin.begin() + static_cast<ptrdiff_t>(start[i + 1]),
                     [](const auto& l, const auto& r) { return l.first < r.first; });
    size_t w = start[i];  // the group being summed
    for (size_t r = start[i]; r < start[i + 1]; ++r) {
      const auto [v, weight] = by_bin[r];
      if (r == start[i] || by_bin[w].first < v) {
        if (r != start[i]) ++w;
        by_bin[w] = {v, 0.0};
      }
      by_bin[w].second += weight;
    }
    groups[i] = w - start[i] + 1;
    values += groups[i];
  }
  Distribution sum;
  if (values <= kMaxDistributionValues) {
    sum.reserve(values);
    for (size_t i = 0; i < kMaxDistributionValues; ++i) {
      const auto first = by_bin.begin() + static_cast<ptrdiff_t>(start[i]);
      sum.insert(sum.end(), first, first + static_cast<ptrdiff_t>(groups[i]));
    }
    return sum;
  }
  // (sum of p x, sum of p) per bin, each bin's values ascending; then the
  // bins' means, merged where two are equal (as a map would).
  std::vector<std::pair<double, double>> means;
  for (size_t i = 0; i < kMaxDistributionValues; ++i) {
    double px = 0, pw = 0;
    for (size_t k = 0; k < groups[i]; ++k) {
      const auto& [x, p] = by_bin[start[i] + k];
      px += p * x;
      pw += p;
    }
    if (pw > 0) means.emplace_back(px / pw, pw);
  }
  return Grouped(means);
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

size_t DistinctServers(std::vector<std::string> servers) {
  std::sort(servers.begin(), servers.end());
  return static_cast<size_t>(std::unique(servers.begin(), servers.end()) - servers.begin());
}

// Whether `c` places every job `host` places from server form (their rank
// orders), each on at most as many servers: a candidate that leaves one of
// them waiting, or spreads one over more servers (which then sends over the
// network what it exchanged inside a server, a cost its profile does not
// show), is not "less at risk" whatever its links. Candidates of links alone
// (no rank orders) pass.
bool KeepsTheHostsJobsAndShapes(const RankedCandidate& c, const RankedCandidate& host) {
  for (const auto& [job, order] : host.rank_order) {
    auto it = c.rank_order.find(job);
    if (it == c.rank_order.end()) return false;
    if (DistinctServers(it->second) > DistinctServers(order)) return false;
  }
  return true;
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
  // With shift_confidence 1 and no trust in choice gains, R + (S - R) is S
  // and R is read nowhere: it is not computed (it is the policy's costliest
  // part: a convolution per contended link).
  const bool needs_random = options.shift_confidence != 1 || options.trust_choice_gains;
  std::vector<double> effective_of(ranking.ranked.size(), 0), random_of(ranking.ranked.size(), 0);
  for (size_t i = 0; i < ranking.ranked.size(); ++i) {
    const RankedCandidate& c = ranking.ranked[i];
    if (!needs_random) {
      effective_of[i] = random_of[i] = c.score;
      continue;
    }
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
  // No predicted gain overtook: between equal predictions, the candidate with
  // less at risk: fewer (job, contended link) pairs, fewer jobs whose shift
  // must be delivered, fewer (job, link) entries (links to share with later
  // jobs); none of them more than the host's first, and the host's first's
  // jobs all placed, none on more servers (KeepsTheHostsJobsAndShapes).
  bool less_at_risk = false;
  if (best == host && options.prefer_less_at_risk) {
    auto risk = [&](size_t i) {
      const RankedCandidate& c = ranking.ranked[i];
      size_t shifted = 0;
      for (const auto& [job, shift] : c.shifts_us) shifted += shift != 0;
      return std::array<size_t, 3>{PairsAtRisk(c), shifted, footprint(c)};
    };
    const std::array<size_t, 3> h = risk(host);
    for (size_t i = 0; i < ranking.ranked.size(); ++i) {
      const RankedCandidate& c = ranking.ranked[i];
      if (i == host || effective_of[i] + 1e-9 < effective_of[host] || (c.cycle && !c.exact)) continue;
      if (!KeepsTheHostsJobsAndShapes(c, ranking.ranked[host])) continue;
      const std::array<size_t, 3> r = risk(i);
      if (r[0] > h[0] || r[1] > h[1] || r[2] > h[2] || r == h) continue;
      if (best == host || r < risk(best)) best = i;
    }
    less_at_risk = best != host;
  }
  // `best` first, the others in Rank()'s order.
  RankedCandidate chosen = std::move(ranking.ranked[best]);
  ranking.ranked.erase(ranking.ranked.begin() + static_cast<std::ptrdiff_t>(best));
  ranking.ranked.insert(ranking.ranked.begin(), std::move(chosen));
  decision.chosen = ranking.ranked.front().candidate;
  decision.reason = best == host ? "host-first" : less_at_risk ? "less-at-risk" : "overtaken";
  return decision;
}

}  // namespace phasor::placer
