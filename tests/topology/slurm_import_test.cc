#include "topology/slurm_import.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "topology/topology_yaml.h"

namespace phasor::topology {
namespace slurm_import_test {
namespace {

using Hosts = std::vector<std::string>;

TEST(HostListTest, ExpandsSlurmSyntax) {
  EXPECT_EQ(*ExpandHostList("node1"), Hosts{"node1"});
  EXPECT_EQ(*ExpandHostList("node[01-03]"), (Hosts{"node01", "node02", "node03"}));
  EXPECT_EQ(*ExpandHostList("n[8-10,12]"), (Hosts{"n8", "n9", "n10", "n12"}));
  EXPECT_EQ(*ExpandHostList("a[1-2],b,c[7]"), (Hosts{"a1", "a2", "b", "c7"}));
  EXPECT_EQ(*ExpandHostList("r[1-2]n[1-2]"), (Hosts{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(*ExpandHostList("gpu[098-101]-ib"),
            (Hosts{"gpu098-ib", "gpu099-ib", "gpu100-ib", "gpu101-ib"}));
}

TEST(HostListTest, RejectsMalformedLists) {
  EXPECT_EQ(ExpandHostList("node[01-").status().message(), "'[' without ']'");
  EXPECT_EQ(ExpandHostList("node01]").status().message(), "']' without '['");
  EXPECT_EQ(ExpandHostList("node[[1]]").status().message(), "nested '['");
  EXPECT_EQ(ExpandHostList("node[3-1]").status().message(), "reversed range '3-1'");
  EXPECT_EQ(ExpandHostList("node[a-b]").status().message(), "bad range 'a-b'");
  EXPECT_EQ(ExpandHostList("node[]").status().message(), "empty '[]'");
  EXPECT_EQ(ExpandHostList("a,,b").status().message(), "empty item");
}

constexpr char kConf[] = R"(# two leaves under one spine
SwitchName=leaf1 Nodes=node[01-02]
switchname=leaf2 nodes=node[03-04]  LinkSpeed=100
SwitchName=spine Switches=leaf[1-2]
)";

constexpr char kEquivalentYaml[] = R"(
servers:
  - {id: node01, gpus: 4, nics: [{name: nic0, gbps: 50}]}
  - {id: node02, gpus: 4, nics: [{name: nic0, gbps: 50}]}
  - {id: node03, gpus: 4, nics: [{name: nic0, gbps: 50}]}
  - {id: node04, gpus: 4, nics: [{name: nic0, gbps: 50}]}
switches: [leaf1, leaf2, spine]
links:
  - {a: node01, b: leaf1, capacity_gbps: 50, nic: nic0}
  - {a: node02, b: leaf1, capacity_gbps: 50, nic: nic0}
  - {a: node03, b: leaf2, capacity_gbps: 50, nic: nic0}
  - {a: node04, b: leaf2, capacity_gbps: 50, nic: nic0}
  - {a: leaf1, b: spine, capacity_gbps: 200}
  - {a: leaf2, b: spine, capacity_gbps: 200}
)";

TEST(SlurmImportTest, EqualsTheEquivalentYaml) {
  SlurmImportOptions o;
  o.node_link_gbps = 50;
  o.switch_link_gbps = 200;
  o.gpus_per_node = 4;
  absl::StatusOr<Topology> slurm = ParseSlurmTopology(kConf, o);
  ASSERT_TRUE(slurm.ok()) << slurm.status();
  absl::StatusOr<Topology> yaml = ParseTopologyYaml(kEquivalentYaml);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_TRUE(SameModel(*slurm, *yaml));
  EXPECT_EQ(slurm->links().size(), 12u);

  // And a capacity option that differs gives a different model.
  o.switch_link_gbps = 100;
  absl::StatusOr<Topology> other = ParseSlurmTopology(kConf, o);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(SameModel(*other, *yaml));
}

TEST(SlurmImportTest, ForwardReferencesAndMultiHoming) {
  absl::StatusOr<Topology> t = ParseSlurmTopology(
      "SwitchName=top Switches=a,b\nSwitchName=a Nodes=n1,n2\nSwitchName=b Nodes=n2,n3\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_servers(), 3u);
  EXPECT_TRUE(t->FindLink("n2->a").has_value());
  EXPECT_TRUE(t->FindLink("n2->b").has_value());
  EXPECT_TRUE(t->FindLink("top->b").has_value());
}

std::string Error(const std::string& conf) {
  absl::StatusOr<Topology> t = ParseSlurmTopology(conf, {}, "topology.conf");
  return t.ok() ? "ok" : std::string(t.status().message());
}

TEST(SlurmImportTest, MalformedLinesNameTheLine) {
  EXPECT_EQ(Error("SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodez=n2\n"),
            "topology.conf:2: unknown key 'Nodez'");
  EXPECT_EQ(Error("\n# c\nNodes=n1\n"), "topology.conf:3: missing SwitchName=");
  EXPECT_EQ(Error("SwitchName=s1 Nodes=node[01-\n"),
            "topology.conf:1: bad host list 'node[01-': '[' without ']'");
  EXPECT_EQ(Error("SwitchName=s1 garbage\n"), "topology.conf:1: expected Key=Value, got 'garbage'");
  EXPECT_EQ(Error("SwitchName=s1 Nodes=\n"), "topology.conf:1: empty value for 'Nodes'");
  EXPECT_EQ(Error("SwitchName=s1 Nodes=a Nodes=b\n"), "topology.conf:1: Nodes given twice");
  EXPECT_EQ(Error("SwitchName=s1 Nodes=n1\nSwitchName=s1 Nodes=n2\n"),
            "topology.conf:2: duplicate switch 's1' (first at line 1)");
  EXPECT_EQ(Error("SwitchName=top Switches=s[1-2]\nSwitchName=s1 Nodes=n1\n"),
            "topology.conf:1: switch 's2' in Switches= is never declared");
  EXPECT_EQ(Error("SwitchName=s1 Nodes=s2\nSwitchName=s2 Nodes=n1\n"),
            "topology.conf:1: 's2' in Nodes= is a switch");
  EXPECT_EQ(Error("SwitchName=s1 Nodes=n1,n1\n"), "topology.conf:1: duplicate link 'n1->s1'");

  SlurmImportOptions o;
  o.node_link_gbps = 0;
  EXPECT_EQ(ParseSlurmTopology("SwitchName=s1\n", o).status().message(),
            "node_link_gbps: must be > 0 (got 0)");
  EXPECT_EQ(LoadSlurmTopology("/nonexistent/topology.conf").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace slurm_import_test
}  // namespace phasor::topology
