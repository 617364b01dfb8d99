// phasor_slurm's pure parts without Slurm: Slurm's JSON and scontrol
// output, what a job asks of its nodes, topology/tree-style candidates, the
// opt-in comment, the hook protocol, the node configuration, and the
// command runner against scripts standing in for sinfo/squeue/scontrol.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integrations/slurm/hook_server.h"
#include "integrations/slurm/job_request.h"
#include "integrations/slurm/job_spec.h"
#include "integrations/slurm/node_config.h"
#include "integrations/slurm/slurm_commands.h"
#include "integrations/slurm/slurm_state.h"
#include "placer/candidates.h"
#include "tests/daemon/daemon_harness.h"
#include "topology/slurm_import.h"

namespace phasor::slurm::slurm_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

TEST(SlurmStateTest, ParsesSinfoOncePerNodeWithAllItsPartitions) {
  absl::StatusOr<std::vector<SlurmNode>> nodes = ParseSinfoJson(
      R"({"nodes": [{"name": "n01", "state": "idle", "state_flags": [], "partitions": ["gpu"], "cpus": 2,
                     "real_memory": 1000, "temporary_disk": 50, "active_features": "ib,fast", "gres": "hca:1"},
                    {"name": "n01", "state": "idle", "state_flags": [], "partitions": ["all"]},
                    {"name": "n02", "state": "idle", "state_flags": ["DRAIN"]},
                    {"name": "n03", "state": ["DOWN", "NOT_RESPONDING"], "cpus": null}], "errors": []})");
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 3u);
  const SlurmNode& n01 = (*nodes)[0];
  EXPECT_THAT(n01.partitions, ElementsAre("all", "gpu"));
  EXPECT_THAT(n01.features, UnorderedElementsAre("ib", "fast"));
  EXPECT_EQ(n01.cpus, 2u);
  EXPECT_EQ(n01.real_memory_mb, 1000u);
  EXPECT_EQ(n01.tmp_disk_mb, 50u);
  EXPECT_EQ(n01.gres, "hca:1");
  EXPECT_TRUE(NodeIsFree(n01));
  EXPECT_FALSE(NodeIsFree((*nodes)[1]));
  EXPECT_FALSE(NodeHasFailed((*nodes)[1]));
  EXPECT_EQ((*nodes)[2].state, "down");
  EXPECT_THAT((*nodes)[2].flags, ElementsAre("NOT_RESPONDING"));
  EXPECT_TRUE(NodeHasFailed((*nodes)[2]));
}

TEST(SlurmStateTest, ParsesSqueueWithWhatPendingJobsAsk) {
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueueJson(
      R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "nodes": "n[01-02],n05", "comment": "phasor"},
                   {"job_id": 8, "job_state": "PENDING", "nodes": "", "priority": 4294901759,
                    "state_reason": "Resources", "partition": "cpu", "features": "ib", "node_count": 2,
                    "max_nodes": 0, "required_nodes": "n[05-06]", "excluded_nodes": "n07", "resv_name": "",
                    "shared": null, "tres_per_node": "gres:hca:1", "tres_per_job": ""}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "7");
  EXPECT_THAT((*jobs)[0].nodes, ElementsAre("n01", "n02", "n05"));
  EXPECT_TRUE(JobIsRunning((*jobs)[0]));
  const SlurmJob& p = (*jobs)[1];
  EXPECT_FALSE(JobIsRunning(p));
  EXPECT_FALSE(JobHasEnded(p));
  EXPECT_EQ(p.priority, 4294901759u);
  EXPECT_EQ(p.state_reason, "Resources");
  EXPECT_EQ(p.partition, "cpu");
  EXPECT_EQ(p.node_count, 2u);
  EXPECT_EQ(p.required_nodes, "n[05-06]");
  EXPECT_EQ(p.excluded_nodes, "n07");
  EXPECT_EQ(p.tres_per_node, "gres:hca:1");
  EXPECT_EQ(p.shared, "");
}

