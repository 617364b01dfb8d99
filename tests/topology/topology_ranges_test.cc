// Issue 12 for the fabric: every number of topology YAML, Slurm topology.conf
// and the generators has a range, checked where it enters, and no input
// makes a loader build more than kMaxNodes nodes.
#include <string>

#include "gtest/gtest.h"
#include "topology/generators.h"
#include "topology/slurm_import.h"
#include "topology/topology.h"
#include "topology/topology_yaml.h"

namespace phasor::topology {
namespace topology_ranges_test {
namespace {

std::string YamlError(const std::string& yaml) {
  absl::StatusOr<Topology> t = ParseTopologyYaml(yaml, "f.yaml");
  return t.ok() ? "ok" : std::string(t.status().message());
}

std::string SlurmError(const std::string& conf, const SlurmImportOptions& o = {}) {
  absl::StatusOr<Topology> t = ParseSlurmTopology(conf, o, "topology.conf");
  return t.ok() ? "ok" : std::string(t.status().message());
}

TEST(TopologyRangesTest, SpeedsAndGpusOutsideTheirRanges) {
  Topology t;
  ASSERT_TRUE(t.AddSwitch("a").ok());
  ASSERT_TRUE(t.AddSwitch("b").ok());
  EXPECT_EQ(t.AddLink("a", "b", 2e6).status().message(),
            "link 'a->b': capacity_gbps 2e+06 is outside 0.001..1e+06");
  EXPECT_EQ(t.AddLink("a", "b", 1e-9).status().message(),
            "link 'a->b': capacity_gbps 1e-09 is outside 0.001..1e+06");
  EXPECT_TRUE(t.AddLink("a", "b", kMaxLinkGbps).ok());
  EXPECT_EQ(t.AddServer("s1", 5000, {NicPort{"eth0", 100}}).status().message(),
            "server 's1': gpus 5000 is outside 0..1024");
  EXPECT_EQ(t.AddServer("s2", 8, {NicPort{"eth0", 1e7}}).status().message(),
            "server 's2': nic 'eth0': speed 1e+07 is outside 0.001..1e+06");
}

TEST(TopologyRangesTest, YamlNumbersAreFiniteAndCountsFitTheirType) {
  const std::string head = "servers:\n  - {id: s1, gpus: 8, nics: [{name: e, gbps: 100}]}\n"
                           "switches:\n  - {id: leaf1}\n";
  EXPECT_EQ(YamlError(head + "links:\n  - {a: s1, b: leaf1, capacity_gbps: inf}\n"),
            "f.yaml:6: link 's1->leaf1': capacity_gbps: must be a finite number (got 'inf')");
  EXPECT_EQ(YamlError(head + "links:\n  - {a: s1, b: leaf1, capacity_gbps: nan}\n"),
            "f.yaml:6: link 's1->leaf1': capacity_gbps: must be a finite number (got 'nan')");
  // 1e20 GPUs: outside uint32_t, rejected before the (undefined) conversion.
  EXPECT_EQ(YamlError("servers:\n  - {id: s1, gpus: 1e20, nics: [{name: e, gbps: 100}]}\n"),
            "f.yaml:2: server 's1': gpus: must be a whole number >= 0 (got 1e20)");
}

// Was unbounded: 10^10 servers were built one by one until memory ran out.
TEST(TopologyRangesTest, HugeGeneratedFabricIsRejectedBeforeBuilding) {
  LeafSpineOptions o;
  o.leaves = 100'000;
  o.servers_per_leaf = 100'000;
  EXPECT_EQ(MakeLeafSpine(o).status().message(),
            "leaf_spine: 100000 leaves x 100000 servers_per_leaf + 2 spines is more than 1000000 nodes");
  o.leaves = 2'000;
  o.servers_per_leaf = 1;
  o.spines = 2'000;
  EXPECT_EQ(MakeLeafSpine(o).status().message(),
            "leaf_spine: 2000 leaves x 2000 spines is more than 4000000 links");
  EXPECT_EQ(YamlError("generate:\n  leaf_spine: {leaves: 100000, spines: 2, servers_per_leaf: 100000}\n"),
            "f.yaml:2: leaf_spine: 100000 leaves x 100000 servers_per_leaf + 2 spines is more than "
            "1000000 nodes");
}

// Found by topology_yaml_fuzz: `fat_tree: {k: 82, servers: 1}` built 6,700
// switches and 275,000 links, past the fuzzer's memory limit under ASan.
// Generated fat trees stop at k = 64 (65,536 servers).
TEST(TopologyRangesTest, FatTreeKAboveSixtyFourIsRejected) {
  EXPECT_EQ(YamlError("generate:\n  fat_tree: {k: 82, servers: 1}\n"), "f.yaml:2: fat_tree.k: must be <= 64");
  FatTreeOptions o;
  o.k = 64;
  o.servers = 16;
  EXPECT_TRUE(MakeFatTree(o).ok());
}

// Was unbounded: a product of two ranges expanded to 10^12 names.
TEST(TopologyRangesTest, SlurmHostListsStopAtTheNodeLimit) {
  EXPECT_EQ(SlurmError("SwitchName=s Nodes=a[0-999999]b[0-999999]\n"),
            "topology.conf:1: bad host list 'a[0-999999]b[0-999999]': expands to more than 1000000 names");
  EXPECT_EQ(ExpandHostList("n[1-5]", 3).status().message(), "expands to more than 3 names");
  EXPECT_EQ(ExpandHostList("n[1-3]", 3)->size(), 3u);
  // The names of all lines count together.
  EXPECT_EQ(SlurmError("SwitchName=s1 Nodes=a[0-599999]\nSwitchName=s2 Nodes=b[0-599999]\n"),
            "topology.conf:2: bad host list 'b[0-599999]': expands to more than 400000 names");
}

TEST(TopologyRangesTest, SlurmOptionsHaveRanges) {
  SlurmImportOptions o;
  o.node_link_gbps = 1e9;
  EXPECT_EQ(SlurmError("SwitchName=s Nodes=n1\n", o), "node_link_gbps: 1e+09 is outside 0.001..1e+06");
  o = {};
  o.gpus_per_node = 100'000;
  EXPECT_EQ(SlurmError("SwitchName=s Nodes=n1\n", o), "gpus_per_node: 100000 is outside 0..1024");
}

}  // namespace
}  // namespace topology_ranges_test
}  // namespace phasor::topology
