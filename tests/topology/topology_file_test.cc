#include "topology/topology_file.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace phasor::topology {
namespace topology_file_test {
namespace {

constexpr const char* kSlurm = "# two leaves\nSwitchName=tor1 Nodes=n[01-02]\nSwitchName=tor2 Nodes=n[03-04]\n"
                               "SwitchName=spine Switches=tor[1-2]\n";
constexpr const char* kYaml = "servers:\n  - id: s1\n  - id: s2\nswitches:\n  - id: leaf1\nlinks:\n"
                              "  - {a: s1, b: leaf1, capacity_gbps: 100}\n  - {a: s2, b: leaf1, capacity_gbps: 100}\n";

class TopologyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/topology-file-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(TopologyFileTest, FormatByNameThenByContent) {
  EXPECT_EQ(DetectTopologyFormat("a/fabric.yaml", kSlurm), TopologyFormat::kYaml);
  EXPECT_EQ(DetectTopologyFormat("fabric.YML", kSlurm), TopologyFormat::kYaml);
  EXPECT_EQ(DetectTopologyFormat("/etc/slurm/topology.conf", kYaml), TopologyFormat::kSlurm);
  EXPECT_EQ(DetectTopologyFormat("fabric", kSlurm), TopologyFormat::kSlurm);
  EXPECT_EQ(DetectTopologyFormat("fabric", "\n  # x\n  switchname=a Nodes=b\n"), TopologyFormat::kSlurm);
  EXPECT_EQ(DetectTopologyFormat("fabric", kYaml), TopologyFormat::kYaml);
  EXPECT_EQ(DetectTopologyFormat("fabric", ""), TopologyFormat::kYaml);
}

TEST_F(TopologyFileTest, LoadsBothFormats) {
  SlurmImportOptions o;
  o.node_link_gbps = 25;
  absl::StatusOr<Topology> slurm = LoadTopologyFile(Write("topology.conf", kSlurm), o);
  ASSERT_TRUE(slurm.ok()) << slurm.status().message();
  EXPECT_EQ(slurm->num_servers(), 4u);
  EXPECT_EQ(slurm->num_switches(), 3u);
  std::optional<LinkIndex> up = slurm->FindLink("n01->tor1");
  ASSERT_TRUE(up.has_value());
  EXPECT_EQ(slurm->link(*up).capacity_gbps, 25);
  absl::StatusOr<Topology> by_content = LoadTopologyFile(Write("fabric", kSlurm));
  ASSERT_TRUE(by_content.ok()) << by_content.status().message();
  EXPECT_EQ(by_content->num_servers(), 4u);
  absl::StatusOr<Topology> yaml = LoadTopologyFile(Write("fabric.yaml", kYaml));
  ASSERT_TRUE(yaml.ok()) << yaml.status().message();
  EXPECT_EQ(yaml->num_servers(), 2u);
}

TEST_F(TopologyFileTest, ErrorsNameTheFileAndLine) {
  const std::string bad = Write("bad.conf", "SwitchName=tor1 Nodez=n1\n");
  absl::Status s = LoadTopologyFile(bad).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), bad + ":1: unknown key 'Nodez'");
  absl::Status missing = LoadTopologyFile(dir_ + "/none.yaml").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), dir_ + "/none.yaml: cannot read the file");
}

}  // namespace
}  // namespace topology_file_test
}  // namespace phasor::topology