TEST(SlurmStateTest, ParsesScontrolPartitionsAndReservations) {
  absl::StatusOr<std::vector<SlurmPartition>> parts = ParseScontrolPartitions(
      "PartitionName=gpu AllowGroups=ALL Default=YES Nodes=n[01-04] State=UP TotalNodes=4\n"
      "PartitionName=cpu Default=NO Nodes=n[05-08] State=DOWN\n\n");
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "gpu");
  EXPECT_TRUE((*parts)[0].is_default);
  EXPECT_TRUE((*parts)[0].up);
  EXPECT_THAT((*parts)[0].nodes, ElementsAre("n01", "n02", "n03", "n04"));
  EXPECT_FALSE((*parts)[1].is_default);
  EXPECT_FALSE((*parts)[1].up);
  absl::StatusOr<std::vector<SlurmReservation>> res = ParseScontrolReservations(
      "ReservationName=maint StartTime=2026-01-01T00:00:00 Nodes=n[07-08] NodeCnt=2 Features=(null) State=ACTIVE\n"
      "ReservationName=later Nodes=(null) State=INACTIVE\n");
  ASSERT_TRUE(res.ok()) << res.status().message();
  ASSERT_EQ(res->size(), 2u);
  EXPECT_TRUE((*res)[0].active);
  EXPECT_THAT((*res)[0].nodes, ElementsAre("n07", "n08"));
  EXPECT_FALSE((*res)[1].active);
  EXPECT_TRUE((*res)[1].nodes.empty());
  EXPECT_TRUE(ParseScontrolReservations("No reservations in the system\n")->empty());
}

TEST(SlurmStateTest, BadOutputNamesTheField) {
  EXPECT_EQ(ParseSinfoJson("nope").status().message(), "sinfo --json: output is not JSON");
  EXPECT_EQ(ParseSinfoJson(R"({"nodes": 3})").status().message(), "nodes: missing or not an array");
  EXPECT_EQ(ParseSinfoJson(R"({"nodes": [{"state": "idle"}]})").status().message(), "nodes[0].name: missing");
  EXPECT_EQ(ParseSinfoJson(R"({"nodes": [{"name": "n1", "state": "idle", "cpus": -2}]})").status().message(),
            "nodes[0].cpus: must be a non-negative integer");
  EXPECT_EQ(ParseSqueueJson(R"({"jobs": [{"job_id": -1}]})").status().message(),
            "jobs[0].job_id: missing or not a non-negative integer");
  EXPECT_EQ(ParseSqueueJson(R"({"jobs": [{"job_id": 1, "job_state": "RUNNING", "nodes": "n[01-"}]})").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSqueueJson(R"({"jobs": [{"job_id": 1, "job_state": "PENDING", "partition": 5}]})").status().message(),
            "jobs[0].partition: must be a string");
  EXPECT_EQ(ParseScontrolPartitions("Default=YES Nodes=n1\n").status().message(),
            "scontrol show partition: line 1: no PartitionName");
  EXPECT_EQ(ParseScontrolReservations("ReservationName=r Nodes=n[1-\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(JobSpecTest, OptInAndKeys) {
  EXPECT_TRUE(OptsIn("phasor"));
  EXPECT_TRUE(OptsIn("  phasor model=x"));
  EXPECT_FALSE(OptsIn("phasorx"));
  EXPECT_FALSE(OptsIn("run phasor"));
  EXPECT_FALSE(OptsIn(std::string(1100, ' ') + "phasor"));
  absl::StatusOr<JobSpec> spec = ParseJobSpec("phasor profile=a.json token=00ff");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->profile_file, "a.json");
  EXPECT_EQ(spec->token, "00ff");
  EXPECT_EQ(ParseJobSpec("hello").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ParseJobSpec("phasor profile=../x").status().message(),
            "comment: 'profile=../x': the value must be 1..64 characters of [A-Za-z0-9._-]");
  EXPECT_EQ(ParseJobSpec("phasor color=red").status().message(),
            "comment: 'color=red': unknown key (model, profile, token)");
  EXPECT_EQ(ParseJobSpec("phasor model").status().message(), "comment: 'model': expected key=value");
  EXPECT_EQ(ParseJobSpec("phasor model=a model=b").status().message(), "comment: 'model' given twice");
  EXPECT_EQ(ParseJobSpec("phasor model=a profile=b").status().message(), "comment: give model= or profile=, not both");
  EXPECT_EQ(ParseJobSpec("phasor\nmodel=a").status().message(), "comment: has a control character");
}

TEST(JobSpecTest, FreeTextAfterTwoDashesIsNotRead) {
  // Shell metacharacters, quotes and a fake token after "--": ignored.
  const std::string comment = "phasor model=resnet50 -- $(rm -rf /); `id` | 'x' \"y\" token=feed &";
  absl::StatusOr<JobSpec> spec = ParseJobSpec(comment);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->model, "resnet50");
  EXPECT_EQ(spec->token, "");
  EXPECT_TRUE(OptsIn("phasor -- anything at all"));
  EXPECT_FALSE(OptsIn("-- phasor"));
}

TEST(JobSpecTest, WithTokenKeepsOnlyPhasorsToken) {
  EXPECT_EQ(WithToken("phasor", "ab12"), "phasor token=ab12");
  EXPECT_EQ(WithToken("  phasor  model=x", "ab12"), "phasor token=ab12 model=x");
  // A token the user wrote (copied from another job) is replaced.
  EXPECT_EQ(WithToken("phasor token=0000 profile=p.json", "ab12"), "phasor token=ab12 profile=p.json");
  EXPECT_EQ(WithToken("phasor model=x -- a;b $(c) token=0000", "ab12"), "phasor token=ab12 model=x -- a;b $(c) token=0000");
  absl::StatusOr<JobSpec> back = ParseJobSpec(WithToken("phasor model=x -- token=0000", "ab12"));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->token, "ab12");
}

