#include "placer/ranker.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/link_score.h"
#include "placer/shift_solver.h"

namespace phasor::placer {
namespace ranker_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint32_t kQ = 1000;

TrafficProfile Square(uint32_t period_bins, uint32_t up_bins, double gbps, uint32_t start = 0) {
  TrafficProfile p;
  p.period_us = period_bins * kQ;
  p.square = SquareWave{.up_us = up_bins * kQ, .up_gbps = gbps, .start_us = start * kQ};
  return p;
}

TrafficProfile RandomProfile(std::mt19937_64& rng, uint32_t bins) {
  std::uniform_real_distribution<double> unit(0, 1);
  TrafficProfile p;
  p.period_us = bins * kQ;
  p.bin_us = kQ;
  const double idle = 0.3 + 0.5 * unit(rng);
  for (uint32_t k = 0; k < bins; ++k) p.gbps.push_back(unit(rng) < idle ? 0.0 : 40 * unit(rng));
  p.gbps[rng() % bins] = 20 + 20 * unit(rng);  // never idle throughout
  return p;
}

// A request whose candidate 0 puts `link_jobs[l]` on link "l<l>" with share 1.
RankRequest Request(const std::vector<TrafficProfile>& profiles,
                    const std::vector<std::vector<size_t>>& link_jobs, double cap) {
  RankRequest r;
  for (size_t j = 0; j < profiles.size(); ++j) {
    r.jobs.push_back({.id = absl::StrCat("j", j), .profile = profiles[j], .pinned_shift_us = {}});
  }
  Candidate c{.id = "c0", .links = {}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false};
  for (size_t l = 0; l < link_jobs.size(); ++l) {
    r.links.push_back({.id = absl::StrCat("l", l), .capacity_gbps = cap});
    for (size_t j : link_jobs[l]) c.links[absl::StrCat("j", j)][absl::StrCat("l", l)] = 1.0;
  }
  r.candidates.push_back(c);
  return r;
}

std::map<std::string, uint32_t> Shifts(const RankedCandidate& c) {
  return {c.shifts_us.begin(), c.shifts_us.end()};
}

// The score of link `link` of `request` with the given shifts (us), from the
// public link-score API.
double AchievedLinkScore(const RankRequest& request, const std::vector<size_t>& jobs, double cap,
                         const std::map<std::string, uint32_t>& shifts) {
  std::vector<LinkDemand> demands;
  for (size_t j : jobs) demands.push_back({&request.jobs[j].profile, 1.0});
  const UnifiedCircle circle = *BuildUnifiedCircle(demands, request.options.circle);
  std::vector<uint32_t> bins;
  for (size_t p = 0; p < jobs.size(); ++p) {
    const uint32_t t = shifts.at(request.jobs[jobs[p]].id);
    EXPECT_EQ(t % circle.quantum_us, 0u) << "shift " << t << " is not a whole number of bins";
    bins.push_back(t / circle.quantum_us % circle.JobBins(p));
  }
  return LinkScore(circle, cap, bins);
}

double OptimumAlone(const RankRequest& request, const std::vector<size_t>& jobs, double cap) {
  std::vector<LinkDemand> demands;
  for (size_t j : jobs) demands.push_back({&request.jobs[j].profile, 1.0});
  const UnifiedCircle circle = *BuildUnifiedCircle(demands, request.options.circle);
  return SolveLink(circle, cap, {}, request.options.solver).score;
}

TEST(RankTest, SpecExampleShapeAndTwoJobsInterleave) {
  RankRequest r = Request({Square(200, 90, 45), Square(200, 80, 40)}, {{0, 1}}, 50);
  ASSERT_TRUE(ValidateRankRequest(r).ok());
  const Ranking ranking = Rank(r);
  ASSERT_EQ(ranking.ranked.size(), 1u);
  const RankedCandidate& c = ranking.ranked[0];
  EXPECT_EQ(c.candidate, "c0");
  EXPECT_DOUBLE_EQ(c.score, 1.0);
  EXPECT_DOUBLE_EQ(c.min_link_score, 1.0);
  EXPECT_FALSE(c.cycle);
  EXPECT_TRUE(c.exact);
  ASSERT_EQ(c.links.size(), 1u);
  EXPECT_EQ(c.links[0].id, "l0");
  EXPECT_THAT(c.links[0].jobs, ElementsAre("j0", "j1"));
  EXPECT_EQ(c.links[0].quantum_us, kQ);
  // j0 is the root at 0; j1's 80 ms Up phase must sit in j0's 110 ms Down phase.
  const auto shifts = Shifts(c);
  EXPECT_EQ(shifts.at("j0"), 0u);
  EXPECT_GE(shifts.at("j1"), 90000u);
  EXPECT_LE(shifts.at("j1"), 120000u);
}

TEST(RankTest, TreeComponentsKeepEveryLinksOwnOptimum) {
  std::mt19937_64 rng(11);
  // Chains and stars over 3-5 jobs: bipartite trees.
  const std::vector<std::vector<std::vector<size_t>>> shapes = {
      {{0, 1}, {1, 2}},                  // chain
      {{0, 1}, {1, 2}, {2, 3}},          // longer chain
      {{0, 1, 2}, {2, 3}},               // a three-job link
      {{0, 1}, {0, 2}, {0, 3}},          // star around job 0
      {{0, 1}, {1, 2}, {1, 3}, {3, 4}},  // branching
  };
  static const uint32_t kPeriods[] = {10, 12, 15, 20, 24, 30, 40};
  for (int trial = 0; trial < 60; ++trial) {
    const auto& shape = shapes[trial % shapes.size()];
    size_t jobs = 0;
    for (const auto& l : shape) for (size_t j : l) jobs = std::max(jobs, j + 1);
    std::vector<TrafficProfile> profiles;
    for (size_t j = 0; j < jobs; ++j) {
      profiles.push_back(RandomProfile(rng, kPeriods[rng() % std::size(kPeriods)]));
    }
    const double cap = 30 + 20 * std::uniform_real_distribution<double>(0, 1)(rng);
    const RankRequest r = Request(profiles, shape, cap);
    const Ranking ranking = Rank(r);
    ASSERT_EQ(ranking.ranked.size(), 1u);
    const RankedCandidate& c = ranking.ranked[0];
    EXPECT_FALSE(c.cycle);
    EXPECT_TRUE(c.exact);
    const auto shifts = Shifts(c);
    ASSERT_EQ(c.links.size(), shape.size());
    double sum = 0;
    for (size_t l = 0; l < shape.size(); ++l) {
      const double optimum = OptimumAlone(r, shape[l], cap);
      EXPECT_NEAR(c.links[l].score, optimum, 1e-9) << "trial " << trial << " link " << l;
      EXPECT_NEAR(c.links[l].optimal_score, optimum, 1e-9);
      EXPECT_NEAR(AchievedLinkScore(r, shape[l], cap, shifts), c.links[l].score, 1e-9);
      sum += optimum;
    }
    EXPECT_NEAR(c.score, sum / shape.size(), 1e-9);
  }
}

// The assignment a spanning tree gives (section 4), computed here from the
// public link solver, and its mean link score.
double SpanningTreeScore(const RankRequest& r, const std::vector<std::vector<size_t>>& shape,
                         double cap, const std::vector<std::pair<size_t, size_t>>& tree) {
  std::vector<std::vector<uint32_t>> link_shift(shape.size());  // bins, per position
  for (size_t l = 0; l < shape.size(); ++l) {
    std::vector<LinkDemand> demands;
    for (size_t j : shape[l]) demands.push_back({&r.jobs[j].profile, 1.0});
    const UnifiedCircle circle = *BuildUnifiedCircle(demands, r.options.circle);
    link_shift[l] = SolveLink(circle, cap, {}, r.options.solver).shifts;
  }
  std::map<size_t, int64_t> t = {{0, 0}};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [j, l] : tree) {
      if (!t.contains(j)) continue;
      for (const auto& [k, l2] : tree) {
        if (l2 != l || t.contains(k)) continue;
        const auto pos = [&](size_t x) {
          return std::find(shape[l].begin(), shape[l].end(), x) - shape[l].begin();
        };
        const int64_t period = r.jobs[k].profile.period_us;
        const int64_t v = t[j] - int64_t{link_shift[l][pos(j)]} * kQ + int64_t{link_shift[l][pos(k)]} * kQ;
        t[k] = ((v % period) + period) % period;
        grew = true;
      }
    }
  }
  std::map<std::string, uint32_t> shifts;
  for (const auto& [j, v] : t) shifts[r.jobs[j].id] = static_cast<uint32_t>(v);
  double sum = 0;
  for (size_t l = 0; l < shape.size(); ++l) sum += AchievedLinkScore(r, shape[l], cap, shifts);
  return sum / shape.size();
}

