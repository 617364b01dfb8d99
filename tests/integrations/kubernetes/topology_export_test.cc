// `phasor topology export`: a phasor fabric as Volcano HyperNodes, Kueue's
// Topology and node labels, with exact values on a leaf-spine and a fat-tree.
#include "integrations/kubernetes/topology_export.h"

#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"
#include "topology/generators.h"
#include "topology/topology_yaml.h"
#include "yaml-cpp/yaml.h"

namespace phasor::kubernetes {
namespace {

const std::string& Fabric() {
  static const std::string path = std::string(PHASOR_SOURCE_DIR) + "/tests/integrations/kubernetes/leaf_spine_4x4.yaml";
  return path;
}

TEST(TopologyExportTest, LeafSpineIsLeavesUnderOneSpineBlock) {
  absl::StatusOr<topology::Topology> fabric = topology::LoadTopologyYaml(Fabric());
  ASSERT_TRUE(fabric.ok());
  absl::StatusOr<FabricExport> e = ExportFabric(*fabric, {});
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->hypernodes.size(), 5u);
  EXPECT_EQ(e->hypernodes[0].name, "leaf1");
  EXPECT_EQ(e->hypernodes[0].tier, 1u);
  EXPECT_EQ(e->hypernodes[0].members, (std::vector<std::string>{"s1", "s2", "s3", "s4"}));
  EXPECT_EQ(e->hypernodes[3].members, (std::vector<std::string>{"s13", "s14", "s15", "s16"}));
  // Two spines join all four leaves: one tier-2 block.
  EXPECT_EQ(e->hypernodes[4].name, "tier2-spine1");
  EXPECT_EQ(e->hypernodes[4].tier, 2u);
  EXPECT_EQ(e->hypernodes[4].members, (std::vector<std::string>{"leaf1", "leaf2", "leaf3", "leaf4"}));
  EXPECT_EQ(e->kueue_levels, (std::vector<std::string>{"phasor.io/tier-2", "phasor.io/tier-1", "kubernetes.io/hostname"}));
  EXPECT_EQ(e->node_labels.at("s7"), (std::map<std::string, std::string>{{"phasor.io/tier-1", "leaf2"},
                                                                          {"phasor.io/tier-2", "tier2-spine1"}}));
  EXPECT_EQ(e->node_labels.size(), 16u);

  const std::vector<YAML::Node> docs = YAML::LoadAll(HyperNodesYaml(*e));
  ASSERT_EQ(docs.size(), 5u);
  EXPECT_EQ(docs[0]["apiVersion"].as<std::string>(), "topology.volcano.sh/v1alpha1");
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "HyperNode");
  EXPECT_EQ(docs[0]["spec"]["tier"].as<int>(), 1);
  EXPECT_EQ(docs[0]["spec"]["members"][0]["type"].as<std::string>(), "Node");
  EXPECT_EQ(docs[0]["spec"]["members"][0]["selector"]["exactMatch"]["name"].as<std::string>(), "s1");
  EXPECT_EQ(docs[4]["spec"]["members"][2]["type"].as<std::string>(), "HyperNode");
  EXPECT_EQ(docs[4]["spec"]["members"][2]["selector"]["exactMatch"]["name"].as<std::string>(), "leaf3");

  const YAML::Node kueue = YAML::Load(KueueTopologyYaml(*e, {}));
  EXPECT_EQ(kueue["apiVersion"].as<std::string>(), "kueue.x-k8s.io/v1beta1");
  EXPECT_EQ(kueue["kind"].as<std::string>(), "Topology");
  EXPECT_EQ(kueue["metadata"]["name"].as<std::string>(), "phasor-fabric");
  EXPECT_EQ(kueue["spec"]["levels"][0]["nodeLabel"].as<std::string>(), "phasor.io/tier-2");
  EXPECT_EQ(kueue["spec"]["levels"][2]["nodeLabel"].as<std::string>(), "kubernetes.io/hostname");
  EXPECT_EQ(NodeLabelCommands(*e).substr(0, 79),
            "kubectl label node s1 phasor.io/tier-1=leaf1 phasor.io/tier-2=tier2-spine1 --ov");
}

TEST(TopologyExportTest, FatTreeHasPodsThenTheCore) {
  topology::FatTreeOptions o;
  o.k = 4;
  absl::StatusOr<topology::Topology> fabric = topology::MakeFatTree(o);
  ASSERT_TRUE(fabric.ok());
  absl::StatusOr<FabricExport> e = ExportFabric(*fabric, {});
  ASSERT_TRUE(e.ok()) << e.status();
  std::map<uint32_t, int> per_tier;
  for (const HyperNode& h : e->hypernodes) ++per_tier[h.tier];
  // 8 edge switches, 4 pods (2 edges joined by 2 aggregation switches each), 1 core block.
  EXPECT_EQ(per_tier, (std::map<uint32_t, int>{{1, 8}, {2, 4}, {3, 1}}));
  EXPECT_EQ(e->hypernodes[8].name, "tier2-p1-agg1");
  EXPECT_EQ(e->hypernodes[8].members, (std::vector<std::string>{"p1-edge1", "p1-edge2"}));
  EXPECT_EQ(e->hypernodes[12].members.size(), 4u);
  EXPECT_EQ(e->kueue_levels.size(), 4u);
}

TEST(TopologyExportTest, BadNamesAreNamed) {
  topology::Topology t;
  ASSERT_TRUE(t.AddServer("GPU_1", 8).ok());
  ASSERT_TRUE(t.AddSwitch("leaf1").ok());
  ASSERT_TRUE(t.AddDuplexLink("GPU_1", "leaf1", 100).ok());
  EXPECT_EQ(ExportFabric(t, {}).status().message(),
            "server 'GPU_1': not a valid Kubernetes name (lowercase [a-z0-9.-])");
  topology::Topology lonely;
  ASSERT_TRUE(lonely.AddServer("s1", 8).ok());
  EXPECT_EQ(ExportFabric(lonely, {}).status().message(), "fabric: no switch is linked to a server");
}

TEST(TopologyExportTest, TheCommandWritesEveryFormat) {
  const std::string phasor = PHASOR_BIN;
  testing::CommandResult r = testing::RunCommand(phasor + " topology export " + Fabric());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(YAML::LoadAll(r.out).size(), 5u);
  r = testing::RunCommand(phasor + " topology export --format kueue --kueue-api-version kueue.x-k8s.io/v1alpha1 " +
                          Fabric());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(YAML::Load(r.out)["apiVersion"].as<std::string>(), "kueue.x-k8s.io/v1alpha1");
  r = testing::RunCommand(phasor + " topology export --format labels " + Fabric());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 16);
  r = testing::RunCommand(phasor + " topology export --format helm " + Fabric());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "phasor topology: --format: must be volcano, kueue, labels or all, got 'helm'\n");
}

}  // namespace
}  // namespace phasor::kubernetes