TEST(JobSpecTest, ProfilesFromFileModelAndDefault) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  std::ofstream(dir + "/a.json") << R"({"period_us": 200000, "square": {"up_us": 50000, "up_gbps": 80}})";
  std::ofstream(dir + "/bad.json") << R"({"period_us": 0})";
  ProfileResolverOptions o;
  o.profile_dir = dir;
  o.model_catalog_dir = std::string(PHASOR_SOURCE_DIR) + "/data/models";
  absl::StatusOr<ProfileResolver> r = ProfileResolver::Create(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  absl::StatusOr<placer::TrafficProfile> a = r->Resolve({"", "a.json", ""}, 2);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->period_us, 200000u);
  EXPECT_EQ(a->square->up_gbps, 80);
  EXPECT_EQ(r->Resolve({"", "bad.json", ""}, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r->Resolve({"", "none.json", ""}, 2).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<placer::TrafficProfile> d = r->Resolve({}, 2);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->period_us, 100000u);
  EXPECT_EQ(d->square->up_us, 30000u);
  EXPECT_EQ(d->square->start_us, 70000u);
  EXPECT_EQ(r->Resolve({"no-such-model", "", ""}, 2).status().code(), absl::StatusCode::kNotFound);
  ProfileResolverOptions none;
  absl::StatusOr<ProfileResolver> bare = ProfileResolver::Create(none);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->Resolve({"", "a.json", ""}, 2).status().message(), "profile=: no profile directory is configured");
  std::filesystem::remove_all(dir);
}

// Two partitions: gpu = n01..n04 (the default), cpu = n05..n08; n03, n04,
// n07, n08 have the feature ib; n04 and n08 have more memory and an hca
// GRES; n06 has 4 CPUs, the others 2; reservation "maint" holds n08.
ClusterState TwoPartitions(bool maint_active = true) {
  ClusterState c;
  for (int i = 1; i <= 8; ++i) {
    SlurmNode n;
    n.name = "n0" + std::to_string(i);
    n.state = "idle";
    n.partitions = {i <= 4 ? "gpu" : "cpu"};
    if (i == 3 || i == 4 || i == 7 || i == 8) n.features = {"ib"};
    n.cpus = i == 6 ? 4 : 2;
    n.real_memory_mb = i == 4 || i == 8 ? 4000 : 1000;
    n.tmp_disk_mb = 100;
    n.gres = i == 4 || i == 8 ? "hca:1" : "";
    c.nodes.push_back(std::move(n));
  }
  c.partitions = {{"gpu", {"n01", "n02", "n03", "n04"}, true, true}, {"cpu", {"n05", "n06", "n07", "n08"}, false, true}};
  c.reservations = {{"maint", {"n08"}, maint_active}};
  return c;
}