TEST(RankTest, LoopsDoAtLeastAsWellAsEverySpanningTreeAssignment) {
  std::mt19937_64 rng(5);
  // Triangle: three jobs pairwise on three links (6 edges, 6 vertices: one loop).
  const std::vector<std::vector<size_t>> shape = {{0, 1}, {1, 2}, {0, 2}};
  std::vector<std::pair<size_t, size_t>> edges;
  for (size_t l = 0; l < shape.size(); ++l) for (size_t j : shape[l]) edges.emplace_back(j, l);
  static const uint32_t kPeriods[] = {10, 12, 20, 30};
  int improved = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<TrafficProfile> profiles;
    for (int j = 0; j < 3; ++j) profiles.push_back(RandomProfile(rng, kPeriods[rng() % 4]));
    const double cap = 30 + 20 * std::uniform_real_distribution<double>(0, 1)(rng);
    const RankRequest r = Request(profiles, shape, cap);
    const RankedCandidate c = Rank(r).ranked.at(0);
    EXPECT_TRUE(c.cycle);
    bool all_at_optimum = true;
    for (const LinkResult& l : c.links) {
      all_at_optimum &= l.exact && std::abs(l.score - l.optimal_score) < 1e-9;
    }
    EXPECT_EQ(c.exact, all_at_optimum) << "exact is claimed only when every link is at its optimum";
    double best_tree = -1e300;
    for (size_t drop = 0; drop < edges.size(); ++drop) {
      auto tree = edges;
      tree.erase(tree.begin() + drop);
      best_tree = std::max(best_tree, SpanningTreeScore(r, shape, cap, tree));
    }
    EXPECT_GE(c.score, best_tree - 1e-9) << "trial " << trial;
    improved += c.score > best_tree + 1e-9;
    // The reported scores are the ones the shifts achieve.
    const auto shifts = Shifts(c);
    double sum = 0;
    for (size_t l = 0; l < shape.size(); ++l) {
      EXPECT_NEAR(AchievedLinkScore(r, shape[l], cap, shifts), c.links[l].score, 1e-9);
      EXPECT_LE(c.links[l].score, c.links[l].optimal_score + 1e-9);
      sum += c.links[l].score;
    }
    EXPECT_NEAR(c.score, sum / 3, 1e-9);
  }
  EXPECT_GT(improved, 0) << "the joint descent never improved on a spanning tree";
}

