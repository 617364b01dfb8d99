// The request's running part (RankRequest.running): parsed from the rank
// JSON, checked (the merge rule), counted once by the limits, routed once, and
// ranked exactly as the same jobs given in every candidate.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/candidate_routing.h"
#include "placer/rank_json.h"
#include "placer/ranker.h"
#include "topology/generators.h"
#include "topology/router.h"

namespace phasor::placer {
namespace rank_running_test {
namespace {

using ::testing::HasSubstr;

TrafficProfile Square(uint32_t period_ms, uint32_t up_ms, double gbps, uint32_t start_ms = 0) {
  TrafficProfile p;
  p.period_us = period_ms * 1000;
  p.square = SquareWave{.up_us = up_ms * 1000, .up_gbps = gbps, .start_us = start_ms * 1000};
  return p;
}

// Running jobs r0, r1 (pinned), r2 (pinned), r3: r0 and r1 share l1 and l2
// (a loop), r1 and r2 share l3, r2 and r3 share l4, so the running part alone
// has contended links, a loop and two pins. The new job
// n goes elsewhere in each candidate: alone (c0), onto r3's link (c1), onto
// the loop (c2), onto a link of two running jobs (c3), onto an unknown link
// (c4, rejected), a candidate naming an unknown job (c5, rejected), and n
// with m, a job between the running ones in request order, away from them
// (c6: the running component's solve from c0, under other local indices).
struct Scenario {
  RankRequest with_running;  // the running part once
  RankRequest long_form;     // the running part in every candidate
};

Scenario MakeScenario() {
  RankRequest r;
  for (int l = 0; l < 7; ++l) r.links.push_back({absl::StrCat("l", l), 100});
  r.jobs.push_back({"n", Square(200, 90, 80), std::nullopt});
  r.jobs.push_back({"r0", Square(200, 80, 70), std::nullopt});
  r.jobs.push_back({"m", Square(200, 60, 70), std::nullopt});
  r.jobs.push_back({"r1", Square(300, 100, 60), 12000});
  r.jobs.push_back({"r2", Square(200, 70, 75), 5000});
  r.jobs.push_back({"r3", Square(400, 150, 65), std::nullopt});
  r.running.links = {{"r0", {{"l0", 1.0}, {"l1", 0.5}, {"l2", 0.5}}},
                     {"r1", {{"l1", 0.5}, {"l2", 0.5}, {"l3", 1.0}}},
                     {"r2", {{"l3", 1.0}, {"l4", 1.0}}},
                     {"r3", {{"l4", 1.0}, {"l6", 0.0}}}};
  r.candidates = {{"c0", {{"n", {{"l5", 1.0}}}}, {}, {}, false},
                  {"c1", {{"n", {{"l4", 0.5}, {"l5", 0.5}}}}, {}, {}, false},
                  {"c2", {{"n", {{"l0", 1.0}, {"l2", 0.25}}}}, {}, {}, false},
                  {"c3", {{"n", {{"l3", 1.0}}}}, {}, {}, false},
                  {"c4", {{"n", {{"lx", 1.0}}}}, {}, {}, false},
                  {"c5", {{"n", {{"l5", 1.0}}}, {"ghost", {{"l5", 1.0}}}}, {}, {}, false},
                  {"c6", {{"n", {{"l5", 1.0}}}, {"m", {{"l5", 1.0}}}}, {}, {}, false}};
  Scenario s;
  s.with_running = r;
  s.long_form = r;
  s.long_form.running = {};
  for (Candidate& c : s.long_form.candidates) {
    for (const auto& [job, links] : r.running.links) c.links[job] = links;
  }
  return s;
}

std::string Json(const Ranking& ranking) { return RankingToJson(ranking).dump(); }

TEST(RankRunningTest, RankingIsTheSameWithAndWithoutTheRunningPart) {
  const Scenario s = MakeScenario();
  ASSERT_TRUE(ValidateRankRequest(s.with_running).ok());
  ASSERT_TRUE(ValidateRankRequest(s.long_form).ok());
  const Ranking once = Rank(s.with_running);
  const Ranking every = Rank(s.long_form);
  EXPECT_EQ(Json(once), Json(every));
  ASSERT_EQ(once.ranked.size(), 5u);
  ASSERT_EQ(once.rejected.size(), 2u);
  EXPECT_EQ(once.rejected[0].candidate, "c4");
  EXPECT_EQ(once.rejected[0].reason, "link 'lx' (job 'n') is not defined");
  EXPECT_EQ(once.rejected[1].candidate, "c5");
  EXPECT_EQ(once.rejected[1].reason, "job 'ghost' is not defined");
  // The running jobs' loop and their contended links are in every ranked candidate.
  for (const RankedCandidate& c : once.ranked) {
    EXPECT_TRUE(c.cycle) << c.candidate;
    EXPECT_EQ(c.shifts_us.size(), c.candidate == "c6" ? 6u : 5u) << c.candidate;
    std::vector<std::string> links;
    for (const LinkResult& l : c.links) links.push_back(l.id);
    EXPECT_THAT(links, ::testing::IsSupersetOf({"l1", "l2", "l3", "l4"})) << c.candidate;
  }
  // The pins hold.
  for (const RankedCandidate& c : once.ranked) {
    for (const auto& [job, shift] : c.shifts_us) {
      if (job == "r1") {
        EXPECT_EQ(shift, 12000u);
      } else if (job == "r2") {
        EXPECT_EQ(shift, 5000u);
      }
    }
  }
  absl::StatusOr<Ranking> within = RankWithin(s.with_running, RankLimits{});
  ASSERT_TRUE(within.ok()) << within.status();
  EXPECT_EQ(Json(*within), Json(every));
}

// The results shared between candidates (per-link solves, the running
// component's joint solve) equal each candidate ranked alone.
TEST(RankRunningTest, EachCandidateRankedAloneGivesTheSameResult) {
  const Scenario s = MakeScenario();
  const Ranking together = Rank(s.with_running);
  for (const Candidate& c : s.long_form.candidates) {
    RankRequest alone = s.long_form;
    alone.candidates = {c};
    const Ranking ranking = Rank(alone);
    bool found = false;
    for (const RankedCandidate& r : together.ranked) {
      if (r.candidate != c.id) continue;
      found = true;
      ASSERT_EQ(ranking.ranked.size(), 1u) << c.id;
      Ranking one{.ranked = {r}, .rejected = {}};
      EXPECT_EQ(Json(one), Json(ranking)) << c.id;
    }
    if (!found) {
      EXPECT_EQ(ranking.ranked.size(), 0u) << c.id;
    }
  }
}

TEST(RankRunningTest, MovingRunningIntoCandidatesGivesTheLongForm) {
  const Scenario s = MakeScenario();
  RankRequest moved = s.with_running;
  MoveRunningIntoCandidates(moved);
  EXPECT_TRUE(moved.running.empty());
  ASSERT_EQ(moved.candidates.size(), s.long_form.candidates.size());
  for (size_t c = 0; c < moved.candidates.size(); ++c) {
    EXPECT_EQ(moved.candidates[c].links, s.long_form.candidates[c].links) << c;
    EXPECT_TRUE(moved.candidates[c].servers.empty()) << c;
  }
  EXPECT_EQ(Json(Rank(moved)), Json(Rank(s.with_running)));
}

TEST(RankRunningTest, UnknownNamesInRunningRejectEveryCandidateAsTheLongFormDoes) {
  Scenario s = MakeScenario();
  s.with_running.running.links["r0"]["lnone"] = 0.5;
  s.long_form = s.with_running;
  s.long_form.running = {};
  for (Candidate& c : s.long_form.candidates) {
    for (const auto& [job, links] : s.with_running.running.links) c.links[job] = links;
  }
  const Ranking once = Rank(s.with_running);
  EXPECT_EQ(Json(once), Json(Rank(s.long_form)));
  EXPECT_TRUE(once.ranked.empty());
  ASSERT_EQ(once.rejected.size(), 7u);
  // c5's own unknown job sorts before r0: the first unknown name in job order.
  EXPECT_EQ(once.rejected[0].reason, "link 'lnone' (job 'r0') is not defined");
  EXPECT_EQ(once.rejected[5].reason, "job 'ghost' is not defined");
}

TEST(RankRunningTest, AJobBothRunningAndInACandidateIsInvalid) {
  Scenario s = MakeScenario();
  s.with_running.candidates[2].links["r1"] = {{"l5", 1.0}};
  EXPECT_EQ(ValidateRankRequest(s.with_running),
            absl::InvalidArgumentError("candidates[2].links.r1: job 'r1' is also in running (a job is either "
                                       "running or placed by a candidate)"));
  s = MakeScenario();
  s.with_running.candidates[0].servers["r3"] = {"s1", "s2"};
  EXPECT_EQ(ValidateRankRequest(s.with_running),
            absl::InvalidArgumentError("candidates[0].servers.r3: job 'r3' is also in running (a job is either "
                                       "running or placed by a candidate)"));
  s = MakeScenario();
  s.with_running.running.servers["r3"] = {"s1", "s2"};
  EXPECT_EQ(ValidateRankRequest(s.with_running),
            absl::InvalidArgumentError("running.servers.r3: job 'r3' is also in running.links"));
  s = MakeScenario();
  s.with_running.running.links["r2"]["l4"] = -0.5;
  EXPECT_EQ(ValidateRankRequest(s.with_running),
            absl::InvalidArgumentError("running.links.r2.l4: share must be in 0..65536, got -0.5"));
  s = MakeScenario();
  s.with_running.running.servers["r9"] = {};
  EXPECT_EQ(ValidateRankRequest(s.with_running),
            absl::InvalidArgumentError("running.servers.r9: must be a non-empty list of server ids"));
}

// max_link_bins: a link's running jobs count once, plus each candidate's own
// (per job: options.max_bins 65536 + its pattern, 200..400 bins at 1 ms).
TEST(RankRunningTest, LimitsCountTheRunningPartOnce) {
  const Scenario s = MakeScenario();
  RankLimits limits;
  // The largest: c1's l4 with r2, r3 and n, 3 x 65536 + 200 + 400 + 200.
  limits.max_link_bins = 197408;
  EXPECT_TRUE(CheckRankLimits(s.with_running, limits).ok());
  EXPECT_TRUE(CheckRankLimits(s.long_form, limits).ok());
  limits.max_link_bins = 197407;
  const absl::Status c1 = absl::ResourceExhaustedError(
      "candidates[1].links (link 'l4'): up to 197408 bins for 3 jobs exceed the limit max_link_bins (197407)");
  EXPECT_EQ(CheckRankLimits(s.with_running, limits), c1);
  EXPECT_EQ(CheckRankLimits(s.long_form, limits), c1);
  // l4's running jobs alone: 2 x 65536 + 200 + 400, named once as running's.
  limits.max_link_bins = 131671;
  EXPECT_EQ(CheckRankLimits(s.with_running, limits),
            absl::ResourceExhaustedError("running.links (link 'l4'): up to 131672 bins for 2 jobs exceed the limit "
                                         "max_link_bins (131671)"));
  EXPECT_EQ(CheckRankLimits(s.long_form, limits),
            absl::ResourceExhaustedError("candidates[0].links (link 'l4'): up to 131672 bins for 2 jobs exceed the "
                                         "limit max_link_bins (131671)"));
}

TEST(RankRunningTest, JsonRunningParses) {
  absl::StatusOr<RankRequest> r = ParseRankRequest(R"({
    "links": [{"id": "a", "capacity_gbps": 100}, {"id": "b", "capacity_gbps": 100}],
    "jobs": [{"id": "old", "profile": {"period_us": 1000, "square": {"up_us": 500, "up_gbps": 80}}},
             {"id": "srv", "profile": {"period_us": 1000, "square": {"up_us": 500, "up_gbps": 80}}},
             {"id": "new", "profile": {"period_us": 1000, "square": {"up_us": 500, "up_gbps": 80}}}],
    "running": {"links": {"old": {"a": 1, "b": 0.5}}, "servers": {"srv": ["s1", "s2"]}},
    "candidates": [{"id": "c0", "links": {"new": {"a": 1}}}]
  })");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->running.links, (std::map<std::string, std::map<std::string, double>>{{"old", {{"a", 1}, {"b", 0.5}}}}));
  EXPECT_EQ(r->running.servers, (std::map<std::string, std::vector<std::string>>{{"srv", {"s1", "s2"}}}));
  ASSERT_EQ(r->candidates.size(), 1u);
  EXPECT_EQ(r->candidates[0].links.size(), 1u);
}

TEST(RankRunningTest, JsonBadRunningNamesTheField) {
  const std::string head = R"({"links": [{"id": "a", "capacity_gbps": 100}],
    "jobs": [{"id": "old", "profile": {"period_us": 1000, "square": {"up_us": 500, "up_gbps": 80}}},
             {"id": "new", "profile": {"period_us": 1000, "square": {"up_us": 500, "up_gbps": 80}}}],
    "candidates": [{"id": "c0", "links": {"new": {"a": 1}}}], )";
  auto parse = [&](const std::string& running) { return ParseRankRequest(head + running + "}").status(); };
  EXPECT_EQ(parse(R"("running": [])"), absl::InvalidArgumentError("running: must be an object, got array"));
  EXPECT_EQ(parse(R"("running": {})"),
            absl::InvalidArgumentError(
                "running: needs \"links\" (job -> link -> share) or \"servers\" (job -> [server])"));
  EXPECT_EQ(parse(R"("running": {"link": {}})"),
            absl::InvalidArgumentError("running.link: unknown field (links or servers)"));
  EXPECT_EQ(parse(R"("running": {"links": {"old": {"a": "x"}}})"),
            absl::InvalidArgumentError("running.links.old.a: must be a number, got string"));
  EXPECT_EQ(parse(R"("running": {"links": {"old": 1}})"),
            absl::InvalidArgumentError("running.links.old: must be an object: link -> share"));
  EXPECT_EQ(parse(R"("running": {"servers": {"old": []}})"),
            absl::InvalidArgumentError("running.servers.old: must be a non-empty array of server ids"));
  EXPECT_EQ(parse(R"("running": {"links": {"old": {"a": 1e5}}})"),
            absl::InvalidArgumentError("running.links.old.a: share must be in 0..65536, got 100000"));
  EXPECT_EQ(parse(R"("running": {"links": {"new": {"a": 1}}})"),
            absl::InvalidArgumentError("candidates[0].links.new: job 'new' is also in running (a job is either "
                                       "running or placed by a candidate)"));
  EXPECT_TRUE(ParseRankRequest(head + R"("running": null})").ok());
}

// Server form on a fabric: the running part routed once gives the same links
// (in the same order) and the same ranking as routing it in every candidate.
TEST(RankRunningTest, RoutedOnceEqualsRoutedInEveryCandidate) {
  topology::LeafSpineOptions ls;
  ls.leaves = 4;
  ls.spines = 2;
  ls.servers_per_leaf = 4;
  ls.oversubscription = 2;
  const topology::Topology fabric = *topology::MakeLeafSpine(ls);
  const topology::Router router(fabric);
  RankRequest r;
  r.jobs.push_back({"b-running", Square(200, 80, 70), 3000});
  r.jobs.push_back({"a-new", Square(240, 90, 80), std::nullopt});
  r.jobs.push_back({"z-running", Square(300, 100, 60), 7000});
  r.running.servers = {{"b-running", {"s3", "s4", "s5", "s6"}}, {"z-running", {"s7", "s8", "s9", "s10"}}};
  // a-new sorts before the running jobs: the links it names come first.
  r.candidates = {{"c0", {}, {{"a-new", {"s1", "s2"}}}, {}, false},
                  {"c1", {}, {{"a-new", {"s11", "s12", "s13", "s14"}}}, {}, false},
                  {"c2", {}, {{"a-new", {"s2", "s11"}}}, {}, false},
                  {"c3", {}, {{"a-new", {"s1", "nowhere"}}}, {}, false}};
  RankRequest long_form = r;
  long_form.running = {};
  for (Candidate& c : long_form.candidates) {
    for (const auto& [job, servers] : r.running.servers) c.servers[job] = servers;
  }
  std::vector<RejectedCandidate> unrouted_once, unrouted_every;
  RouteCandidates(fabric, router, r, unrouted_once);
  RouteCandidates(fabric, router, long_form, unrouted_every);
  EXPECT_TRUE(r.running.servers.empty());
  EXPECT_EQ(r.running.links.size(), 2u);
  ASSERT_EQ(r.links.size(), long_form.links.size());
  for (size_t l = 0; l < r.links.size(); ++l) EXPECT_EQ(r.links[l].id, long_form.links[l].id) << l;
  ASSERT_EQ(unrouted_once.size(), 1u);
  ASSERT_EQ(unrouted_every.size(), 1u);
  EXPECT_EQ(unrouted_once[0].candidate, "c3");
  EXPECT_EQ(unrouted_once[0].reason, unrouted_every[0].reason);
  ASSERT_TRUE(ValidateRankRequest(r).ok()) << ValidateRankRequest(r);
  const Ranking once = Rank(r);
  EXPECT_EQ(Json(once), Json(Rank(long_form)));
  EXPECT_EQ(once.ranked.size(), 3u);
}

TEST(RankRunningTest, UnroutableRunningJobRejectsEveryCandidate) {
  topology::LeafSpineOptions ls;
  const topology::Topology fabric = *topology::MakeLeafSpine(ls);
  const topology::Router router(fabric);
  RankRequest r;
  r.jobs.push_back({"old", Square(200, 80, 70), std::nullopt});
  r.jobs.push_back({"new", Square(200, 80, 70), std::nullopt});
  r.running.servers = {{"old", {"s1", "nowhere"}}};
  r.candidates = {{"c0", {}, {{"new", {"s2", "s3"}}}, {}, false}, {"c1", {{"new", {}}}, {}, {}, false}};
  std::vector<RejectedCandidate> unrouted;
  RouteCandidates(fabric, router, r, unrouted);
  EXPECT_TRUE(r.candidates.empty());
  ASSERT_EQ(unrouted.size(), 2u);
  EXPECT_EQ(unrouted[0].candidate, "c0");
  EXPECT_THAT(unrouted[0].reason, HasSubstr("job 'old': "));
  EXPECT_EQ(unrouted[1].reason, unrouted[0].reason);
  EXPECT_EQ(r.running.servers.size(), 1u);  // unchanged
}

}  // namespace
}  // namespace rank_running_test
}  // namespace phasor::placer
