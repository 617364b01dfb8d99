// End-to-end tests of `phasor topology ...` and `phasor rank --topology`
// (the executable, as a user runs it).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/subprocess.h"
#include "topology/generators.h"
#include "topology/topology_yaml.h"

namespace phasor {
namespace {

using ::testing::HasSubstr;
using testing::RunCommand;

const std::string kPhasor = PHASOR_BINARY;
const std::string kSource = PHASOR_SOURCE_DIR;
const std::string kLeafSpine = kSource + "/data/examples/leaf_spine.yaml";

// A file in a fresh temporary directory, removed with the fixture.
class TopologyCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("phasor-topology-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

void ExpectOneLineError(const testing::CommandResult& r, const std::string& message) {
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "") << "nothing may be printed on stdout";
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err, "phasor topology: " + message + "\n");
}

TEST_F(TopologyCommandTest, ShowSummarises) {
  const auto r = RunCommand(kPhasor + " topology show " + kLeafSpine);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("servers       4 (32 GPUs)"));
  EXPECT_THAT(r.out, HasSubstr("links         16 directed, 100 Gbit/s"));
  EXPECT_THAT(r.out, HasSubstr("oversubscription 1:1"));

  const auto j = RunCommand(kPhasor + " topology show --format json " + kSource +
                            "/data/examples/leaf_spine_2to1.yaml");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["servers"], 4);
  EXPECT_EQ(doc["switches"], 3);
  EXPECT_EQ(doc["tiers"][0]["oversubscription"]["max"], 2.0);
}

TEST_F(TopologyCommandTest, PathsAsJson) {
  const auto r = RunCommand(kPhasor + " topology paths " + kLeafSpine + " --from s1 --to s3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["total_paths"], 2);
  ASSERT_EQ(doc["paths"].size(), 2u);
  EXPECT_EQ(doc["paths"][0]["share"], 0.5);
  EXPECT_EQ(
      doc["paths"][0]["links"],
      nlohmann::json::parse(R"(["s1->leaf1", "leaf1->spine1", "spine1->leaf2", "leaf2->s3"])"));

  const auto hash = RunCommand(kPhasor + " topology paths " + kLeafSpine +
                               " --from s1 --to s3 --ecmp hash --flow jobA");
  ASSERT_EQ(hash.exit_code, 0) << hash.err;
  const nlohmann::json h = nlohmann::json::parse(hash.out);
  ASSERT_EQ(h["paths"].size(), 1u);
  EXPECT_EQ(h["paths"][0]["share"], 1.0);
  EXPECT_EQ(RunCommand(kPhasor + " topology paths " + kLeafSpine +
                       " --from s1 --to s3 --ecmp hash --flow jobA")
                .out,
            hash.out);
}

TEST_F(TopologyCommandTest, LoadListsJobsPerLink) {
  const std::string placement =
      Write("p.json", R"({"a": ["s1", "s3"], "b": ["s2", "s4"], "c": ["s1", "s1"]})");
  const auto r = RunCommand(kPhasor + " topology load " + kLeafSpine + " --placement " + placement);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["jobs_without_network_load"], nlohmann::json::parse(R"(["c"])"));
  bool found = false;
  for (const auto& link : doc["links"]) {
    if (link["id"] != "leaf1->spine2") continue;
    found = true;
    EXPECT_EQ(link["capacity_gbps"], 100.0);
    EXPECT_EQ(link["jobs"],
              nlohmann::json::parse(R"([{"job": "a", "share": 0.5}, {"job": "b", "share": 0.5}])"));
    EXPECT_EQ(link["total_share"], 1.0);
  }
  EXPECT_TRUE(found) << r.out;
  // The rank candidate form is accepted too, and stdin.
  const auto form =
      RunCommand(kPhasor + " topology load " + kLeafSpine + " --placement -",
                 R"({"servers": {"a": ["s1", "s3"], "b": ["s2", "s4"], "c": ["s1", "s1"]}})");
  EXPECT_EQ(form.out, r.out);
}

TEST_F(TopologyCommandTest, GenerateWritesLoadableYaml) {
  const std::string out = (dir_ / "ft.yaml").string();
  const auto r =
      RunCommand(kPhasor + " topology generate fat-tree --k 4 --fabric-gbps 400 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<topology::Topology> loaded = topology::LoadTopologyYaml(out);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  topology::FatTreeOptions o;
  o.k = 4;
  o.fabric_gbps = 400;
  EXPECT_TRUE(topology::SameModel(*loaded, *topology::MakeFatTree(o)));

  const auto ls = RunCommand(kPhasor +
                             " topology generate leaf-spine --leaves 2 --spines 2 "
                             "--servers-per-leaf 2");
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  absl::StatusOr<topology::Topology> parsed = topology::ParseTopologyYaml(ls.out);
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(topology::SameModel(*parsed, *topology::LoadTopologyYaml(kLeafSpine)));
}

TEST_F(TopologyCommandTest, SlurmWhereverAFabricIsRead) {
  const std::string conf = Write("topology.conf",
                                 "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\n"
                                 "SwitchName=spine Switches=leaf[1-2]\n");
  const auto paths = RunCommand(kPhasor + " topology paths --slurm " + conf + " --from n1 --to n4");
  ASSERT_EQ(paths.exit_code, 0) << paths.err;
  EXPECT_EQ(nlohmann::json::parse(paths.out)["hops"], 4);
  const auto show = RunCommand(kPhasor + " topology show --slurm " + conf +
                               " --node-gbps 200 --switch-gbps 400 --gpus-per-node 4");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("servers       4 (16 GPUs)"));
  EXPECT_THAT(show.out, HasSubstr("links         12 directed, 200..400 Gbit/s"));
  const auto gen = RunCommand(kPhasor + " topology generate slurm " + conf);
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_THAT(gen.out, HasSubstr("- {a: leaf1, b: spine, capacity_gbps: 400}"));
}