TEST(RankTest, TheSharedSolveMemoChangesNoRanking) {
  // Triangles whose links differ only in capacity: a memo that mixed their
  // baselines up would weigh the loop's links otherwise.
  std::mt19937_64 rng(11);
  const std::vector<std::vector<size_t>> shape = {{0, 1}, {1, 2}, {0, 2}};
  static const uint32_t kPeriods[] = {10, 12, 20, 30};
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<TrafficProfile> profiles;
    for (int j = 0; j < 3; ++j) profiles.push_back(RandomProfile(rng, kPeriods[rng() % 4]));
    const RankRequest narrow = Request(profiles, shape, 30);
    const RankRequest wide = Request(profiles, shape, 45);
    ClearSolveMemo();
    const RankedCandidate narrow_alone = Rank(narrow).ranked.at(0);
    ClearSolveMemo();
    const RankedCandidate wide_alone = Rank(wide).ranked.at(0);
    for (int round = 0; round < 2; ++round) {  // the memo warm with both
      const RankedCandidate n = Rank(narrow).ranked.at(0);
      const RankedCandidate w = Rank(wide).ranked.at(0);
      EXPECT_EQ(Shifts(n), Shifts(narrow_alone)) << "trial " << trial;
      EXPECT_EQ(n.score, narrow_alone.score) << "trial " << trial;
      EXPECT_EQ(Shifts(w), Shifts(wide_alone)) << "trial " << trial;
      EXPECT_EQ(w.score, wide_alone.score) << "trial " << trial;
    }
  }
}