NodeDemand Demand(const std::map<std::string, std::string>& fields, const ClusterState& c = TwoPartitions()) {
  absl::StatusOr<JobRequest> r = JobRequestFromHook(fields, 1000);
  EXPECT_TRUE(r.ok()) << r.status().message();
  absl::StatusOr<NodeDemand> d = ResolveDemand(*r, c);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? *d : NodeDemand{};
}

std::string Untouched(const std::map<std::string, std::string>& fields, const ClusterState& c = TwoPartitions()) {
  absl::StatusOr<JobRequest> r = JobRequestFromHook(fields, 1000);
  if (!r.ok()) return std::string(r.status().message());
  absl::StatusOr<NodeDemand> d = ResolveDemand(*r, c);
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  return std::string(d.status().message());
}

TEST(JobRequestTest, PartitionsFeaturesAndCounts) {
  NodeDemand d = Demand({{"min_nodes", "2"}, {"max_nodes", "2"}});
  EXPECT_EQ(d.partition, "gpu");  // the default
  EXPECT_THAT(d.eligible, UnorderedElementsAre("n01", "n02", "n03", "n04"));
  EXPECT_EQ(d.count, 2u);
  EXPECT_TRUE(d.startable);
  d = Demand({{"partition", "cpu"}, {"min_nodes", "2"}});
  EXPECT_THAT(d.eligible, UnorderedElementsAre("n05", "n06", "n07"));  // n08 is reserved
  d = Demand({{"features", "ib"}, {"min_nodes", "2"}});
  EXPECT_THAT(d.eligible, UnorderedElementsAre("n03", "n04"));
  d = Demand({{"partition", "cpu"}, {"features", "ib|fast"}});
  EXPECT_THAT(d.eligible, UnorderedElementsAre("n07"));
  EXPECT_EQ(d.count, 1u);
  EXPECT_EQ(Untouched({{"features", "ib&fast"}}), "no node satisfies the job's restrictions");
  // -n 4 on 2-CPU nodes: two nodes; --ntasks-per-node=1: four.
  EXPECT_EQ(Demand({{"num_tasks", "4"}}).count, 2u);
  EXPECT_EQ(Demand({{"num_tasks", "4"}, {"ntasks_per_node", "1"}}).count, 4u);
  EXPECT_EQ(Demand({{"num_tasks", "3"}, {"cpus_per_task", "2"}}).count, 3u);
  // 4 CPUs per task: only n06.
  d = Demand({{"partition", "cpu"}, {"num_tasks", "1"}, {"cpus_per_task", "4"}});
  EXPECT_THAT(d.eligible, ElementsAre("n06"));
  d = Demand({{"partition", "cpu"}, {"pn_min_cpus", "3"}});
  EXPECT_THAT(d.eligible, ElementsAre("n06"));
  EXPECT_EQ(Untouched({{"num_tasks", "3"}, {"min_nodes", "1"}}), "3 tasks do not fit on 1 nodes");
  EXPECT_EQ(Untouched({{"num_tasks", "1"}, {"min_nodes", "2"}}), "2 nodes for 1 tasks");
  EXPECT_EQ(Untouched({{"min_nodes", "2"}, {"max_nodes", "3"}}), "a node range (2-3)");
  EXPECT_EQ(Untouched({{"min_nodes", "5"}}), "4 nodes satisfy the job's restrictions, it needs 5");
}

