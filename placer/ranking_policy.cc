#include "placer/ranking_policy.h"

#include <cmath>
#include <limits>
#include <map>
#include <utility>

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
  return absl::OkStatus();
}

double LinkHeadroom(const RankRequest& request, const Candidate& candidate, const LinkResult& link) {
  if (!(link.capacity_gbps > 0)) return 0;
  double load = 0;
  for (const std::string& job : link.jobs) {
    const Job* spec = nullptr;
    for (const Job& j : request.jobs) {
      if (j.id == job) spec = &j;
    }
    auto links = candidate.links.find(job);
    if (spec == nullptr || links == candidate.links.end()) continue;
    auto share = links->second.find(link.id);
    if (share == links->second.end()) continue;
    load += MeanGbps(spec->profile) * share->second;
  }
  return 1 - load / link.capacity_gbps;
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
  if (options.min_gain < 0) {
    decision.chosen = ranking.ranked.front().candidate;
    decision.reason = "off";
    return decision;
  }
  const RankedCandidate& first = ranking.ranked[host];
  auto footprint = [&](const RankedCandidate& c) {
    auto spec = by_id.find(c.candidate);
    return spec == by_id.end() ? std::numeric_limits<size_t>::max() : Footprint(*spec->second);
  };
  auto trusted = [&](const RankedCandidate& c) {
    if (c.cycle && !c.exact) return false;
    auto spec = by_id.find(c.candidate);
    if (spec == by_id.end()) return false;
    for (const LinkResult& l : c.links) {
      if (LinkHeadroom(request, *spec->second, l) < options.min_headroom) return false;
    }
    return true;
  };
  size_t best = host;
  for (size_t i = 0; i < ranking.ranked.size(); ++i) {
    const RankedCandidate& c = ranking.ranked[i];
    if (i == host || c.score + 1e-9 < first.score + options.min_gain) continue;  // "at least", in doubles
    if (PairsAtRisk(c) > PairsAtRisk(first) || footprint(c) > footprint(first) || !trusted(c)) continue;
    if (best == host || c.score > ranking.ranked[best].score) best = i;
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