TEST(RankTest, TheSolveMemoKeysOnEverythingASolveReads) {
  // Variants of one 3-job link that differ in one thing a solve reads each.
  // Ranked with the memo warm from all the others, each must answer as it
  // does alone; a key that left the thing out would hand it another's solve.
  std::mt19937_64 rng(5);
  std::vector<TrafficProfile> profiles;
  for (uint32_t bins : {12u, 20u, 30u}) profiles.push_back(RandomProfile(rng, bins));
  const RankRequest base = Request(profiles, {{0, 1, 2}}, 40);
  std::vector<RankRequest> variants(7, base);
  variants[1].options.circle.quantum_us = 2 * kQ;
  variants[2].options.solver.centre = false;
  variants[3].candidates[0].links["j1"]["l0"] = 0.5;
  variants[4].jobs[2].profile.gbps[3] += 1.0;
  variants[5].jobs[0].pinned_shift_us = 2 * kQ;
  variants[5].jobs[1].pinned_shift_us = 7 * kQ;
  variants[6].links[0].capacity_gbps = 55;
  std::vector<RankedCandidate> alone;
  for (const RankRequest& r : variants) {
    ClearSolveMemo();
    alone.push_back(Rank(r).ranked.at(0));
  }
  // The variants must really differ, or the test could not fail.
  std::set<std::pair<std::map<std::string, uint32_t>, double>> answers;
  for (const RankedCandidate& c : alone) answers.emplace(Shifts(c), c.score);
  EXPECT_GE(answers.size(), 5u);
  ClearSolveMemo();
  for (int round = 0; round < 2; ++round) {
    for (size_t v = 0; v < variants.size(); ++v) {
      const RankedCandidate c = Rank(variants[v]).ranked.at(0);
      EXPECT_EQ(Shifts(c), Shifts(alone[v])) << "variant " << v;
      EXPECT_EQ(c.score, alone[v].score) << "variant " << v;
      EXPECT_EQ(c.links.at(0).optimal_score, alone[v].links.at(0).optimal_score) << "variant " << v;
    }
  }
  // The same profiles under other names are the same solve: found, and
  // answered as the first request (shifts by position).
  RankRequest renamed = base;
  Candidate& c = renamed.candidates[0];
  c.links.clear();
  for (size_t j = 0; j < 3; ++j) {
    renamed.jobs[j].id = absl::StrCat("other", j);
    c.links[renamed.jobs[j].id]["l0"] = 1.0;
  }
  const RankedCandidate r = Rank(renamed).ranked.at(0);
  EXPECT_EQ(r.score, alone[0].score);
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(Shifts(r).at(absl::StrCat("other", j)), Shifts(alone[0]).at(absl::StrCat("j", j)));
  }
}

TEST(RankTest, LoopsWhoseLinksAgreeAreSolvedExactly) {
  // Two jobs sharing four links with the same shares (a ring over two leaves
  // crosses several uplinks together): the graph has loops, but every link
  // has the same optimum, so all keep it.
  RankRequest r = Request({Square(100, 40, 50), Square(150, 60, 50)},
                          {{0, 1}, {0, 1}, {0, 1}, {0, 1}}, 50);
  const RankedCandidate c = Rank(r).ranked.at(0);
  EXPECT_TRUE(c.cycle);
  EXPECT_TRUE(c.exact);
  ASSERT_EQ(c.links.size(), 4u);
  for (const LinkResult& l : c.links) {
    EXPECT_NEAR(l.score, l.optimal_score, 1e-12);
    EXPECT_NEAR(l.score, OptimumAlone(r, {0, 1}, 50), 1e-12);
  }
}