TEST(JobRequestTest, MemoryDiskGresReservationsAndExclusions) {
  EXPECT_THAT(Demand({{"min_mem_per_node", "2000"}}).eligible, ElementsAre("n04"));
  // 1 task of 1 CPU at 1500 MB per CPU: the 4000 MB nodes only.
  EXPECT_THAT(Demand({{"min_mem_per_cpu", "1500"}}).eligible, ElementsAre("n04"));
  EXPECT_EQ(Untouched({{"pn_min_tmp_disk", "101"}}), "no node satisfies the job's restrictions");
  EXPECT_THAT(Demand({{"tres_per_node", "gres:hca:1"}}).eligible, ElementsAre("n04"));
  EXPECT_EQ(Untouched({{"tres_per_node", "gres:hca:2"}}), "no node satisfies the job's restrictions");
  EXPECT_THAT(Demand({{"partition", "cpu"}, {"reservation", "maint"}}).eligible, ElementsAre("n08"));
  EXPECT_FALSE(Demand({{"partition", "cpu"}, {"reservation", "maint"}}, TwoPartitions(false)).startable);
  // An inactive reservation holds no node from other jobs.
  EXPECT_THAT(Demand({{"partition", "cpu"}}, TwoPartitions(false)).eligible,
              UnorderedElementsAre("n05", "n06", "n07", "n08"));
  EXPECT_EQ(Untouched({{"reservation", "nope"}}), "reservation 'nope' is unknown");
  EXPECT_THAT(Demand({{"exc_nodes", "n[01-02]"}}).eligible, UnorderedElementsAre("n03", "n04"));
  // Four cpu nodes, one reserved now: the job may wait for it (Slurm accepts it).
  NodeDemand wait = Demand({{"partition", "cpu"}, {"min_nodes", "4"}});
  EXPECT_EQ(wait.count, 4u);
  EXPECT_THAT(wait.eligible, UnorderedElementsAre("n05", "n06", "n07"));
}

TEST(JobRequestTest, WhatPhasorDoesNotModelIsSlurms) {
  EXPECT_EQ(Untouched({{"req_nodes", "n01"}}), "the job names its nodes (--nodelist)");
  EXPECT_EQ(Untouched({{"partition", "gpu,cpu"}}), "several partitions ('gpu,cpu')");
  EXPECT_EQ(Untouched({{"partition", "nope"}}), "partition 'nope' is unknown");
  EXPECT_EQ(Untouched({{"features", "[ib|fast]"}}), "constraint '[ib|fast]' has brackets or counts");
  EXPECT_EQ(Untouched({{"features", "ib*2"}}), "constraint 'ib*2' has brackets or counts");
  EXPECT_EQ(Untouched({{"features", "ib&a|b"}}), "constraint 'ib&a|b' mixes & and |");
  EXPECT_EQ(Untouched({{"array_inx", "0-3"}, {"tres_per_job", "gres:gpu:2"}}), "unsupported: array_inx, tres_per_job");
  EXPECT_EQ(Untouched({{"some_new_field", "1"}}), "unsupported: some_new_field");
  EXPECT_EQ(Untouched({{"contiguous", "1"}}), "unsupported: contiguous");
  EXPECT_TRUE(Demand({{"contiguous", "0"}}).startable);
  EXPECT_EQ(Untouched({{"min_nodes", "x"}}), "min_nodes: 'x' is not a count");
}

TEST(JobRequestTest, HeldDeferredAndDownAreNotStartable) {
  EXPECT_FALSE(Demand({{"priority", "0"}}).startable);
  EXPECT_TRUE(Demand({{"priority", "100"}}).startable);
  EXPECT_FALSE(Demand({{"begin_time", "2000"}}).startable);  // now is 1000
  EXPECT_TRUE(Demand({{"begin_time", "999"}}).startable);
  EXPECT_FALSE(Demand({{"dependency", "afterok:5"}}).startable);
  ClusterState down = TwoPartitions();
  down.partitions[0].up = false;
  EXPECT_FALSE(Demand({}, down).startable);
}

// Every field job_submit.lua sends is one the controller reads: a field
// the Lua gains without the controller learning it leaves jobs untouched.
TEST(JobRequestTest, EveryFieldTheHookSendsIsKnown) {
  std::ifstream in(std::string(PHASOR_SOURCE_DIR) + "/integrations/slurm/job_submit.lua");
  std::stringstream text;
  text << in.rdbuf();
  const std::string lua = text.str();
  const size_t start = lua.find("local FIELDS = {");
  ASSERT_NE(start, std::string::npos);
  const std::string table = lua.substr(start, lua.find("\n}\n", start) - start);
  std::regex name("\\{\"([a-z_]+)\"");
  size_t fields = 0;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), name); it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(IsKnownHookField((*it)[1].str())) << (*it)[1].str();
    ++fields;
  }
  EXPECT_GE(fields, 35u);
  // Squeue's view of a pending job reads the same way.
  SlurmJob job;
  job.partition = "cpu";
  job.features = "ib";
  job.node_count = 1;
  job.state_reason = "Priority";
  job.priority = 10;
  absl::StatusOr<NodeDemand> d = ResolveDemand(JobRequestFromSqueue(job), TwoPartitions());
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_THAT(d->eligible, ElementsAre("n07"));  // n08 is reserved
  EXPECT_EQ(d->count, 1u);
  job.priority = 0;
  EXPECT_TRUE(JobRequestFromSqueue(job).held);
}

