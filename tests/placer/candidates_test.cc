// placer/candidates.h (the leaf enumerator every caller shares, phasor's own
// candidates) and placer/ring_order.h (the ring order), with the router that
// turns them into links.
#include "placer/candidates.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/candidate_routing.h"
#include "placer/ranking_policy.h"
#include "placer/ring_order.h"
#include "topology/generators.h"
#include "topology/slurm_import.h"
#include "topology/traffic.h"

namespace phasor::placer {
namespace candidates_test {
namespace {

using ::testing::HasSubstr;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

constexpr const char* kTopology =
    "SwitchName=tor1 Nodes=n[01-04]\nSwitchName=tor2 Nodes=n[05-08]\nSwitchName=spine "
    "Switches=tor[1-2]\n";

topology::Topology Fabric() { return *topology::ParseSlurmTopology(kTopology); }

std::vector<std::vector<std::string>> Nodes(const std::vector<ServerSet>& sets) {
  std::vector<std::vector<std::string>> out;
  for (const ServerSet& s : sets) out.push_back(s.servers);
  return out;
}

TEST(LeafCandidatesTest, SingleLeavesBestFitFirstThenSpanningFewestLeaves) {
  const topology::Topology fabric = Fabric();
  // tor1 has n04 free, tor2 has n05..n07.
  absl::StatusOr<std::vector<ServerSet>> one =
      LeafCandidates(fabric, {"n04", "n05", "n06", "n07"}, 1, 8);
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(Nodes(*one), ElementsAre(ElementsAre("n04"), ElementsAre("n05")));
  absl::StatusOr<std::vector<ServerSet>> two =
      LeafCandidates(fabric, {"n04", "n05", "n06", "n07"}, 2, 8);
  ASSERT_TRUE(two.ok());
  EXPECT_THAT(Nodes(*two), ElementsAre(ElementsAre("n05", "n06"), ElementsAre("n04", "n05")));
  EXPECT_EQ((*two)[0].racks, 1u);
  EXPECT_EQ((*two)[1].racks, 2u);
  absl::StatusOr<std::vector<ServerSet>> four =
      LeafCandidates(fabric, {"n04", "n05", "n06", "n07"}, 4, 8);
  ASSERT_TRUE(four.ok());
  EXPECT_THAT(Nodes(*four), ElementsAre(ElementsAre("n04", "n05", "n06", "n07")));
  // Best fit: the leaf with fewer free nodes comes first.
  absl::StatusOr<std::vector<ServerSet>> fit =
      LeafCandidates(fabric, {"n01", "n02", "n03", "n04", "n07", "n08"}, 2, 1);
  ASSERT_TRUE(fit.ok());
  EXPECT_THAT(Nodes(*fit), ElementsAre(ElementsAre("n07", "n08")));
}

TEST(LeafCandidatesTest, OnlyTheNodesTheJobMayUse) {
  const topology::Topology fabric = Fabric();
  // Free everywhere, but the job may use n02, n03 and n06 only (its
  // partition and constraint): topology/tree's best fit is among those.
  absl::StatusOr<std::vector<ServerSet>> sets = LeafCandidates(
      fabric, {"n01", "n02", "n03", "n04", "n05", "n06"}, {"n02", "n03", "n06", "n99"}, 2, 8);
  ASSERT_TRUE(sets.ok()) << sets.status().message();
  EXPECT_THAT(Nodes(*sets), ElementsAre(ElementsAre("n02", "n03"), ElementsAre("n02", "n06")));
  EXPECT_EQ(LeafCandidates(fabric, {"n01", "n02"}, {"n02", "n05"}, 2, 8).status().message(),
            "1 free servers, the job needs 2");
}

TEST(LeafCandidatesTest, TooFewFreeNodesAndBadArguments) {
  const topology::Topology fabric = Fabric();
  absl::Status s = LeafCandidates(fabric, {"n01", "zz"}, 2, 8).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "1 free servers, the job needs 2");
  EXPECT_EQ(LeafCandidates(fabric, {"n01"}, 0, 8).status().message(), "count: must be at least 1");
  EXPECT_EQ(LeafCandidates(fabric, {"n01"}, 1, 0).status().message(),
            "max_candidates: must be at least 1");
}

// Three leaves of four one-GPU servers (s1-s4, s5-s8, s9-s12), two spines,
// uplinks 4:1 (50 Gbit/s NICs, 25 Gbit/s per uplink).
topology::Topology LeafSpine() {
  topology::LeafSpineOptions o;
  o.leaves = 3;
  o.spines = 2;
  o.servers_per_leaf = 4;
  o.gpus_per_server = 1;
  o.nic_gbps = 50;
  o.oversubscription = 4;
  return *topology::MakeLeafSpine(o);
}

double ShareOn(const topology::Router& router, const std::vector<std::string>& order,
               const std::string& link) {
  absl::StatusOr<topology::LinkShareMap> shares = topology::JobLinkShares(router, "j", order);
  EXPECT_TRUE(shares.ok()) << shares.status();
  auto it = shares->find(link);
  return it == shares->end() ? 0.0 : it->second;
}

TEST(RingOrderTest, InterleavedRacksAreMadeContiguous) {
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  // Ranks by pod index on whatever node each pod landed on: racks interleaved.
  const std::vector<std::string> host = {"s1", "s5", "s2", "s6"};
  // Four hops, all between the racks: each rack's uplinks carry two of them
  // (one per spine each: 2 x 1/2).
  EXPECT_DOUBLE_EQ(ShareOn(router, host, "leaf1->spine1"), 1.0);
  absl::StatusOr<std::vector<std::string>> order = RingOrder(router, "j", host, {});
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_THAT(*order, ElementsAre("s1", "s2", "s5", "s6"));
  // One hop leaves each rack: half a hop on each spine's uplink.
  EXPECT_DOUBLE_EQ(ShareOn(router, *order, "leaf1->spine1"), 0.5);
  EXPECT_DOUBLE_EQ(ShareOn(router, *order, "leaf2->spine2"), 0.5);
}

TEST(RingOrderTest, AContiguousOrderAndSmallJobsAreKeptAsTheHostGaveThem) {
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  const std::vector<std::string> contiguous = {"s2", "s1", "s6", "s5"};
  EXPECT_EQ(*RingOrder(router, "j", contiguous, {}), contiguous);
  // Two servers: one ring either way; entries per GPU kept as given.
  const std::vector<std::string> pair = {"s5", "s1", "s5"};
  EXPECT_EQ(*RingOrder(router, "j", pair, {}), pair);
  // A server's entries come together at its first place.
  EXPECT_THAT(*RingOrder(router, "j", {"s1", "s5", "s1", "s2", "s6"}, {}),
              ElementsAre("s1", "s1", "s2", "s5", "s6"));
}

TEST(RingOrderTest, ThreeRacksKeepTheirServersTogether) {
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  absl::StatusOr<std::vector<std::string>> order =
      RingOrder(router, "j", {"s9", "s1", "s5", "s10", "s2", "s6"}, {});
  ASSERT_TRUE(order.ok());
  // Racks in the order the host named them first: leaf3, leaf1, leaf2.
  EXPECT_THAT(*order, ElementsAre("s9", "s10", "s1", "s2", "s5", "s6"));
  for (const char* link : {"leaf1->spine1", "leaf2->spine1", "leaf3->spine1", "spine1->leaf1"}) {
    EXPECT_DOUBLE_EQ(ShareOn(router, *order, link), 0.5) << link;
  }
}

TEST(RingOrderTest, TheChosenOrderLoadsTheRunningJobsLinksLeastOfEveryRackOrder) {
  // Checked from outside: each order's load on the running jobs' links from
  // the job's routed link shares (JobLinkShares), over every order that keeps
  // racks together (rack permutations, either direction, each rack's servers
  // as given). Running load on leaf1's and leaf3's uplinks, unequal.
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  std::vector<double> load(fabric.links().size(), 0.0);
  std::map<std::string, double> loaded = {
      {"leaf1->spine1", 20}, {"spine1->leaf1", 20}, {"leaf3->spine2", 5}, {"spine2->leaf3", 5}, {"leaf3->spine1", 10}};
  for (const auto& [id, gbps] : loaded) load[*fabric.FindLink(id)] = gbps;
  auto on_loaded = [&](const std::vector<std::string>& order) {
    absl::StatusOr<topology::LinkShareMap> shares = topology::JobLinkShares(router, "j", order);
    EXPECT_TRUE(shares.ok()) << shares.status();
    double sum = 0;
    for (const auto& [id, share] : *shares) {
      auto it = loaded.find(id);
      if (it != loaded.end()) sum += share * it->second / fabric.link(*fabric.FindLink(id)).capacity_gbps;
    }
    return sum;
  };
  const std::vector<std::vector<std::string>> racks = {{"s9", "s10"}, {"s1", "s2", "s3"}, {"s5", "s6"}};
  const std::vector<std::string> host = {"s9", "s1", "s5", "s10", "s2", "s6", "s3"};
  absl::StatusOr<std::vector<std::string>> order = RingOrder(router, "j", host, load);
  ASSERT_TRUE(order.ok()) << order.status();
  double best = on_loaded(host);
  std::vector<size_t> perm = {0, 1, 2};
  do {
    std::vector<std::string> o;
    for (size_t r : perm) o.insert(o.end(), racks[r].begin(), racks[r].end());
    best = std::min(best, on_loaded(o));
    std::reverse(o.begin(), o.end());
    best = std::min(best, on_loaded(o));
  } while (std::next_permutation(perm.begin(), perm.end()));
  EXPECT_NEAR(on_loaded(*order), best, 1e-9);
  EXPECT_LT(best, on_loaded(host));
}

TEST(RingOrderTest, UnknownServersAreErrors) {
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  EXPECT_EQ(RingOrder(router, "j", {"s1", "s2", "nowhere"}, {}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(RingOrder(router, "j", {"s1", "s2", "leaf1"}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRingOrderMode("rack", "--ring-order").status().message(),
            "--ring-order: 'rack' is not host or phasor");
}

RankRequest ServersRequest() {
  RankRequest r;
  TrafficProfile p;
  p.period_us = 100000;
  p.square = SquareWave{.up_us = 40000, .up_gbps = 50, .start_us = 0, .down_gbps = 0};
  r.jobs = {{.id = "new", .profile = p, .pinned_shift_us = {}},
            {.id = "old", .profile = p, .pinned_shift_us = {}}};
  r.running.servers["old"] = {"s3", "s7"};
  Candidate host;
  host.id = "kube";
  host.servers["new"] = {"s1", "s5", "s2", "s6"};
  r.candidates.push_back(host);
  return r;
}

TEST(RouteCandidatesTest, PhasorsRingOrderIsRoutedAndReturned) {
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  for (RingOrderMode mode : {RingOrderMode::kHost, RingOrderMode::kPhasor}) {
    RankRequest r = ServersRequest();
    r.options.ring_order = mode;
    std::vector<RejectedCandidate> unrouted;
    RouteCandidates(fabric, router, r, unrouted);
    ASSERT_TRUE(unrouted.empty());
    const Candidate& c = r.candidates[0];
    if (mode == RingOrderMode::kHost) {
      EXPECT_THAT(c.rank_order.at("new"), ElementsAre("s1", "s5", "s2", "s6"));
      EXPECT_DOUBLE_EQ(c.links.at("new").at("leaf1->spine1"), 1.0);
    } else {
      EXPECT_THAT(c.rank_order.at("new"), ElementsAre("s1", "s2", "s5", "s6"));
      EXPECT_DOUBLE_EQ(c.links.at("new").at("leaf1->spine1"), 0.5);
    }
    const Ranking ranking = Rank(r);
    ASSERT_EQ(ranking.ranked.size(), 1u);
    EXPECT_EQ(ranking.ranked[0].rank_order, c.rank_order);
    // The interleaved ring shares leaf1's uplinks with the running job twice
    // over: its load there is 2 x 50 x 0.4, and the link is worse.
    EXPECT_EQ(ranking.ranked[0].score < 1.0, mode == RingOrderMode::kHost)
        << RingOrderModeName(mode);
  }
}

std::vector<std::string> AllBut(const std::vector<std::string>& busy) {
  std::vector<std::string> out;
  for (int i = 1; i <= 12; ++i) {
    const std::string s = "s" + std::to_string(i);
    if (std::find(busy.begin(), busy.end(), s) == busy.end()) out.push_back(s);
  }
  return out;
}

TEST(OwnCandidatesTest, OneRackBestFitWhenOneHasRoom) {
  const topology::Topology fabric = LeafSpine();
  Candidate host;
  host.id = "kube";
  host.servers["j"] = {"s1", "s5", "s9"};
  // leaf1: 4 free, leaf2: 3 free (s8 busy), leaf3: 4 free.
  const std::vector<Candidate> own = OwnCandidates(
      fabric, host, AllBut({"s8"}), {}, OwnCandidateOptions{.count = 2, .max_partial_racks = 2});
  ASSERT_EQ(own.size(), 2u);
  EXPECT_EQ(own[0].id, "phasor-1");
  EXPECT_TRUE(own[0].proposed_by_phasor);
  // Best fit: leaf2's three free servers first (leaf1 and leaf3 stay whole).
  EXPECT_THAT(own[0].servers.at("j"), ElementsAre("s5", "s6", "s7"));
  EXPECT_THAT(own[1].servers.at("j"), ElementsAre("s1", "s2", "s3"));
}

TEST(OwnCandidatesTest, SeveralRacksWholeButAtMostTwoPartialAndOffLoadedUplinks) {
  const topology::Topology fabric = LeafSpine();
  Candidate host;
  host.id = "kube";
  // Six one-GPU replicas, two GPUs on... one entry per GPU, one GPU servers.
  host.servers["j"] = {"s1", "s5", "s9", "s2", "s6", "s10"};
  // leaf1 and leaf2 whole, leaf3 whole: no rack holds six.
  std::vector<double> load(fabric.links().size(), 0.0);
  // A running job loads leaf1's uplinks.
  for (const char* id : {"leaf1->spine1", "leaf1->spine2", "spine1->leaf1", "spine2->leaf1"}) {
    load[*fabric.FindLink(id)] = 20;
  }
  const std::vector<Candidate> own =
      OwnCandidates(fabric, host, AllBut({}), load, OwnCandidateOptions{});
  ASSERT_FALSE(own.empty());
  // Two racks, one of them whole; leaf1 (loaded) left out.
  EXPECT_THAT(own[0].servers.at("j"), UnorderedElementsAre("s5", "s6", "s7", "s8", "s9", "s10"));
  // Nothing fits: no candidate.
  host.servers["j"] = {"s1", "s2", "s3",  "s4",  "s5",  "s6", "s7",
                       "s8", "s9", "s10", "s11", "s12", "s13"};
  EXPECT_TRUE(OwnCandidates(fabric, host, AllBut({}), load, OwnCandidateOptions{}).empty());
}

TEST(OwnCandidatesTest, AddedBesideTheHostsAndJudgedByTheHostsPacking) {
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  RankRequest r = ServersRequest();
  r.free_servers = AllBut({"s3", "s7"});
  r.options.own_candidates = 2;
  AddOwnCandidates(fabric, router, r);
  // leaf3 is the only rack with four free servers: one candidate, on it (a
  // job that fits a rack is not spread over two).
  ASSERT_EQ(r.candidates.size(), 2u);
  EXPECT_EQ(r.candidates[0].id, "kube");
  EXPECT_EQ(r.candidates[1].id, "phasor-1");
  EXPECT_TRUE(r.candidates[1].proposed_by_phasor);
  EXPECT_THAT(r.candidates[1].servers.at("new"), ElementsAre("s9", "s10", "s11", "s12"));
  std::vector<RejectedCandidate> unrouted;
  RouteCandidates(fabric, router, r, unrouted);
  Ranking ranking = Rank(r);
  // Routed in phasor's ring order, the host's candidate crosses leaf1's and
  // leaf2's uplinks, shared with the running job, once each, and shifts
  // interleave the two: both predict 1. phasor's own shares no link, so the
  // default policy puts it first (less at risk), as phasord does.
  ASSERT_EQ(ranking.ranked.size(), 2u);
  EXPECT_DOUBLE_EQ(ranking.ranked[0].score, 1.0);
  EXPECT_DOUBLE_EQ(ranking.ranked[1].score, 1.0);
  const PolicyDecision decision = ApplyRankingPolicy(r, RankingPolicyOptions{}, ranking);
  EXPECT_EQ(decision.reason, "less-at-risk");
  EXPECT_EQ(ranking.ranked[0].candidate, r.candidates[1].id);
  EXPECT_TRUE(ranking.ranked[0].proposed_by_phasor);
  // The host proposed that placement already (in another order): not again.
  RankRequest same = ServersRequest();
  same.free_servers = AllBut({"s3", "s7"});
  same.candidates[0].servers["new"] = {"s12", "s9", "s11", "s10"};
  AddOwnCandidates(fabric, router, same);
  EXPECT_EQ(same.candidates.size(), 1u);
  // None without free servers or with own_candidates 0.
  RankRequest none = ServersRequest();
  AddOwnCandidates(fabric, router, none);
  EXPECT_EQ(none.candidates.size(), 1u);
  none.free_servers = AllBut({});
  none.options.own_candidates = 0;
  AddOwnCandidates(fabric, router, none);
  EXPECT_EQ(none.candidates.size(), 1u);
}

TEST(RouteRunningTest, TheRunningPartRoutedOnceServesOwnCandidatesAndRoutingAsRoutingItInEach) {
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  auto request = [] {
    RankRequest r = ServersRequest();
    r.free_servers = AllBut({"s3", "s7"});
    r.options.own_candidates = 2;
    r.options.ring_order = RingOrderMode::kPhasor;
    return r;
  };
  RankRequest each = request();
  std::vector<RejectedCandidate> each_unrouted;
  AddOwnCandidates(fabric, router, each);
  RouteCandidates(fabric, router, each, each_unrouted);

  RankRequest once = request();
  RoutedRunning routed = RouteRunning(router, once);
  EXPECT_TRUE(routed.routed);
  EXPECT_TRUE(routed.complete);
  EXPECT_TRUE(routed.failed_job.empty());
  ASSERT_EQ(routed.shares.size(), 1u);
  EXPECT_GT(routed.shares.at("old").at("leaf1->spine1"), 0.0);  // s3 on leaf1, s7 on leaf2
  std::vector<RejectedCandidate> once_unrouted;
  AddOwnCandidates(fabric, router, once, &routed);
  ASSERT_TRUE(routed.load.has_value());  // the own candidates asked for the load
  EXPECT_GT((*routed.load)[*fabric.FindLink("leaf1->spine1")], 0.0);
  // Summed from the kept rings by link index: the same doubles as by name.
  ASSERT_EQ(routed.rings.size(), 1u);
  EXPECT_EQ(*routed.load, RunningLoad(fabric, once, routed.shares));
  RouteCandidates(fabric, router, once, once_unrouted, &routed);

  EXPECT_TRUE(each_unrouted.empty());
  EXPECT_TRUE(once_unrouted.empty());
  ASSERT_EQ(once.candidates.size(), each.candidates.size());
  ASSERT_EQ(once.candidates.size(), 2u);  // the host's and phasor's
  for (size_t i = 0; i < once.candidates.size(); ++i) {
    EXPECT_EQ(once.candidates[i].id, each.candidates[i].id);
    EXPECT_EQ(once.candidates[i].links, each.candidates[i].links);
    EXPECT_EQ(once.candidates[i].rank_order, each.candidates[i].rank_order);
  }
  EXPECT_EQ(once.running.links, each.running.links);
  EXPECT_TRUE(once.running.servers.empty());
  ASSERT_EQ(once.links.size(), each.links.size());
  for (size_t l = 0; l < once.links.size(); ++l) EXPECT_EQ(once.links[l].id, each.links[l].id);
}

TEST(RouteRunningTest, AJobThatDoesNotRouteOrIsGivenTwiceLeavesItIncomplete) {
  const topology::Topology fabric = LeafSpine();
  const topology::Router router(fabric);
  RankRequest r = ServersRequest();
  r.running.servers["bad"] = {"s3", "nowhere"};
  RoutedRunning routed = RouteRunning(router, r);
  EXPECT_TRUE(routed.routed);
  EXPECT_FALSE(routed.complete);
  EXPECT_EQ(routed.failed_job, "bad");  // "bad" < "old": the first in id order
  EXPECT_THAT(routed.reason, HasSubstr("job 'bad': "));
  EXPECT_THAT(routed.reason, HasSubstr("nowhere"));
  // Every candidate unrouted with that reason, as when RouteCandidates routes it itself.
  RankRequest itself = r;
  std::vector<RejectedCandidate> given_unrouted, itself_unrouted;
  RouteCandidates(fabric, router, r, given_unrouted, &routed);
  RouteCandidates(fabric, router, itself, itself_unrouted);
  ASSERT_EQ(given_unrouted.size(), 1u);
  ASSERT_EQ(itself_unrouted.size(), 1u);
  EXPECT_EQ(given_unrouted[0].reason, itself_unrouted[0].reason);
  EXPECT_EQ(given_unrouted[0].reason, routed.reason);

  // A job in both running forms is not routed (ValidateRankRequest names it).
  RankRequest both = ServersRequest();
  both.running.links["old"] = {{"leaf1->spine1", 1.0}};
  const RoutedRunning not_routed = RouteRunning(router, both);
  EXPECT_FALSE(not_routed.routed);
  EXPECT_FALSE(not_routed.complete);
  EXPECT_TRUE(not_routed.shares.empty());
  // Nothing to route: complete, with nothing in it.
  RankRequest none = ServersRequest();
  none.running.servers.clear();
  const RoutedRunning empty = RouteRunning(router, none);
  EXPECT_FALSE(empty.routed);
  EXPECT_TRUE(empty.complete);
}

}  // namespace
}  // namespace candidates_test
}  // namespace phasor::placer
