#include "topology/topology.h"

#include "gtest/gtest.h"
#include "topology/generators.h"

namespace phasor::topology {
namespace topology_test {
namespace {

TEST(TopologyTest, BuildsNodesAndDirectedLinks) {
  Topology t;
  ASSERT_TRUE(t.AddServer("s1", 8, {NicPort{"eth0", 100}}).ok());
  ASSERT_TRUE(t.AddSwitch("leaf1").ok());
  ASSERT_TRUE(t.AddDuplexLink("s1", "leaf1", 100, "eth0").ok());
  ASSERT_TRUE(t.AddLink("leaf1", "s1", 50).status().code() == absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(t.num_servers(), 1u);
  EXPECT_EQ(t.num_switches(), 1u);
  EXPECT_EQ(t.num_gpus(), 8u);
  ASSERT_EQ(t.links().size(), 2u);
  EXPECT_EQ(t.link(0).id, "s1->leaf1");
  EXPECT_EQ(t.link(1).id, "leaf1->s1");
  EXPECT_EQ(t.link(0).nic, "eth0");
  EXPECT_EQ(t.FindLink("leaf1->s1"), std::optional<LinkIndex>(1));
  EXPECT_EQ(t.FindLink(*t.FindNode("s1"), *t.FindNode("leaf1")), std::optional<LinkIndex>(0));
  EXPECT_FALSE(t.FindLink("s1->spine1").has_value());
  EXPECT_EQ(t.node(*t.FindNode("s1")).out, std::vector<LinkIndex>{0});
  EXPECT_EQ(t.node(*t.FindNode("s1")).in, std::vector<LinkIndex>{1});
  EXPECT_EQ(t.Servers(), std::vector<NodeIndex>{0});
}

TEST(TopologyTest, RejectsBadInput) {
  Topology t;
  ASSERT_TRUE(t.AddServer("s1", 8).ok());
  ASSERT_TRUE(t.AddSwitch("leaf1").ok());

  absl::Status dup = t.AddSwitch("s1").status();
  EXPECT_EQ(dup.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dup.message(), "duplicate node id 's1'");

  EXPECT_EQ(t.AddSwitch("").status().message(), "node id: must not be empty");
  EXPECT_EQ(t.AddSwitch("a->b").status().message(), "node id 'a->b': must not contain '->'");
  EXPECT_EQ(t.AddSwitch("a b").status().message(), "node id 'a b': must not contain spaces");

  absl::Status unknown = t.AddLink("s1", "spine9", 100).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "link 's1->spine9': unknown node 'spine9'");

  EXPECT_EQ(t.AddLink("s1", "leaf1", 0).status().message(),
            "link 's1->leaf1': capacity_gbps must be > 0 (got 0)");
  EXPECT_EQ(t.AddLink("s1", "leaf1", -5).status().message(),
            "link 's1->leaf1': capacity_gbps must be > 0 (got -5)");
  EXPECT_EQ(t.AddLink("s1", "s1", 5).status().message(), "link 's1->s1': a self-loop");
  EXPECT_EQ(t.AddLink("s1", "leaf1", 5, "eth9").status().message(),
            "link 's1->leaf1': nic 'eth9' is not a NIC port of 's1' or 'leaf1'");

  ASSERT_TRUE(t.AddLink("s1", "leaf1", 5).ok());
  EXPECT_EQ(t.AddLink("s1", "leaf1", 5).status().message(), "duplicate link 's1->leaf1'");

  EXPECT_EQ(t.AddServer("s2", 1, {NicPort{"eth0", 0}}).status().message(),
            "server 's2': nic 'eth0': speed must be > 0 (got 0)");
  EXPECT_EQ(t.AddServer("s2", 1, {NicPort{"eth0", 1}, NicPort{"eth0", 1}}).status().message(),
            "server 's2': duplicate nic 'eth0'");
  // Nothing was added by the failed calls.
  EXPECT_EQ(t.nodes().size(), 2u);
  EXPECT_EQ(t.links().size(), 1u);
}

TEST(TopologyTest, SameModelIgnoresOrderButNotCapacity) {
  Topology a, b;
  ASSERT_TRUE(a.AddServer("s1", 8).ok());
  ASSERT_TRUE(a.AddSwitch("x").ok());
  ASSERT_TRUE(a.AddDuplexLink("s1", "x", 10).ok());
  ASSERT_TRUE(b.AddSwitch("x").ok());
  ASSERT_TRUE(b.AddServer("s1", 8).ok());
  ASSERT_TRUE(b.AddLink("x", "s1", 10).ok());
  ASSERT_TRUE(b.AddLink("s1", "x", 10).ok());
  EXPECT_TRUE(SameModel(a, b));

  Topology c;
  ASSERT_TRUE(c.AddServer("s1", 8).ok());
  ASSERT_TRUE(c.AddSwitch("x").ok());
  ASSERT_TRUE(c.AddLink("s1", "x", 10).ok());
  ASSERT_TRUE(c.AddLink("x", "s1", 20).ok());
  EXPECT_FALSE(SameModel(a, c));
}

TEST(TopologyTest, SummaryReportsTiersAndOversubscription) {
  LeafSpineOptions o;
  o.leaves = 4;
  o.spines = 2;
  o.servers_per_leaf = 8;
  o.nic_gbps = 100;
  o.oversubscription = 2.0;  // 800G down, 2 x 200G up per leaf
  absl::StatusOr<Topology> t = MakeLeafSpine(o);
  ASSERT_TRUE(t.ok()) << t.status();
  TopologySummary s = Summarize(*t);
  EXPECT_EQ(s.servers, 32u);
  EXPECT_EQ(s.gpus, 256u);
  EXPECT_EQ(s.switches, 6u);
  EXPECT_EQ(s.links, 2u * (32 + 8));
  EXPECT_DOUBLE_EQ(s.min_capacity_gbps, 100);
  EXPECT_DOUBLE_EQ(s.max_capacity_gbps, 200);
  EXPECT_DOUBLE_EQ(s.server_link_gbps_min, 100);
  EXPECT_DOUBLE_EQ(s.server_link_gbps_max, 100);
  ASSERT_EQ(s.tiers.size(), 2u);
  EXPECT_EQ(s.tiers[0].tier, 1u);
  EXPECT_EQ(s.tiers[0].switches, 4u);
  EXPECT_DOUBLE_EQ(s.tiers[0].min_oversubscription, 2.0);
  EXPECT_DOUBLE_EQ(s.tiers[0].max_oversubscription, 2.0);
  EXPECT_DOUBLE_EQ(s.tiers[0].min_uplink_gbps, 200);
  EXPECT_EQ(s.tiers[1].tier, 2u);
  EXPECT_EQ(s.tiers[1].switches, 2u);
  EXPECT_DOUBLE_EQ(s.tiers[1].max_oversubscription, 0);  // spines have no uplinks
  EXPECT_EQ(s.unreachable_switches, 0u);
}

}  // namespace
}  // namespace topology_test
}  // namespace phasor::topology