TEST_F(TopologyCommandTest, BadInputExitsWithOneLine) {
  const std::string head =
      "servers:\n  - {id: s1, gpus: 8}\n  - {id: s2, gpus: 8}\nswitches:\n  - x\n";
  ExpectOneLineError(
      RunCommand(kPhasor + " topology show " +
                 Write("a.yaml", head + "links:\n  - {a: s1, b: y, capacity_gbps: 1}\n")),
      (dir_ / "a.yaml").string() + ":7: link 's1->y': unknown node 'y'");
  ExpectOneLineError(
      RunCommand(kPhasor + " topology show " + Write("b.yaml", head + "  - s2\n")),
      (dir_ / "b.yaml").string() + ":6: duplicate node id 's2' (first defined at line 3)");
  ExpectOneLineError(
      RunCommand(kPhasor + " topology show " +
                 Write("c.yaml", head + "links:\n  - {a: s1, b: x, capacity_gbps: 0}\n")),
      (dir_ / "c.yaml").string() + ":7: link 's1->x': capacity_gbps must be > 0 (got 0)");
  ExpectOneLineError(
      RunCommand(kPhasor + " topology show --slurm " +
                 Write("t.conf", "SwitchName=a Nodes=n1\nSwitchName=b Nodes=n[2-\n")),
      (dir_ / "t.conf").string() + ":2: bad host list 'n[2-': '[' without ']'");
  // A job whose servers cannot reach each other.
  const std::string split =
      Write("split.yaml", head +
                              "  - z\nlinks:\n  - {a: s1, b: x, capacity_gbps: 1}\n"
                              "  - {a: s2, b: z, capacity_gbps: 1}\n");
  ExpectOneLineError(
      RunCommand(kPhasor + " topology load " + split + " --placement -", R"({"j": ["s1", "s2"]})"),
      "job 'j': server 's1' has no route to server 's2'");
  ExpectOneLineError(RunCommand(kPhasor + " topology paths " + split + " --from s1 --to s2"),
                     "server 's1' has no route to server 's2'");
  ExpectOneLineError(RunCommand(kPhasor + " topology load " + kLeafSpine + " --placement -",
                                R"({"j": ["s1", "s7"]})"),
                     "job 'j': server 's7' is not in the topology");
  ExpectOneLineError(
      RunCommand(kPhasor + " topology load " + kLeafSpine + " --placement -", R"({"j": "s1"})"),
      "<stdin>: job 'j': must be a list of servers");
  ExpectOneLineError(RunCommand(kPhasor + " topology show"),
                     "give a topology FILE or --slurm CONF (exactly one)");
  ExpectOneLineError(RunCommand(kPhasor + " topology generate leaf-spine --spines 0"),
                     "leaf_spine.spines: must be >= 1");
}

TEST_F(TopologyCommandTest, RankRoutesServerCandidates) {
  const auto r =
      RunCommand(kPhasor + " rank --topology " + kSource + "/data/examples/leaf_spine_2to1.yaml " +
                 kSource + "/data/examples/rank_servers.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["ranked"].size(), 3u);
  // Leaf-local rings share no link; across leaves both jobs cross the 2:1 uplinks.
  EXPECT_EQ(doc["ranked"][0]["candidate"], "leaf-local");
  EXPECT_EQ(doc["ranked"][0]["score"], 1.0);
  EXPECT_EQ(doc["ranked"][2]["candidate"], "across-leaves");
  EXPECT_LT(doc["ranked"][2]["score"].get<double>(), 1.0);
  std::vector<std::string> links;
  for (const auto& l : doc["ranked"][2]["links"]) links.push_back(l["id"]);
  std::sort(links.begin(), links.end());
  EXPECT_EQ(links, (std::vector<std::string>{"leaf1->spine1", "leaf2->spine1", "spine1->leaf1",
                                             "spine1->leaf2"}));
  ASSERT_EQ(doc["rejected"].size(), 1u);
  EXPECT_EQ(doc["rejected"][0]["candidate"], "typo");
  EXPECT_EQ(doc["rejected"][0]["reason"], "job 'a': server 's9' is not in the topology");

  const auto missing = RunCommand(kPhasor + " rank --topology /nonexistent.yaml " + kSource +
                                  "/data/examples/rank_servers.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(missing.err, "phasor rank: --topology: /nonexistent.yaml: cannot read the file\n");
}

}  // namespace
}  // namespace phasor
