#include "placer/ranking_policy.h"

#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace phasor::placer {
namespace {

using ::testing::HasSubstr;

// j0, j1: 10 ms period, 2 ms Up at 50 Gbit/s (mean 10 Gbit/s each).
TrafficProfile Square() {
  TrafficProfile p;
  p.period_us = 10000;
  p.square = SquareWave{.up_us = 2000, .up_gbps = 50, .start_us = 0, .down_gbps = 0};
  return p;
}

// Candidates in the host's order: "host" (j0 and j1 share l0, 50 Gbit/s),
// "alone" (no shared link), "tight" (both on l1, 22 Gbit/s: headroom
// 1 - 20/22), "loop" (both on l0 and l2).
RankRequest Request() {
  RankRequest r;
  r.links = {{"l0", 50}, {"l1", 22}, {"l2", 50}};
  r.jobs = {{.id = "j0", .profile = Square(), .pinned_shift_us = {}},
            {.id = "j1", .profile = Square(), .pinned_shift_us = {}}};
  r.candidates.push_back({.id = "host", .links = {{"j0", {{"l0", 1}}}, {"j1", {{"l0", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  r.candidates.push_back({.id = "alone", .links = {}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  r.candidates.push_back({.id = "tight", .links = {{"j0", {{"l1", 1}}}, {"j1", {{"l1", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  r.candidates.push_back(
      {.id = "loop", .links = {{"j0", {{"l0", 1}, {"l2", 1}}}, {"j1", {{"l0", 1}, {"l2", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  return r;
}

RankedCandidate Ranked(const std::string& id, double score, std::vector<std::string> links, bool cycle = false,
                       bool exact = true) {
  RankedCandidate c;
  c.candidate = id;
  c.score = score;
  c.cycle = cycle;
  c.exact = exact;
  for (const std::string& l : links) {
    LinkResult r;
    r.id = l;
    r.capacity_gbps = l == "l1" ? 22 : 50;
    r.jobs = {"j0", "j1"};
    c.links.push_back(r);
  }
  return c;
}

std::vector<std::string> Order(const Ranking& r) {
  std::vector<std::string> out;
  for (const RankedCandidate& c : r.ranked) out.push_back(c.candidate);
  return out;
}

TEST(RankingPolicyTest, LinkHeadroomIsTheCapacityTimeLeftByTheUpPhases) {
  const RankRequest r = Request();
  EXPECT_DOUBLE_EQ(LinkHeadroom(r, r.candidates[0], Ranked("host", 1, {"l0"}).links[0]), 1 - 20.0 / 50);
  EXPECT_DOUBLE_EQ(LinkHeadroom(r, r.candidates[2], Ranked("tight", 1, {"l1"}).links[0]), 1 - 20.0 / 22);
}

TEST(RankingPolicyTest, LinkHeadroomAndRandomPhaseScoreCountTheRunningPart) {
  // j1 runs on l0 (the request's running part); the candidate places j0 on l0
  // only: the link still carries both jobs' mean 10 Gbit/s.
  RankRequest r = Request();
  r.running.links = {{"j1", {{"l0", 1}}}};
  const Candidate placed{.id = "j0-on-l0", .links = {{"j0", {{"l0", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false};
  const LinkResult l0 = Ranked("j0-on-l0", 1, {"l0"}).links[0];
  EXPECT_DOUBLE_EQ(LinkHeadroom(r, placed, l0), 1 - 20.0 / 50);
  EXPECT_DOUBLE_EQ(LinkHeadroom(r, placed, l0), LinkHeadroom(Request(), Request().candidates[0], l0));
  EXPECT_DOUBLE_EQ(RandomPhaseScore(r, placed, l0), RandomPhaseScore(Request(), Request().candidates[0], l0));
  // Without the running part the same candidate leaves j1 out: 1 - 10/50.
  r.running.links.clear();
  EXPECT_DOUBLE_EQ(LinkHeadroom(r, placed, l0), 1 - 10.0 / 50);
}

TEST(RankingPolicyTest, TheHostsFirstStandsUnlessBeatenByTheMargin) {
  const RankRequest request = Request();
  Ranking ranking;
  // A candidate 0.04 better than the host's first: not enough.
  RankRequest two = request;
  two.candidates.push_back({.id = "better", .links = two.candidates[0].links, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  ranking.ranked = {Ranked("better", 0.94, {"l0"}), Ranked("host", 0.90, {"l0"})};
  PolicyDecision d = ApplyRankingPolicy(two, {}, ranking);
  EXPECT_EQ(d.host_first, "host");
  EXPECT_EQ(d.chosen, "host");
  EXPECT_EQ(d.reason, "host-first");
  EXPECT_EQ(Order(ranking), (std::vector<std::string>{"host", "better"}));
  // 0.05 better, same pairs at risk, trusted: it overtakes.
  ranking.ranked = {Ranked("better", 0.95, {"l0"}), Ranked("host", 0.90, {"l0"})};
  d = ApplyRankingPolicy(two, {}, ranking);
  EXPECT_EQ(d.chosen, "better");
  EXPECT_EQ(d.reason, "overtaken");
  EXPECT_EQ(Order(ranking), (std::vector<std::string>{"better", "host"}));
}

TEST(RankingPolicyTest, NothingWithMoreJobsOnContendedLinksOvertakes) {
  RankRequest request = Request();
  // The host's first shares no link (score 1 by definition); the other has a
  // better score only by a ranking error: it never overtakes.
  std::swap(request.candidates[0], request.candidates[1]);  // "alone" is now the host's first
  Ranking ranking;
  ranking.ranked = {Ranked("host", 1.0, {"l0"}), Ranked("alone", 0.5, {})};
  const PolicyDecision d = ApplyRankingPolicy(request, {}, ranking);
  EXPECT_EQ(d.host_first, "alone");
  EXPECT_EQ(d.reason, "host-first");
  EXPECT_EQ(Order(ranking), (std::vector<std::string>{"alone", "host"}));
}

TEST(RankingPolicyTest, ACandidateWithALargerFootprintDoesNotOvertake) {
  RankRequest request = Request();
  // "wide": the same contended link as the host's first, but j1 also crosses l2 (3 entries > 2).
  request.candidates.push_back({.id = "wide", .links = {{"j0", {{"l0", 1}}}, {"j1", {{"l0", 1}, {"l2", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  EXPECT_EQ(Footprint(request.candidates[0]), 2u);
  EXPECT_EQ(Footprint(request.candidates.back()), 3u);
  Ranking ranking;
  ranking.ranked = {Ranked("wide", 1.0, {"l0"}), Ranked("host", 0.5, {"l0"})};
  const PolicyDecision d = ApplyRankingPolicy(request, {}, ranking);
  EXPECT_EQ(d.chosen, "host");
  EXPECT_EQ(d.reason, "host-first");
}

TEST(RankingPolicyTest, UntrustedPredictionsDoNotOvertake) {
  const RankRequest request = Request();
  Ranking ranking;
  // "tight": 9 % headroom < 10 %.
  ranking.ranked = {Ranked("tight", 1.0, {"l1"}), Ranked("host", 0.5, {"l0"})};
  EXPECT_EQ(ApplyRankingPolicy(request, {}, ranking).chosen, "host");
  // With a lower headroom bar it is trusted.
  ranking.ranked = {Ranked("tight", 1.0, {"l1"}), Ranked("host", 0.5, {"l0"})};
  EXPECT_EQ(ApplyRankingPolicy(request, {.min_gain = 0.05, .min_headroom = 0.05}, ranking).chosen, "tight");
  // A loop that is not proven exact, with no more pairs than the host's first: not trusted.
  RankRequest looped = request;
  looped.candidates[3].links = {{"j0", {{"l0", 1}}}, {"j1", {{"l0", 1}}}};
  ranking.ranked = {Ranked("loop", 1.0, {"l0"}, /*cycle=*/true, /*exact=*/false), Ranked("host", 0.5, {"l0"})};
  EXPECT_EQ(ApplyRankingPolicy(looped, {}, ranking).chosen, "host");
  ranking.ranked = {Ranked("loop", 1.0, {"l0"}, /*cycle=*/true, /*exact=*/true), Ranked("host", 0.5, {"l0"})};
  EXPECT_EQ(ApplyRankingPolicy(looped, {}, ranking).chosen, "loop");
}

TEST(RankingPolicyTest, OffKeepsRanksOrderAndEmptyIsNone) {
  const RankRequest request = Request();
  Ranking ranking;
  ranking.ranked = {Ranked("tight", 1.0, {"l1"}), Ranked("host", 0.5, {"l0"})};
  const PolicyDecision d = ApplyRankingPolicy(request, {.min_gain = -1, .min_headroom = 0.1}, ranking);
  EXPECT_EQ(d.reason, "off");
  EXPECT_EQ(d.host_first, "host");
  EXPECT_EQ(d.chosen, "tight");
  EXPECT_EQ(Order(ranking), (std::vector<std::string>{"tight", "host"}));
  Ranking empty;
  EXPECT_EQ(ApplyRankingPolicy(request, {}, empty).reason, "none");
}

// Cassini's rule (the ablation): a candidate whose affinity graph has a loop
// is discarded, even when it ranks first; phasor's policy keeps it.
TEST(RankingPolicyTest, DiscardLoopsRejectsLoopCandidatesAsCassini) {
  RankRequest request = Request();
  // In the host's order: "tight" (one 22 Gbit/s link: each Up phase alone
  // exceeds it, score < 1), then "loop" (j0 and j1 both on l0 and l2: a loop,
  // every link interleaved, score 1).
  request.candidates = {request.candidates[2], request.candidates[3]};
  const Ranking ranked = Rank(request);
  ASSERT_EQ(Order(ranked), (std::vector<std::string>{"loop", "tight"}));
  ASSERT_TRUE(ranked.ranked[0].cycle);
  ASSERT_FALSE(ranked.ranked[1].cycle);
  const RankingPolicyOptions cassini{.min_gain = -1, .min_headroom = 0.1, .discard_loops = true};
  Ranking ranking = ranked;
  PolicyDecision d = ApplyRankingPolicy(request, cassini, ranking);
  EXPECT_EQ(d.chosen, "tight");
  EXPECT_EQ(d.discarded_loops, 1u);
  EXPECT_EQ(Order(ranking), (std::vector<std::string>{"tight"}));
  ASSERT_EQ(ranking.rejected.size(), 1u);
  EXPECT_EQ(ranking.rejected[0].candidate, "loop");
  EXPECT_EQ(ranking.rejected[0].reason, "affinity graph has a loop (discarded, as Cassini)");
  // The same ranking in score order without the rule: the loop runs.
  ranking = ranked;
  d = ApplyRankingPolicy(request, {.min_gain = -1, .min_headroom = 0.1}, ranking);
  EXPECT_EQ(d.chosen, "loop");
  EXPECT_EQ(d.discarded_loops, 0u);
  // Only loops: nothing is ranked (the caller runs the host's first, unshifted).
  ranking.ranked = {Ranked("loop", 1.0, {"l0", "l2"}, /*cycle=*/true)};
  ranking.rejected.clear();
  d = ApplyRankingPolicy(request, cassini, ranking);
  EXPECT_EQ(d.reason, "none");
  EXPECT_TRUE(ranking.ranked.empty());
  EXPECT_EQ(ranking.rejected.size(), 1u);
}

TEST(RankingPolicyTest, RandomPhaseScoreIsTheExpectedScoreWithShiftsNotHeld) {
  const RankRequest r = Request();
  // j0, j1 on l0 (50 Gbit/s), each Up 20 % of the time at 50: both Up with
  // probability 0.04 (load 100, excess 50): 1 - 0.04 x 50 / 50.
  EXPECT_NEAR(RandomPhaseScore(r, r.candidates[0], Ranked("host", 1, {"l0"}).links[0]), 0.96, 1e-12);
  // On l1 (22 Gbit/s): load 100 with probability 0.04 (excess 78), 50 with
  // 0.32 (excess 28): 1 - 12.08 / 22.
  EXPECT_NEAR(RandomPhaseScore(r, r.candidates[2], Ranked("tight", 1, {"l1"}).links[0]), 1 - 12.08 / 22, 1e-12);
}

// RandomPhaseScore as it was first written: each distribution a
// std::map<double, double> (terms accumulated in the order they arrive), the
// sum binned onto 4096 values at their probability-weighted means when it has
// more. The flat version must give the same score bit for bit.
double RandomPhaseScoreAsFirstWritten(const std::vector<std::pair<TrafficProfile, double>>& jobs, double cap) {
  using Map = std::map<double, double>;
  constexpr size_t kMax = 4096;
  auto demand = [](const TrafficProfile& profile, double share) {
    Map d;
    for (const DemandSegment& s : Segments(profile)) d[s.gbps * share] += (s.end_us - s.begin_us) / profile.period_us;
    return d;
  };
  auto convolve = [&](const Map& a, const Map& b) {
    Map sum;
    for (const auto& [x, p] : a) {
      for (const auto& [y, q] : b) sum[x + y] += p * q;
    }
    if (sum.size() <= kMax) return sum;
    const double lo = sum.begin()->first, hi = sum.rbegin()->first;
    const double width = (hi - lo) / static_cast<double>(kMax);
    std::vector<std::pair<double, double>> bins(kMax, {0.0, 0.0});
    for (const auto& [x, p] : sum) {
      const size_t i = std::min(kMax - 1, static_cast<size_t>((x - lo) / width));
      bins[i].first += p * x;
      bins[i].second += p;
    }
    Map binned;
    for (const auto& [px, p] : bins) {
      if (p > 0) binned[px / p] += p;
    }
    return binned;
  };
  Map load{{0.0, 1.0}};
  for (const auto& [profile, share] : jobs) load = convolve(load, demand(profile, share));
  double excess = 0;
  for (const auto& [x, p] : load) excess += p * std::max(0.0, x - cap);
  return 1 - excess / cap;
}

TEST(RankingPolicyTest, RandomPhaseScoreIsTheFirstWrittenOneBitForBit) {
  std::mt19937_64 rng(41);
  for (int instance = 0; instance < 24; ++instance) {
    // 1-5 jobs: square waves (a few values) or jittered bursts (a value per
    // bin: sums past 4096 values, binned), shares below and at 1.
    const int jobs = 1 + instance % 5;
    RankRequest r;
    r.links = {{"l", 20.0 + static_cast<double>(rng() % 60)}};
    Candidate c{.id = "c", .links = {}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false};
    std::vector<std::pair<TrafficProfile, double>> reference;
    LinkResult link;
    link.id = "l";
    link.capacity_gbps = r.links[0].capacity_gbps;
    for (int j = 0; j < jobs; ++j) {
      TrafficProfile p;
      if (instance % 2 == 0) {
        p.period_us = 1000 * (20 + static_cast<uint32_t>(rng() % 200));
        p.square = SquareWave{.up_us = p.period_us / 4, .up_gbps = 10.0 + static_cast<double>(rng() % 40),
                              .start_us = 0, .down_gbps = rng() % 3 == 0 ? 1.5 : 0.0};
      } else {
        const uint32_t bins = 50 + static_cast<uint32_t>(rng() % 250);
        p.period_us = bins * 1000;
        p.bin_us = 1000;
        p.gbps.assign(bins, 0.0);
        std::uniform_real_distribution<double> rate(0, 45);
        for (uint32_t k = bins / 2; k < bins; ++k) p.gbps[k] = rate(rng);
      }
      const double share = rng() % 2 == 0 ? 1.0 : 0.25 + 0.5 * std::uniform_real_distribution<double>(0, 1)(rng);
      const std::string id = "j" + std::to_string(j);
      r.jobs.push_back({.id = id, .profile = p, .pinned_shift_us = {}});
      c.links[id]["l"] = share;
      link.jobs.push_back(id);
      reference.emplace_back(p, share);
    }
    EXPECT_EQ(RandomPhaseScore(r, c, link), RandomPhaseScoreAsFirstWritten(reference, link.capacity_gbps))
        << "instance " << instance;
  }
}

TEST(RankingPolicyTest, WithFullConfidenceTheEffectiveScoreIsTheScore) {
  // shift_confidence 1 (the default): R + 1 x (S - R) is S, and the policy
  // reports S itself for both candidates it compared.
  RankRequest r = Request();
  Ranking ranking;
  ranking.ranked = {Ranked("alone", 1.0, {}), Ranked("host", 0.7, {"l0"})};
  const PolicyDecision d = ApplyRankingPolicy(r, RankingPolicyOptions{}, ranking);
  EXPECT_EQ(d.host_first, "host");
  EXPECT_EQ(d.host_first_effective, 0.7);
  EXPECT_EQ(d.score_best_effective, 1.0);
}

TEST(RankingPolicyTest, ShiftConfidenceDiscountsTheGainOfShiftsNotOfTheChoice) {
  RankRequest request = Request();
  request.candidates.push_back({.id = "better", .links = request.candidates[0].links, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  // "better" gains 0.05 over "host" on the same link with the same jobs: all
  // of it from its shifts (the random-phase score of both is 0.96).
  Ranking ranking;
  ranking.ranked = {Ranked("better", 0.95, {"l0"}), Ranked("host", 0.90, {"l0"})};
  PolicyDecision d = ApplyRankingPolicy(request, {.min_gain = 0.05, .min_headroom = 0.1, .shift_confidence = 0.5}, ranking);
  EXPECT_EQ(d.chosen, "host");
  EXPECT_EQ(d.blocked, "gain");
  EXPECT_NEAR(d.host_first_effective, 0.96 + 0.5 * (0.90 - 0.96), 1e-12);
  EXPECT_NEAR(d.score_best_effective, 0.96 + 0.5 * (0.95 - 0.96), 1e-12);
  EXPECT_EQ(d.score_best, "better");
  EXPECT_DOUBLE_EQ(d.score_best_score, 0.95);
  // "alone" shares no link (effective 1): its gain is the choice's, 1 - 0.96
  // with no confidence in the host's shifts, 1 - 0.93 with half.
  ranking.ranked = {Ranked("alone", 1.0, {}), Ranked("host", 0.90, {"l0"})};
  RankingPolicyOptions no_confidence{.min_gain = 0.05, .min_headroom = 0.1, .shift_confidence = 0};
  no_confidence.prefer_less_at_risk = false;
  d = ApplyRankingPolicy(request, no_confidence, ranking);
  EXPECT_EQ(d.chosen, "host");
  EXPECT_EQ(d.blocked, "gain");
  // A gain too small to overtake, but as good a prediction with nothing at
  // risk: with prefer_less_at_risk (the default) it goes first.
  ranking.ranked = {Ranked("alone", 1.0, {}), Ranked("host", 0.90, {"l0"})};
  no_confidence.prefer_less_at_risk = true;
  d = ApplyRankingPolicy(request, no_confidence, ranking);
  EXPECT_EQ(d.chosen, "alone");
  EXPECT_EQ(d.reason, "less-at-risk");
  EXPECT_EQ(d.blocked, "gain");
  ranking.ranked = {Ranked("alone", 1.0, {}), Ranked("host", 0.90, {"l0"})};
  d = ApplyRankingPolicy(request, {.min_gain = 0.05, .min_headroom = 0.1, .shift_confidence = 0.5}, ranking);
  EXPECT_EQ(d.chosen, "alone");
  EXPECT_EQ(d.reason, "overtaken");
  EXPECT_EQ(d.blocked, "");
}

// A gain that holds with random phases (less load on the shared link) is
// the choice's, not the shifts': with trust_choice_gains it needs no headroom.
TEST(RankingPolicyTest, AGainOfTheChoiceNeedsNoTrustInTheShifts) {
  RankRequest request = Request();
  request.links.push_back({"l3", 15});
  request.candidates.insert(request.candidates.begin(),
                            {.id = "narrow", .links = {{"j0", {{"l3", 1}}}, {"j1", {{"l3", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  RankedCandidate narrow = Ranked("narrow", 0.3, {"l3"});
  LinkResult on_l3 = narrow.links[0];
  on_l3.capacity_gbps = 15;
  narrow.links = {on_l3};
  // "tight" (l1, 22 Gbit/s: headroom 0.09 < 0.1) against the host's first on
  // l3 (15 Gbit/s): random-phase scores 1 - 12.08/22 against 1 - 14.6/15.
  EXPECT_NEAR(RandomPhaseScore(request, request.candidates[0], narrow.links[0]), 1 - 14.6 / 15, 1e-12);
  Ranking ranking;
  ranking.ranked = {Ranked("tight", 0.5, {"l1"}), narrow};
  // By default every gain needs the trust tests: the headroom keeps the host's first.
  PolicyDecision d = ApplyRankingPolicy(request, {}, ranking);
  EXPECT_EQ(d.chosen, "narrow");
  EXPECT_EQ(d.blocked, "headroom");
  ranking.ranked = {Ranked("tight", 0.5, {"l1"}), narrow};
  d = ApplyRankingPolicy(request, {.min_gain = 0.05, .min_headroom = 0.1, .shift_confidence = 1, .trust_choice_gains = true},
                         ranking);
  EXPECT_EQ(d.host_first, "narrow");
  EXPECT_EQ(d.chosen, "tight");
  EXPECT_EQ(d.reason, "overtaken");
  EXPECT_EQ(Order(ranking), (std::vector<std::string>{"tight", "narrow"}));
}

TEST(RankingPolicyTest, BetweenEqualPredictionsLessAtRiskGoesFirst) {
  RankRequest request = Request();
  // All three predicted 1 (no link over capacity): the host's first shares
  // l0 (two jobs at risk on it), "loop" shares l0 and l2, "alone" nothing.
  Ranking ranking;
  ranking.ranked = {Ranked("host", 1.0, {"l0"}), Ranked("alone", 1.0, {}), Ranked("loop", 1.0, {"l0", "l2"})};
  PolicyDecision d = ApplyRankingPolicy(request, RankingPolicyOptions{}, ranking);
  EXPECT_EQ(d.chosen, "alone");
  EXPECT_EQ(d.reason, "less-at-risk");
  EXPECT_EQ(Order(ranking), (std::vector<std::string>{"alone", "host", "loop"}));
  // Not when its prediction is worse, nor when it puts more at risk.
  ranking.ranked = {Ranked("host", 1.0, {"l0"}), Ranked("alone", 0.99, {}), Ranked("loop", 1.0, {"l0", "l2"})};
  d = ApplyRankingPolicy(request, RankingPolicyOptions{}, ranking);
  EXPECT_EQ(d.chosen, "host");
  EXPECT_EQ(d.reason, "host-first");
  // Off: the host's first stands.
  RankingPolicyOptions off;
  off.prefer_less_at_risk = false;
  ranking.ranked = {Ranked("host", 1.0, {"l0"}), Ranked("alone", 1.0, {})};
  d = ApplyRankingPolicy(request, off, ranking);
  EXPECT_EQ(d.chosen, "host");
}

// A candidate that shares no link because it spreads a job over more
// servers (half a server's GPUs on each), or leaves one of the host's first's
// jobs waiting, is not "less at risk": the spread job sends over the network
// what it exchanged inside a server, the waiting one waits. With each job on
// as many servers or fewer, it is.
TEST(RankingPolicyTest, LessAtRiskKeepsTheHostsJobsAndShapes) {
  RankRequest request = Request();
  Ranking ranking;
  RankedCandidate host = Ranked("host", 1.0, {"l0"});
  host.rank_order = {{"j0", {"s0", "s0", "s1", "s1"}}, {"j1", {"s4", "s4"}}};  // 2 and 1 servers
  RankedCandidate other = Ranked("alone", 1.0, {});
  auto decide = [&](std::map<std::string, std::vector<std::string>> order) {
    other.rank_order = std::move(order);
    ranking.ranked = {host, other};
    return ApplyRankingPolicy(request, RankingPolicyOptions{}, ranking);
  };
  PolicyDecision d = decide({{"j0", {"s2", "s3", "s6", "s7"}}, {"j1", {"s5", "s5"}}});  // j0 on 4
  EXPECT_EQ(d.chosen, "host");
  EXPECT_EQ(d.reason, "host-first");
  d = decide({{"j0", {"s2", "s2", "s3", "s3"}}});  // j1 left waiting
  EXPECT_EQ(d.chosen, "host");
  d = decide({{"j0", {"s2", "s2", "s3", "s3"}}, {"j1", {"s5", "s5"}}});  // the host's shapes
  EXPECT_EQ(d.chosen, "alone");
  EXPECT_EQ(d.reason, "less-at-risk");
  d = decide({{"j0", {"s2", "s2", "s2", "s2"}}, {"j1", {"s5", "s5"}}});  // j0 on fewer servers
  EXPECT_EQ(d.chosen, "alone");
  // Candidates of links alone (no rank orders) are judged on their links.
  host.rank_order.clear();
  d = decide({});
  EXPECT_EQ(d.chosen, "alone");
}

TEST(RankingPolicyTest, RejectsBadOptions) {
  EXPECT_TRUE(ValidateRankingPolicyOptions({}).ok());
  EXPECT_THAT(std::string(ValidateRankingPolicyOptions({.min_gain = 0, .min_headroom = 1}).message()),
              HasSubstr("ranking_policy.min_headroom: 1 is not in [0, 1)"));
  EXPECT_THAT(std::string(ValidateRankingPolicyOptions({.min_gain = std::numeric_limits<double>::infinity(), .min_headroom = 0}).message()),
              HasSubstr("ranking_policy.min_gain: must be finite"));
  EXPECT_EQ(std::string(ValidateRankingPolicyOptions({.min_gain = 0, .min_headroom = 0, .shift_confidence = 1.5}).message()),
            "ranking_policy.shift_confidence: 1.5 is not in [0, 1]");
}

}  // namespace
}  // namespace phasor::placer