TEST(HookProtocolTest, ValuesTravelPercentEncoded) {
  const std::string nasty = "a;b $(rm -rf /)\n`id`|&<>'\"%\t\xff";
  const std::string encoded = EncodeHookValue(nasty);
  EXPECT_EQ(encoded.find_first_of(" \n\t;$`|&<>'\"()"), std::string::npos) << encoded;
  absl::StatusOr<std::string> back = DecodeHookValue(encoded);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, nasty);
  EXPECT_EQ(EncodeHookValue("n[01-02],x.y_z:1/2@h+3=4"), "n[01-02],x.y_z:1/2@h+3=4");
  EXPECT_EQ(DecodeHookValue("ab%4").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeHookValue("%zz").status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::map<std::string, std::string>> lines =
      ParseHookLines("op=submit\ncomment=phasor%20--%20%24(x)\n\n");
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ((*lines)["comment"], "phasor -- $(x)");
  EXPECT_EQ(ParseHookLines("a=1\na=2\n").status().message(), "request line 2: 'a' given twice");
  EXPECT_EQ(ParseHookLines("a=%g1\n").status().message(),
            "request line 1: '%' at byte 0 is not followed by two hex digits");
  EXPECT_EQ(ParseHookLines(std::string(5000, 'a')).status().message(),
            "request: 5000 bytes exceed the limit of 4096");
}

