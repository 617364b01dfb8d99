#include "topology/topology_yaml.h"

#include <string>

#include "gtest/gtest.h"
#include "topology/generators.h"

namespace phasor::topology {
namespace topology_yaml_test {
namespace {

std::string Error(const std::string& yaml) {
  absl::StatusOr<Topology> t = ParseTopologyYaml(yaml, "f.yaml");
  return t.ok() ? "ok" : std::string(t.status().message());
}

TEST(TopologyYamlTest, LoadsTheBundledExample) {
  absl::StatusOr<Topology> t = LoadTopologyYaml("data/examples/leaf_spine.yaml");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_servers(), 4u);
  EXPECT_EQ(t->num_gpus(), 32u);
  EXPECT_EQ(t->num_switches(), 4u);
  EXPECT_EQ(t->links().size(), 16u);
  // The NIC's speed gives the capacity of a link that names the NIC.
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("leaf1->s1")).capacity_gbps, 100);
  EXPECT_EQ(t->link(*t->FindLink("leaf1->s1")).nic, "nic0");
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("spine2->leaf2")).capacity_gbps, 100);
  // It is the same fabric the generator builds.
  LeafSpineOptions o;
  o.leaves = 2;
  o.spines = 2;
  o.servers_per_leaf = 2;
  o.nic_gbps = 100;
  absl::StatusOr<Topology> g = MakeLeafSpine(o);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(SameModel(*t, *g));
}

TEST(TopologyYamlTest, ParsesDirectedAndAsymmetricLinks) {
  absl::StatusOr<Topology> t = ParseTopologyYaml(R"(
servers:
  - id: a
    gpus: 4
    nics:
      - {name: eth0, gbps: 25}
      - {name: eth1, gbps: 25}
  - {id: b}
switches: [{id: x}]
links:
  - {a: a, b: x, capacity_gbps: 25, capacity_gbps_ba: 10, nic: eth0}
  - {from: b, to: x, capacity_gbps: 40}
)");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->node(*t->FindNode("a")).nics.size(), 2u);
  EXPECT_EQ(t->node(*t->FindNode("b")).gpus, 0u);
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("a->x")).capacity_gbps, 25);
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("x->a")).capacity_gbps, 10);
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("b->x")).capacity_gbps, 40);
  EXPECT_FALSE(t->FindLink("x->b").has_value());
}

TEST(TopologyYamlTest, RoundTripsThroughToYaml) {
  FatTreeOptions o;
  o.k = 4;
  o.fabric_gbps = 400;
  absl::StatusOr<Topology> t = MakeFatTree(o);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->AddServer("7:odd", 2, {NicPort{"p:1", 12.345678901234}}).ok());
  ASSERT_TRUE(t->AddLink("7:odd", "p1-edge1", 12.345678901234, "p:1").ok());
  ASSERT_TRUE(t->AddLink("p1-edge1", "7:odd", 3).ok());
  const std::string text = ToYaml(*t);
  absl::StatusOr<Topology> back = ParseTopologyYaml(text);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_TRUE(SameModel(*t, *back));
}

TEST(TopologyYamlTest, GenerateKeyBuildsAFabricAndExtendsIt) {
  absl::StatusOr<Topology> t = ParseTopologyYaml(R"(
generate:
  leaf_spine: {leaves: 2, spines: 3, servers_per_leaf: 2, nic_gbps: 200, uplink_gbps: 400}
switches: [border1]
links:
  - {a: spine1, b: border1, capacity_gbps: 800}
)");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_servers(), 4u);
  EXPECT_EQ(t->num_switches(), 6u);
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("leaf2->spine3")).capacity_gbps, 400);
  EXPECT_DOUBLE_EQ(t->link(*t->FindLink("border1->spine1")).capacity_gbps, 800);

  absl::StatusOr<Topology> ft = ParseTopologyYaml("generate: {fat_tree: {k: 4, servers: 5}}");
  ASSERT_TRUE(ft.ok()) << ft.status();
  EXPECT_EQ(ft->num_servers(), 5u);
  EXPECT_EQ(ft->num_switches(), 20u);
}