TEST(RankTest, TwoJobsOnManyLinksWithUnequalSharesStayTractable) {
  // Two 16-GPU rings over four servers each cross 16 directed links together
  // with ECMP shares of 1/4, 1/2 and 1 (15 independent loops; C(32, 15) ways to
  // drop loop edges). The spanning-tree enumeration must not be attempted and
  // the descent must stay within its budget.
  TrafficProfile a = Square(200, 90, 80), b = Square(240, 90, 80);
  RankRequest r = Request({a, b}, {}, 100);
  Candidate c{.id = "c0", .links = {}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false};
  const double shares[] = {0.25, 0.5, 1.0, 0.5};
  for (int l = 0; l < 16; ++l) {
    const std::string id = "l" + std::to_string(l);
    r.links.push_back({.id = id, .capacity_gbps = 100});
    c.links["j0"][id] = shares[l % 4];
    c.links["j1"][id] = shares[(l + 1) % 4];
  }
  r.candidates = {c};
  const RankedCandidate ranked = Rank(r).ranked.at(0);
  EXPECT_TRUE(ranked.cycle);
  ASSERT_EQ(ranked.links.size(), 16u);
  for (const LinkResult& l : ranked.links) EXPECT_LE(l.score, l.optimal_score + 1e-9);
  // 90 + 90 ms of Up in a 200/240 ms cycle do not always fit; the shifts must
  // still beat starting both jobs together.
  double together = 0;
  for (int l = 0; l < 16; ++l) {
    std::vector<LinkDemand> d = {{&r.jobs[0].profile, shares[l % 4]},
                                 {&r.jobs[1].profile, shares[(l + 1) % 4]}};
    const UnifiedCircle circle = *BuildUnifiedCircle(d, r.options.circle);
    together += LinkScore(circle, 100, {0, 0}) / 16;
  }
  EXPECT_GT(ranked.score, together);
}

TEST(RankTest, PinnedShiftIsKeptAndOthersFollowIt) {
  RankRequest r = Request({Square(100, 40, 50), Square(100, 40, 50)}, {{0, 1}}, 50);
  r.jobs[0].pinned_shift_us = 30000;
  const RankedCandidate c = Rank(r).ranked.at(0);
  const auto shifts = Shifts(c);
  EXPECT_EQ(shifts.at("j0"), 30000u);
  // j1's Up phase (40 ms) must avoid j0's [30, 70) ms.
  const uint32_t t1 = shifts.at("j1");
  EXPECT_TRUE(t1 >= 70000 && t1 <= 90000) << t1;
  EXPECT_DOUBLE_EQ(c.score, 1.0);
}

TEST(RankTest, TwoPinnedJobsAreBothKept) {
  // j0 and j2 pinned on different links of a chain j0 - j1 - j2.
  RankRequest r =
      Request({Square(100, 30, 50), Square(100, 30, 50), Square(100, 30, 50)}, {{0, 1}, {1, 2}}, 50);
  r.jobs[0].pinned_shift_us = 0;
  r.jobs[2].pinned_shift_us = 50000;
  const RankedCandidate c = Rank(r).ranked.at(0);
  const auto shifts = Shifts(c);
  EXPECT_EQ(shifts.at("j0"), 0u);
  EXPECT_EQ(shifts.at("j2"), 50000u);
  EXPECT_FALSE(c.cycle);
  EXPECT_FALSE(c.exact);
  // j1 fits in [30, 50) or [80, 100): both links can reach 1 only if j1's 30 ms
  // avoid both; they cannot (gaps are 20 ms), so the best is a compromise.
  EXPECT_LT(c.score, 1.0);
  EXPECT_GT(c.score, 0.8);
  for (const LinkResult& l : c.links) {
    EXPECT_NEAR(AchievedLinkScore(r, l.id == "l0" ? std::vector<size_t>{0, 1}
                                                  : std::vector<size_t>{1, 2},
                                  50, shifts),
                l.score, 1e-9);
  }
}

