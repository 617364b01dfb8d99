#include "sim/topology_scenario.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/generators.h"

namespace phasor::sim {
namespace topology_scenario_test {
namespace {

// 2 leaves of 2 servers, one spine, 50 Gbit/s everywhere: jobs a (s1, s3) and
// b (s2, s4) both cross leaf1->spine1 and spine1->leaf2 (and back), each ring
// hop at share 1, so their Up phases collide there unless shifted.
TEST(TopologyScenarioTest, ServersAreRoutedAndSharedUplinksInterleaved) {
  topology::LeafSpineOptions ls;
  ls.leaves = 2;
  ls.spines = 1;
  ls.servers_per_leaf = 2;
  ls.nic_gbps = 50;
  ls.uplink_gbps = 50;
  absl::StatusOr<topology::Topology> topo = topology::MakeLeafSpine(ls);
  ASSERT_TRUE(topo.ok()) << topo.status();
  topology::Router router(*topo);
  Scenario s;
  for (const auto& [id, servers] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{{"a", {"s1", "s3"}},
                                                                     {"b", {"s2", "s4"}}}) {
    ScenarioJob job;
    job.id = id;
    job.compute_us = 120000;
    job.comm_bytes = 5e8;
    job.nic_gbps = 50;
    job.servers = servers;
    job.iterations = 100;
    s.jobs.push_back(job);
  }
  ASSERT_TRUE(ResolveServers(router, s).ok());
  EXPECT_EQ(s.links.size(), topo->links().size());
  EXPECT_DOUBLE_EQ(s.jobs[0].links.at("leaf1->spine1"), 1.0);
  EXPECT_DOUBLE_EQ(s.jobs[1].links.at("leaf1->spine1"), 1.0);
  EXPECT_FALSE(s.jobs[0].links.contains("s2->leaf1"));
  absl::StatusOr<Comparison> c = SimulateScenario(s);
  ASSERT_TRUE(c.ok()) << c.status();
  for (const JobRun& job : c->phasor.jobs) EXPECT_NEAR(job.iteration_us.p99, 200000, 1);
  EXPECT_EQ(c->phasor.excess_bytes, 0);
  EXPECT_GT(c->baseline.excess_bytes, 0);  // seed 1 collides
  // Only loaded links are reported with a topology.
  for (const LinkRun& link : c->phasor.links) EXPECT_GT(link.utilisation, 0) << link.id;

  Scenario bad = s;
  bad.jobs[0].servers = {"s1", "s9"};
  bad.jobs[0].links.clear();
  absl::Status status = ResolveServers(router, bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("jobs[0].servers"));
}

}  // namespace
}  // namespace topology_scenario_test
}  // namespace phasor::sim