TEST(NodeConfigTest, ParsesAndRefusesWhatWouldNotWork) {
  absl::StatusOr<NodeConfig> c = ParseNodeConfig(
      "controller: tcp://10.1.0.1:7420\ncontroller_public_key_file: /k/c.pub\nclient_key_prefix: /k/node\n"
      "phasord_request_endpoint: tcp://10.1.0.1:7410\nphasord_offset_endpoint: tcp://10.1.0.1:7412\n"
      "phasord_public_key_file: /k/p.pub\nagent_key_prefix: /k/agent\njobs_dir: /run/x\nagent_mode: pace\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->controller, "tcp://10.1.0.1:7420");
  EXPECT_EQ(c->agent_mode, "pace");
  EXPECT_EQ(c->controller_timeout_ms, 2000);
  absl::StatusOr<NodeConfig> local = ParseNodeConfig(
      "controller: unix:///run/phasor/slurm.sock\nphasord_request_endpoint: ipc:///run/p/r\n"
      "phasord_offset_endpoint: ipc:///run/p/o\n");
  ASSERT_TRUE(local.ok()) << local.status().message();
  EXPECT_EQ(local->jobs_dir, "/run/phasor/jobs");
  EXPECT_EQ(ParseNodeConfig("controller: tcp://10.1.0.1:7420\nphasord_request_endpoint: ipc:///r\n"
                            "phasord_offset_endpoint: ipc:///o\n")
                .status()
                .message(),
            "controller: 'tcp://10.1.0.1:7420' is not ipc:// or loopback: plain sockets are refused there; set "
            "controller_public_key_file and client_key_prefix");
  EXPECT_EQ(ParseNodeConfig("controler: x\n").status().message(), "controler: unknown key");
  EXPECT_EQ(ParseNodeConfig("phasord_request_endpoint: ipc:///r\n").status().message(), "controller: required");
  EXPECT_EQ(ParseNodeConfig("controller: unix:///s\nphasord_request_endpoint: ipc:///r\n").status().message(),
            "phasord_offset_endpoint: required");
  EXPECT_EQ(ParseNodeConfig("controller: unix:///s\nphasord_request_endpoint: ipc:///r\nphasord_offset_endpoint: "
                            "ipc:///o\ncontroller_timeout_ms: [1]\n")
                .status()
                .message(),
            "controller_timeout_ms: wrong type");
  EXPECT_EQ(LoadNodeConfig("/nonexistent/node.yaml").status().code(), absl::StatusCode::kNotFound);
  // Several phasords (a leader and its standbys): each endpoint of the list is checked.
  absl::StatusOr<NodeConfig> several = ParseNodeConfig(
      "controller: unix:///s\nphasord_request_endpoint: 'ipc:///r1, ipc:///r2'\nphasord_offset_endpoint: "
      "ipc:///o1,ipc:///o2\n");
  ASSERT_TRUE(several.ok()) << several.status().message();
  EXPECT_EQ(several->phasord_request_endpoint, "ipc:///r1, ipc:///r2");
  EXPECT_EQ(ParseNodeConfig("controller: unix:///s\nphasord_request_endpoint: ipc:///r1,tcp://10.1.0.2:7410\n"
                            "phasord_offset_endpoint: ipc:///o\n")
                .status()
                .message(),
            "phasord_request_endpoint: 'tcp://10.1.0.2:7410' is not ipc:// or loopback: plain sockets are refused "
            "there; set phasord_public_key_file and agent_key_prefix");
}

// SlurmCli runs the commands with a fixed argv and no shell: scripts stand
// in for sinfo, squeue and scontrol and record what they were given.
TEST(SlurmCliTest, PollsAndPinsThroughTheCommands) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  auto script = [&](const std::string& name, const std::string& body) {
    std::ofstream(dir + "/" + name) << "#!/bin/sh\n" << body;
    ::chmod((dir + "/" + name).c_str(), 0755);
  };
  script("sinfo", R"(echo '{"nodes": [{"name": "n01", "state": "idle", "partitions": ["gpu"], "cpus": 2}]}')" "\n");
  script("squeue", R"(echo '{"jobs": [{"job_id": 5, "job_state": "PENDING", "partition": "gpu", "node_count": 1}]}')" "\n");
  script("scontrol", "for a in \"$@\"; do printf '%s\\n' \"$a\"; done >>" + dir +
                         "/argv\n"
                         "case \"$2\" in partition) echo 'PartitionName=gpu Default=YES Nodes=n01 State=UP';;\n"
                         "reservation) echo 'No reservations in the system';;\n"
                         "esac\n"
                         "[ \"$1\" = update ] && [ \"$2\" = JobId=6 ] && { echo 'Job is no longer pending' >&2; exit 1; }\n"
                         "exit 0\n");
  SlurmCli cli({dir, 5000});
  absl::StatusOr<ClusterState> state = cli.Poll();
  ASSERT_TRUE(state.ok()) << state.status().message();
  ASSERT_EQ(state->nodes.size(), 1u);
  ASSERT_EQ(state->jobs.size(), 1u);
  ASSERT_EQ(state->partitions.size(), 1u);
  EXPECT_TRUE(state->reservations.empty());
  ASSERT_TRUE(cli.UpdatePendingJob("5", {"n01", "n02"}, "").ok());
  ASSERT_TRUE(cli.UpdatePendingJob("5", {}, "1-8").ok());
  absl::Status refused = cli.UpdatePendingJob("6", {"n01"}, "");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("Job is no longer pending"));
  EXPECT_EQ(cli.UpdatePendingJob("5;rm", {"n01"}, "").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cli.UpdatePendingJob("5", {"n01 x"}, "").code(), absl::StatusCode::kInvalidArgument);
  std::ifstream argv(dir + "/argv");
  std::stringstream all;
  all << argv.rdbuf();
  EXPECT_EQ(all.str(),
            "show\npartition\n--oneliner\nshow\nreservation\n--oneliner\n"
            "update\nJobId=5\nReqNodeList=n01,n02\nNumNodes=2-2\n"
            "update\nJobId=5\nReqNodeList=\nNumNodes=1-8\n"
            "update\nJobId=6\nReqNodeList=n01\nNumNodes=1-1\n");
  script("sinfo", "sleep 5\n");
  SlurmCli slow({dir, 200});
  EXPECT_EQ(slow.Poll().status().message(), "sinfo: no answer in 200 ms");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace phasor::slurm::slurm_test