// A new job beside running jobs at their committed shifts, the way phasord
// and the simulator ask: the running jobs r0..r5 (pinned) load a ring of
// links among themselves, and the new job n crosses two links, one with r0
// and one with r3. Its shift must be the best for its own links against the
// pins (checked against every shift), and nothing about the running jobs'
// other links may change it: the same request without them answers the same.
TEST(RankTest, ANewJobBesidePinnedJobsIsSolvedOnItsOwnLinks) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<TrafficProfile> profiles;
    for (int j = 0; j < 7; ++j) profiles.push_back(RandomProfile(rng, 40 + 10 * (rng() % 3)));
    // Links 0..5: the running ring {r_i, r_i+1}; link 6 {n, r0}, link 7 {n, r3}.
    std::vector<std::vector<size_t>> ring;
    for (size_t i = 0; i < 6; ++i) ring.push_back({i, (i + 1) % 6});
    std::vector<std::vector<size_t>> with_ring = ring;
    with_ring.push_back({6, 0});
    with_ring.push_back({6, 3});
    RankRequest r = Request(profiles, with_ring, 50);
    for (size_t j = 0; j < 6; ++j) r.jobs[j].pinned_shift_us = static_cast<uint32_t>(rng() % (r.jobs[j].profile.period_us / kQ)) * kQ;
    const RankedCandidate c = Rank(r).ranked.at(0);
    const auto shifts = Shifts(c);
    for (size_t j = 0; j < 6; ++j) EXPECT_EQ(shifts.at(absl::StrCat("j", j)), *r.jobs[j].pinned_shift_us);

    // Every shift of n against the pins: none scores its two links better.
    double best = 0;
    std::map<std::string, uint32_t> t = shifts;
    for (uint32_t s = 0; s < r.jobs[6].profile.period_us; s += kQ) {
      t["j6"] = s;
      best = std::max(best, AchievedLinkScore(r, {6, 0}, 50, t) + AchievedLinkScore(r, {6, 3}, 50, t));
    }
    double achieved = 0;
    for (const LinkResult& l : c.links) {
      if (l.id == "l6" || l.id == "l7") achieved += l.score;
    }
    EXPECT_NEAR(achieved, AchievedLinkScore(r, {6, 0}, 50, shifts) + AchievedLinkScore(r, {6, 3}, 50, shifts), 1e-12);
    EXPECT_NEAR(achieved, best, 1e-9) << "trial " << trial;
    // The ring's loop runs through pinned jobs only: no loop to report.
    EXPECT_FALSE(c.cycle);

    // The ring's links left out (their jobs stay, on no contended link but
    // r0's and r3's): n's shift and its links' results are the same.
    std::vector<std::vector<size_t>> without_ring(6);
    without_ring.push_back({6, 0});
    without_ring.push_back({6, 3});
    RankRequest alone = Request(profiles, without_ring, 50);
    for (size_t j = 0; j < 6; ++j) alone.jobs[j].pinned_shift_us = r.jobs[j].pinned_shift_us;
    const RankedCandidate a = Rank(alone).ranked.at(0);
    EXPECT_EQ(Shifts(a).at("j6"), shifts.at("j6")) << "trial " << trial;
    ASSERT_EQ(a.links.size(), 2u);
    for (const LinkResult& l : a.links) {
      const auto same = std::find_if(c.links.begin(), c.links.end(), [&](const LinkResult& x) { return x.id == l.id; });
      ASSERT_NE(same, c.links.end());
      EXPECT_EQ(same->score, l.score);
    }
  }
}

