#include "topology/traffic.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "topology/generators.h"

namespace phasor::topology {
namespace traffic_test {
namespace {

// 2 leaves x 2 servers (s1, s2 on leaf1; s3, s4 on leaf2), `spines` spines.
Topology SmallLeafSpine(uint32_t spines) {
  LeafSpineOptions o;
  o.leaves = 2;
  o.spines = spines;
  o.servers_per_leaf = 2;
  return *MakeLeafSpine(o);
}

TEST(TrafficTest, TwoServerRingAcrossLeaves) {
  const Topology t = SmallLeafSpine(2);
  Router router(t);
  absl::StatusOr<LinkShareMap> shares = JobLinkShares(router, "a", {"s1", "s3"});
  ASSERT_TRUE(shares.ok()) << shares.status();
  // s1 -> s3 and s3 -> s1, each split over the two spines.
  const LinkShareMap expected = {
      {"s1->leaf1", 1.0},     {"leaf1->spine1", 0.5}, {"leaf1->spine2", 0.5},
      {"spine1->leaf2", 0.5}, {"spine2->leaf2", 0.5}, {"leaf2->s3", 1.0},
      {"s3->leaf2", 1.0},     {"leaf2->spine1", 0.5}, {"leaf2->spine2", 0.5},
      {"spine1->leaf1", 0.5}, {"spine2->leaf1", 0.5}, {"leaf1->s1", 1.0}};
  EXPECT_EQ(*shares, expected);
}

TEST(TrafficTest, FourServerRingInRankOrder) {
  const Topology t = SmallLeafSpine(2);
  Router router(t);
  // Ring s1 -> s2 -> s3 -> s4 -> s1: one hop up and one hop down per leaf.
  absl::StatusOr<LinkShareMap> grouped = JobLinkShares(router, "a", {"s1", "s2", "s3", "s4"});
  ASSERT_TRUE(grouped.ok());
  EXPECT_EQ(grouped->size(), 16u);
  EXPECT_DOUBLE_EQ(grouped->at("s1->leaf1"), 1.0);
  EXPECT_DOUBLE_EQ(grouped->at("leaf1->s2"), 1.0);
  EXPECT_DOUBLE_EQ(grouped->at("leaf1->spine1"), 0.5);  // only s2 -> s3 goes up from leaf1
  EXPECT_DOUBLE_EQ(grouped->at("spine2->leaf1"), 0.5);  // only s4 -> s1 comes down to leaf1
  EXPECT_DOUBLE_EQ(grouped->at("leaf1->s1"), 1.0);

  // Ring s1 -> s3 -> s2 -> s4 -> s1: every hop crosses the spines, so each
  // uplink carries two half-hops.
  absl::StatusOr<LinkShareMap> interleaved = JobLinkShares(router, "a", {"s1", "s3", "s2", "s4"});
  ASSERT_TRUE(interleaved.ok());
  EXPECT_DOUBLE_EQ(interleaved->at("leaf1->spine1"), 1.0);
  EXPECT_DOUBLE_EQ(interleaved->at("leaf2->spine2"), 1.0);
  EXPECT_DOUBLE_EQ(interleaved->at("spine1->leaf1"), 1.0);
  EXPECT_DOUBLE_EQ(interleaved->at("s2->leaf1"), 1.0);
  EXPECT_EQ(interleaved->size(), 16u);

  // With one spine the interleaved ring puts the profile twice on each uplink.
  const Topology one = SmallLeafSpine(1);
  Router r1(one);
  absl::StatusOr<LinkShareMap> doubled = JobLinkShares(r1, "a", {"s1", "s3", "s2", "s4"});
  ASSERT_TRUE(doubled.ok());
  EXPECT_DOUBLE_EQ(doubled->at("leaf1->spine1"), 2.0);
  EXPECT_DOUBLE_EQ(doubled->at("spine1->leaf2"), 2.0);
}

// The router keeps a ring once: a second routing of the same job and servers
// is the kept ring itself, its links also by index, in the id order.
TEST(TrafficTest, JobRingIsKeptAndIndexedInIdOrder) {
  const Topology t = SmallLeafSpine(2);
  Router router(t);
  absl::StatusOr<std::shared_ptr<const Router::RingShares>> ring = JobRing(router, "a", {"s1", "s3", "s2", "s4"});
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ((*ring)->by_id, *JobLinkShares(router, "a", {"s1", "s3", "s2", "s4"}));
  ASSERT_EQ((*ring)->by_index.size(), 16u);
  size_t i = 0;
  for (const auto& [id, share] : (*ring)->by_id) {
    EXPECT_EQ(t.link((*ring)->by_index[i].first).id, id);
    EXPECT_EQ((*ring)->by_index[i].second, share) << id;
    ++i;
  }
  EXPECT_EQ(JobRing(router, "a", {"s1", "s3", "s2", "s4"})->get(), ring->get());
  // Another job on the same servers is another ring (its flows hash apart).
  EXPECT_NE(JobRing(router, "b", {"s1", "s3", "s2", "s4"})->get(), ring->get());
  EXPECT_EQ(JobRing(router, "a", {"s1", "s9"}).status().message(), "server 's9' is not in the topology");
}

TEST(TrafficTest, IntraServerJobsLoadNothing) {
  const Topology t = SmallLeafSpine(2);
  Router router(t);
  EXPECT_TRUE(JobLinkShares(router, "a", {"s1"})->empty());
  EXPECT_TRUE(JobLinkShares(router, "a", {"s2", "s2", "s2", "s2"})->empty());
  EXPECT_TRUE(JobLinkShares(router, "a", {})->empty());
  // Repeated servers (one entry per GPU) collapse to one ring stop each.
  EXPECT_EQ(*JobLinkShares(router, "a", {"s1", "s1", "s3", "s3", "s1"}),
            *JobLinkShares(router, "a", {"s1", "s3"}));
}

TEST(TrafficTest, RingHopsFollowRankOrder) {
  const Topology t = SmallLeafSpine(2);
  Router router(t);
  absl::StatusOr<std::vector<RingHop>> hops = RingHops(router, "a", {"s4", "s1", "s2"});
  ASSERT_TRUE(hops.ok());
  ASSERT_EQ(hops->size(), 3u);
  auto name = [&](NodeIndex n) { return t.node(n).id; };
  EXPECT_EQ(name((*hops)[0].src) + ">" + name((*hops)[0].dst), "s4>s1");
  EXPECT_EQ(name((*hops)[1].src) + ">" + name((*hops)[1].dst), "s1>s2");
  EXPECT_EQ(name((*hops)[2].src) + ">" + name((*hops)[2].dst), "s2>s4");
  EXPECT_EQ((*hops)[1].links.size(), 2u);
}

TEST(TrafficTest, FatTreeRingAcrossPods) {
  FatTreeOptions o;
  o.k = 4;
  const Topology t = *MakeFatTree(o);
  Router router(t);
  absl::StatusOr<LinkShareMap> shares = JobLinkShares(router, "a", {"s1", "s5"});
  ASSERT_TRUE(shares.ok());
  EXPECT_EQ(shares->size(), 28u);  // 14 links each way
  EXPECT_DOUBLE_EQ(shares->at("p1-agg1->core1"), 0.25);
  EXPECT_DOUBLE_EQ(shares->at("core1->p1-agg1"), 0.25);
  EXPECT_DOUBLE_EQ(shares->at("p2-agg2->p2-edge1"), 0.5);
}

TEST(TrafficTest, FlowHashModePutsEachHopOnOnePath) {
  const Topology t = SmallLeafSpine(2);
  RouterOptions options;
  options.ecmp = EcmpMode::kFlowHash;
  Router router(t, options);
  absl::StatusOr<LinkShareMap> shares = JobLinkShares(router, "a", {"s1", "s3"});
  ASSERT_TRUE(shares.ok());
  EXPECT_EQ(shares->size(), 8u);  // 4 links each way
  for (const auto& [link, share] : *shares) EXPECT_EQ(share, 1.0) << link;
  EXPECT_EQ(*shares, *JobLinkShares(router, "a", {"s1", "s3"}));
}

TEST(TrafficTest, TheRoutersMemoOfRingsAnswersAsAFreshRouter) {
  // A router keeps the rings it routed; with per-flow hashing the job's name
  // picks the paths, and the order of the servers makes the hops. Every
  // ring asked again, among others, is answered as a router that never saw
  // one answers it.
  LeafSpineOptions o;
  o.leaves = 4;
  o.spines = 4;
  o.servers_per_leaf = 4;
  const Topology t = *MakeLeafSpine(o);
  RouterOptions options;
  options.ecmp = EcmpMode::kFlowHash;
  Router warm(t, options);
  std::mt19937_64 rng(3);
  std::vector<std::pair<std::string, std::vector<std::string>>> rings;
  for (int i = 0; i < 40; ++i) {
    std::vector<std::string> servers;
    for (int s = 1; s <= 16; ++s) servers.push_back("s" + std::to_string(s));
    std::shuffle(servers.begin(), servers.end(), rng);
    servers.resize(2 + rng() % 6);
    rings.emplace_back("job" + std::to_string(rng() % 5), servers);
  }
  std::set<LinkShareMap> distinct;
  for (int round = 0; round < 2; ++round) {
    for (const auto& [job, servers] : rings) {
      Router fresh(t, options);
      const absl::StatusOr<LinkShareMap> expected = JobLinkShares(fresh, job, servers);
      const absl::StatusOr<LinkShareMap> got = JobLinkShares(warm, job, servers);
      ASSERT_TRUE(expected.ok() && got.ok());
      EXPECT_EQ(*got, *expected) << job;
      distinct.insert(*got);
    }
  }
  EXPECT_GT(distinct.size(), 30u);  // the rings differ: a memo that mixed them up would show
  // The same servers under another job's name hash onto other paths.
  EXPECT_NE(*JobLinkShares(warm, "x", {"s1", "s5", "s9", "s13"}), *JobLinkShares(warm, "y", {"s1", "s5", "s9", "s13"}));
}

TEST(TrafficTest, PlacementSharesAndLinkLoads) {
  const Topology t = SmallLeafSpine(2);
  Router router(t);
  absl::StatusOr<PlacementLinkShares> shares =
      PlacementShares(router, {{"a", {"s1", "s3"}}, {"b", {"s2", "s4"}}, {"c", {"s1"}}});
  ASSERT_TRUE(shares.ok()) << shares.status();
  EXPECT_EQ(shares->size(), 3u);
  EXPECT_TRUE(shares->at("c").empty());
  LinkLoads loads = ToLinkLoads(*shares);
  ASSERT_TRUE(loads.contains("leaf1->spine1"));
  const std::vector<JobShare>& on_uplink = loads.at("leaf1->spine1");
  ASSERT_EQ(on_uplink.size(), 2u);
  EXPECT_EQ(on_uplink[0].job, "a");
  EXPECT_DOUBLE_EQ(on_uplink[0].share, 0.5);
  EXPECT_EQ(on_uplink[1].job, "b");
  EXPECT_EQ(loads.at("s1->leaf1").size(), 1u);
}

TEST(TrafficTest, ErrorsNameTheJobAndTheServer) {
  Topology t = SmallLeafSpine(2);
  ASSERT_TRUE(t.AddServer("island", 8).ok());
  Router router(t);
  absl::Status unknown = PlacementShares(router, {{"a", {"s1", "s9"}}}).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "job 'a': server 's9' is not in the topology");

  absl::Status no_route = PlacementShares(router, {{"b", {"s1", "island"}}}).status();
  EXPECT_EQ(no_route.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(no_route.message(), "job 'b': server 's1' has no route to server 'island'");

  absl::Status sw = PlacementShares(router, {{"c", {"s1", "leaf1"}}}).status();
  EXPECT_EQ(sw.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sw.message(), "job 'c': 'leaf1' is a switch, not a server");

  // The unknown server is reported even when the job would load nothing.
  EXPECT_EQ(JobLinkShares(router, "d", {"nope"}).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace traffic_test
}  // namespace phasor::topology