TEST(TopologyYamlTest, BadInputNamesTheItemAndTheLine) {
  const std::string head = "servers:\n  - {id: s1, gpus: 8}\nswitches:\n  - leaf1\n";
  // Unknown node in a link.
  EXPECT_EQ(Error(head + "links:\n  - {a: s1, b: spine9, capacity_gbps: 100}\n"),
            "f.yaml:6: link 's1->spine9': unknown node 'spine9'");
  // Zero and negative capacity.
  EXPECT_EQ(Error(head + "links:\n  - {a: s1, b: leaf1, capacity_gbps: 0}\n"),
            "f.yaml:6: link 's1->leaf1': capacity_gbps must be > 0 (got 0)");
  EXPECT_EQ(Error(head + "links:\n  - {from: leaf1, to: s1, capacity_gbps: -1}\n"),
            "f.yaml:6: link 'leaf1->s1': capacity_gbps must be > 0 (got -1)");
  EXPECT_EQ(Error(head + "links:\n  - {a: s1, b: leaf1, capacity_gbps: fast}\n"),
            "f.yaml:6: link 's1->leaf1': capacity_gbps: must be a number (got 'fast')");
  EXPECT_EQ(Error(head + "links:\n  - {a: s1, b: leaf1}\n"),
            "f.yaml:6: link 's1->leaf1': missing 'capacity_gbps'");
  // Duplicate ids: nodes (across servers and switches) and links.
  EXPECT_EQ(Error(head + "  - s1\n"), "f.yaml:5: duplicate node id 's1' (first defined at line 2)");
  EXPECT_EQ(Error(head + "links:\n  - {a: s1, b: leaf1, capacity_gbps: 1}\n"
                         "  - {from: leaf1, to: s1, capacity_gbps: 1}\n"),
            "f.yaml:7: duplicate link 'leaf1->s1'");
  // Typos and structure.
  EXPECT_EQ(Error("servers:\n  - {id: s1, gpu: 8}\n"), "f.yaml:2: servers[0]: unknown key 'gpu'");
  EXPECT_EQ(Error("server:\n  - {id: s1}\n"), "f.yaml:1: topology: unknown key 'server'");
  EXPECT_EQ(Error("servers: {id: s1}\n"), "f.yaml:1: servers: must be a list");
  EXPECT_EQ(Error("servers:\n  - {gpus: 8}\n"), "f.yaml:2: servers[0]: missing 'id'");
  EXPECT_EQ(Error("servers:\n  - {id: s1, gpus: -2}\n"),
            "f.yaml:2: server 's1': gpus: must be a whole number >= 0 (got -2)");
  EXPECT_EQ(Error("servers:\n  - {id: s1, nics: [{name: e, gbps: 0}]}\n"),
            "f.yaml:2: server 's1': nic 'e': gbps must be > 0 (got 0)");
  EXPECT_EQ(Error(head + "links:\n  - {a: s1, to: leaf1, capacity_gbps: 1}\n"),
            "f.yaml:6: links[0]: give either a/b (duplex) or from/to (one direction)");
  EXPECT_EQ(Error("servers: [\n"), "f.yaml:2: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(Error(""), "f.yaml:1: the topology is empty");
  EXPECT_EQ(Error("generate: {leaf_spine: {spines: 0}}"),
            "f.yaml:1: leaf_spine.spines: must be >= 1");
  EXPECT_EQ(Error("generate: {fat_tree: {k: 3}}"),
            "f.yaml:1: fat_tree.k: must be even and >= 2 (got 3)");

  absl::StatusOr<Topology> missing = LoadTopologyYaml("/nonexistent/t.yaml");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "/nonexistent/t.yaml: cannot read the file");
}

}  // namespace
}  // namespace topology_yaml_test
}  // namespace phasor::topology