TEST(RankTest, RejectsCandidatesItCannotEvaluateAndRanksTheRest) {
  RankRequest r = Request({Square(100, 60, 50), Square(100, 60, 50)}, {{0, 1}}, 50);
  r.candidates.push_back({.id = "ghost-job", .links = {{"zz", {{"l0", 1.0}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  r.candidates.push_back({.id = "ghost-link", .links = {{"j0", {{"nowhere", 1.0}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  r.candidates.push_back({.id = "servers", .links = {}, .servers = {{"j0", {"s1", "s2"}}}, .rank_order = {}, .proposed_by_phasor = false});
  r.candidates.push_back({.id = "apart",
                          .links = {{"j0", {{"l0", 1.0}}}, {"j1", {{"l0", 0.0}}}},
                          .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  ASSERT_TRUE(ValidateRankRequest(r).ok());
  const Ranking ranking = Rank(r);
  ASSERT_EQ(ranking.ranked.size(), 2u);
  EXPECT_EQ(ranking.ranked[0].candidate, "apart");  // no contended link: 1.0
  EXPECT_TRUE(ranking.ranked[0].links.empty());
  EXPECT_DOUBLE_EQ(ranking.ranked[0].score, 1.0);
  EXPECT_EQ(ranking.ranked[1].candidate, "c0");
  EXPECT_NEAR(ranking.ranked[1].score, 1 - 0.2, 1e-12);  // 1 - max(0, 2u - 1), u = 0.6
  ASSERT_EQ(ranking.rejected.size(), 3u);
  EXPECT_EQ(ranking.rejected[0].candidate, "ghost-job");
  EXPECT_EQ(ranking.rejected[0].reason, "job 'zz' is not defined");
  EXPECT_EQ(ranking.rejected[1].candidate, "ghost-link");
  EXPECT_THAT(ranking.rejected[1].reason, HasSubstr("link 'nowhere'"));
  EXPECT_EQ(ranking.rejected[2].candidate, "servers");
  EXPECT_THAT(ranking.rejected[2].reason, HasSubstr("topology"));
}

TEST(RankTest, TiesKeepTheHostSchedulersOrder) {
  RankRequest r = Request({Square(100, 60, 50), Square(100, 60, 50)}, {{0, 1}}, 50);
  for (const char* id : {"c1", "c2", "c3"}) {
    Candidate c = r.candidates[0];
    c.id = id;
    r.candidates.push_back(c);
  }
  Candidate better = r.candidates[0];
  better.id = "better";
  better.links["j1"]["l0"] = 0.5;
  r.candidates.insert(r.candidates.begin() + 2, better);
  std::vector<std::string> order;
  for (const RankedCandidate& c : Rank(r).ranked) order.push_back(c.candidate);
  EXPECT_THAT(order, ElementsAre("better", "c0", "c1", "c2", "c3"));
}

TEST(RankTest, SharesScaleTheDemand) {
  // Two jobs at 50 Gbit/s during 60% of 100 ms: with half of j1 on the link
  // the overlap (20 bins) carries 25 Gbit/s over capacity.
  RankRequest r = Request({Square(100, 60, 50), Square(100, 60, 50)}, {{0, 1}}, 50);
  r.candidates[0].links["j1"]["l0"] = 0.5;
  const RankedCandidate c = Rank(r).ranked.at(0);
  EXPECT_NEAR(c.score, 1 - (20 * 25.0) / (100 * 50.0), 1e-12);
}

TEST(RankerTest, AShareAboveOneIsHopsOfOneRing) {
  // Two hops of j1's ring over l0 (share 2) at 25 Gbit/s load it as one hop
  // at 50 would: the overlap (20 bins of 100) carries 25 Gbit/s over 75.
  RankRequest r = Request({Square(100, 60, 50), Square(100, 60, 25)}, {{0, 1}}, 75);
  r.candidates[0].links["j1"]["l0"] = 2;
  ASSERT_TRUE(ValidateRankRequest(r).ok());
  const RankedCandidate c = Rank(r).ranked.at(0);
  EXPECT_NEAR(c.score, 1 - (20 * 25.0) / (100 * 75.0), 1e-12);
}

TEST(ValidateRankRequestTest, NamesTheOffendingField) {
  const RankRequest good = Request({Square(100, 60, 50), Square(100, 60, 50)}, {{0, 1}}, 50);
  ASSERT_TRUE(ValidateRankRequest(good).ok());
  auto check = [&](std::function<void(RankRequest&)> mutate, const std::string& field) {
    RankRequest r = good;
    mutate(r);
    const absl::Status s = ValidateRankRequest(r);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(std::string(s.message()), HasSubstr(field));
  };
  check([](RankRequest& r) { r.links[0].capacity_gbps = -5; }, "links[0].capacity_gbps");
  check([](RankRequest& r) { r.links[0].capacity_gbps = 0; }, "links[0].capacity_gbps");
  check([](RankRequest& r) { r.links.push_back(r.links[0]); }, "links[1].id");
  check([](RankRequest& r) { r.jobs[1].id = "j0"; }, "jobs[1].id");
  check([](RankRequest& r) { r.jobs[1].profile.period_us = 0; }, "jobs[1].profile.period_us");
  check([](RankRequest& r) { r.jobs[0].pinned_shift_us = 100000; }, "jobs[0].pinned_shift_us");
  check([](RankRequest& r) { r.candidates[0].links["j1"]["l0"] = std::nan(""); }, "candidates[0].links.j1.l0");
  check([](RankRequest& r) { r.candidates[0].links["j1"]["l0"] = 1e5; }, "candidates[0].links.j1.l0");
  check([](RankRequest& r) { r.candidates[0].links["j1"]["l0"] = -0.1; }, "candidates[0].links.j1.l0");
  check([](RankRequest& r) { r.candidates.push_back(r.candidates[0]); }, "candidates[1].id");
  check([](RankRequest& r) { r.options.circle.quantum_us = 0; }, "options.quantum_us");
}

}  // namespace
}  // namespace ranker_test
}  // namespace phasor::placer
