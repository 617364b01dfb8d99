#include "topology/generators.h"

#include "gtest/gtest.h"

namespace phasor::topology {
namespace generators_test {
namespace {

double Capacity(const Topology& t, const std::string& id) {
  std::optional<LinkIndex> l = t.FindLink(id);
  return l ? t.link(*l).capacity_gbps : -1;
}

TEST(LeafSpineTest, BuildsTheFabric) {
  LeafSpineOptions o;
  o.leaves = 3;
  o.spines = 2;
  o.servers_per_leaf = 4;
  o.gpus_per_server = 8;
  o.nic_gbps = 100;
  absl::StatusOr<Topology> t = MakeLeafSpine(o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_servers(), 12u);
  EXPECT_EQ(t->num_gpus(), 96u);
  EXPECT_EQ(t->num_switches(), 5u);
  EXPECT_EQ(t->links().size(), 2u * (12 + 3 * 2));
  // Servers fill leaf1 first.
  EXPECT_DOUBLE_EQ(Capacity(*t, "s4->leaf1"), 100);
  EXPECT_DOUBLE_EQ(Capacity(*t, "leaf2->s5"), 100);
  EXPECT_DOUBLE_EQ(Capacity(*t, "s12->leaf3"), 100);
  // Non-blocking by default: 4 x 100G down, 2 uplinks of 200G.
  EXPECT_DOUBLE_EQ(Capacity(*t, "leaf3->spine2"), 200);
  EXPECT_DOUBLE_EQ(Capacity(*t, "spine2->leaf3"), 200);
  EXPECT_EQ(t->node(*t->FindNode("s1")).nics.size(), 1u);
  EXPECT_EQ(t->link(*t->FindLink("s1->leaf1")).nic, "nic0");
}

TEST(LeafSpineTest, UplinkFromOversubscriptionOrGiven) {
  LeafSpineOptions o;
  o.servers_per_leaf = 8;
  o.spines = 4;
  o.nic_gbps = 100;
  o.oversubscription = 2;
  absl::StatusOr<Topology> t = MakeLeafSpine(o);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(Capacity(*t, "leaf1->spine4"), 100);  // 800 / (4 * 2)

  o.oversubscription.reset();
  o.uplink_gbps = 400;
  t = MakeLeafSpine(o);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(Capacity(*t, "leaf1->spine4"), 400);
}

TEST(LeafSpineTest, PartialLastLeaf) {
  LeafSpineOptions o;
  o.leaves = 50;
  o.servers_per_leaf = 26;
  o.servers = 1250;
  absl::StatusOr<Topology> t = MakeLeafSpine(o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->num_servers(), 1250u);
  EXPECT_EQ(t->num_gpus(), 10000u);
  EXPECT_TRUE(t->FindLink("s1250->leaf49").has_value());
  EXPECT_EQ(t->node(*t->FindNode("leaf50")).out.size(), 2u);  // uplinks only
}

TEST(LeafSpineTest, RejectsBadOptions) {
  LeafSpineOptions o;
  o.spines = 0;
  EXPECT_EQ(MakeLeafSpine(o).status().message(), "leaf_spine.spines: must be >= 1");
  o = {};
  o.nic_gbps = 0;
  EXPECT_EQ(MakeLeafSpine(o).status().message(), "leaf_spine.nic_gbps: must be > 0 (got 0)");
  o = {};
  o.uplink_gbps = 100;
  o.oversubscription = 1;
  EXPECT_EQ(MakeLeafSpine(o).status().message(),
            "leaf_spine.uplink_gbps: give either uplink_gbps or oversubscription, not both");
  o = {};
  o.oversubscription = -1;
  EXPECT_EQ(MakeLeafSpine(o).status().message(),
            "leaf_spine.oversubscription: must be > 0 (got -1)");
  o = {};
  o.servers = 9;
  EXPECT_EQ(MakeLeafSpine(o).status().message(),
            "leaf_spine.servers: 9 do not fit on 2 leaves of 4 (at most 8)");
}

TEST(FatTreeTest, KFourHasTheTextbookShape) {
  FatTreeOptions o;
  o.k = 4;
  absl::StatusOr<Topology> t = MakeFatTree(o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_servers(), 16u);           // k^3/4
  EXPECT_EQ(t->num_switches(), 20u);          // 5k^2/4
  EXPECT_EQ(t->links().size(), 2u * 3 * 16);  // k^3/4 links per layer, 3 layers, duplex
  EXPECT_TRUE(t->FindLink("s1->p1-edge1").has_value());
  EXPECT_TRUE(t->FindLink("s3->p1-edge2").has_value());
  EXPECT_TRUE(t->FindLink("s5->p2-edge1").has_value());
  EXPECT_TRUE(t->FindLink("p3-edge2->p3-agg1").has_value());
  EXPECT_TRUE(t->FindLink("p4-agg1->core2").has_value());
  EXPECT_TRUE(t->FindLink("p4-agg2->core3").has_value());
  EXPECT_FALSE(t->FindLink("p4-agg2->core1").has_value());
  for (const Node& n : t->nodes()) {
    if (n.kind == NodeKind::kSwitch) {
      EXPECT_EQ(n.out.size(), 4u) << n.id;  // k ports each
    }
  }
}

TEST(FatTreeTest, PartialAndCapacities) {
  FatTreeOptions o;
  o.k = 18;
  o.servers = 1250;
  o.nic_gbps = 200;
  o.fabric_gbps = 400;
  absl::StatusOr<Topology> t = MakeFatTree(o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->num_servers(), 1250u);
  EXPECT_EQ(t->num_switches(), 5u * 18 * 18 / 4);
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("s1->p1-edge1")).capacity_gbps, 200);
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("p1-edge1->p1-agg1")).capacity_gbps, 400);

  o = {};
  o.k = 3;
  EXPECT_EQ(MakeFatTree(o).status().message(), "fat_tree.k: must be even and >= 2 (got 3)");
  o = {};
  o.servers = 17;
  EXPECT_EQ(MakeFatTree(o).status().message(),
            "fat_tree.servers: 17 do not fit in a k=4 fat-tree (at most 16)");
  o = {};
  o.fabric_gbps = -3;
  EXPECT_EQ(MakeFatTree(o).status().message(), "fat_tree.fabric_gbps: must be > 0 (got -3)");
}

}  // namespace
}  // namespace generators_test
}  // namespace phasor::topology
