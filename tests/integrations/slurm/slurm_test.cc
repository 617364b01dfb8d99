// phasor_slurm without Slurm: Slurm's JSON, topology/tree-style candidates,
// the opt-in comment, and the controller against an in-process phasord.
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "gtest/gtest.h"
#include "tests/testing/probe_publisher.h"
#include "integrations/slurm/controller.h"
#include "integrations/slurm/hook_server.h"
#include "integrations/slurm/job_spec.h"
#include "integrations/slurm/slurm_state.h"
#include "integrations/slurm/tree_candidates.h"
#include "tests/daemon/daemon_harness.h"
#include "topology/slurm_import.h"

namespace phasor::slurm {
namespace {

using ::phasor::testing::DaemonHarness;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kTopology =
    "SwitchName=tor1 Nodes=n[01-04]\nSwitchName=tor2 Nodes=n[05-08]\nSwitchName=spine Switches=tor[1-2]\n";

topology::Topology Fabric() { return *topology::ParseSlurmTopology(kTopology); }

std::vector<std::vector<std::string>> Nodes(const std::vector<NodeSet>& sets) {
  std::vector<std::vector<std::string>> out;
  for (const NodeSet& s : sets) out.push_back(s.nodes);
  return out;
}

TEST(TreeCandidatesTest, SingleLeavesBestFitFirstThenSpanningFewestLeaves) {
  const topology::Topology fabric = Fabric();
  // tor1 has n04 free, tor2 has n05..n07.
  absl::StatusOr<std::vector<NodeSet>> one = EnumerateTreeCandidates(fabric, {"n04", "n05", "n06", "n07"}, 1, 8);
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(Nodes(*one), ElementsAre(ElementsAre("n04"), ElementsAre("n05")));
  absl::StatusOr<std::vector<NodeSet>> two = EnumerateTreeCandidates(fabric, {"n04", "n05", "n06", "n07"}, 2, 8);
  ASSERT_TRUE(two.ok());
  EXPECT_THAT(Nodes(*two), ElementsAre(ElementsAre("n05", "n06"), ElementsAre("n04", "n05")));
  EXPECT_EQ((*two)[0].leaves, 1u);
  EXPECT_EQ((*two)[1].leaves, 2u);
  absl::StatusOr<std::vector<NodeSet>> four = EnumerateTreeCandidates(fabric, {"n04", "n05", "n06", "n07"}, 4, 8);
  ASSERT_TRUE(four.ok());
  EXPECT_THAT(Nodes(*four), ElementsAre(ElementsAre("n04", "n05", "n06", "n07")));
  // Best fit: the leaf with fewer free nodes comes first.
  absl::StatusOr<std::vector<NodeSet>> fit =
      EnumerateTreeCandidates(fabric, {"n01", "n02", "n03", "n04", "n07", "n08"}, 2, 1);
  ASSERT_TRUE(fit.ok());
  EXPECT_THAT(Nodes(*fit), ElementsAre(ElementsAre("n07", "n08")));
}

TEST(TreeCandidatesTest, TooFewFreeNodesAndBadArguments) {
  const topology::Topology fabric = Fabric();
  absl::Status s = EnumerateTreeCandidates(fabric, {"n01", "zz"}, 2, 8).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "1 free nodes, the job needs 2");
  EXPECT_EQ(EnumerateTreeCandidates(fabric, {"n01"}, 0, 8).status().message(), "count: must be at least 1");
  EXPECT_EQ(EnumerateTreeCandidates(fabric, {"n01"}, 1, 0).status().message(), "max_candidates: must be at least 1");
}

TEST(SlurmStateTest, ParsesSinfoAndSqueue) {
  absl::StatusOr<std::vector<SlurmNode>> nodes = ParseSinfoJson(
      R"({"nodes": [{"name": "n01", "state": "idle", "state_flags": []},
                    {"name": "n02", "state": "idle", "state_flags": ["DRAIN"]},
                    {"name": "n03", "state": ["DOWN", "NOT_RESPONDING"]}], "errors": []})");
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_TRUE(NodeIsFree((*nodes)[0]));
  EXPECT_FALSE(NodeIsFree((*nodes)[1]));
  EXPECT_FALSE(NodeHasFailed((*nodes)[1]));
  EXPECT_EQ((*nodes)[2].state, "down");
  EXPECT_THAT((*nodes)[2].flags, ElementsAre("NOT_RESPONDING"));
  EXPECT_TRUE(NodeHasFailed((*nodes)[2]));
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueueJson(
      R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "nodes": "n[01-02],n05", "comment": "phasor"},
                   {"job_id": 8, "job_state": "PENDING", "nodes": ""}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "7");
  EXPECT_THAT((*jobs)[0].nodes, ElementsAre("n01", "n02", "n05"));
  EXPECT_TRUE(JobIsRunning((*jobs)[0]));
  EXPECT_FALSE(JobIsRunning((*jobs)[1]));
  EXPECT_EQ((*jobs)[1].comment, "");
}

TEST(SlurmStateTest, BadJsonNamesTheField) {
  EXPECT_EQ(ParseSinfoJson("nope").status().message(), "sinfo --json: output is not JSON");
  EXPECT_EQ(ParseSinfoJson(R"({"nodes": 3})").status().message(), "nodes: missing or not an array");
  EXPECT_EQ(ParseSinfoJson(R"({"nodes": [{"state": "idle"}]})").status().message(), "nodes[0].name: missing");
  EXPECT_EQ(ParseSqueueJson(R"({"jobs": [{"job_id": -1}]})").status().message(),
            "jobs[0].job_id: missing or not a non-negative integer");
  EXPECT_EQ(ParseSqueueJson(R"({"jobs": [{"job_id": 1, "job_state": "RUNNING", "nodes": "n[01-"}]})").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(JobSpecTest, OptInAndKeys) {
  EXPECT_TRUE(OptsIn("phasor"));
  EXPECT_TRUE(OptsIn("  phasor model=x"));
  EXPECT_FALSE(OptsIn("phasorx"));
  EXPECT_FALSE(OptsIn("run phasor"));
  EXPECT_FALSE(OptsIn(std::string(300, ' ') + "phasor"));
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

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(phasord_.Start());
    dir_ = ::phasor::testing::MakeTempDir();
    std::ofstream(dir_ + "/topology.conf") << kTopology;
    std::ofstream(dir_ + "/heavy.json") << R"({"period_us": 100000, "square": {"up_us": 50000, "up_gbps": 300}})";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  SlurmControllerOptions Options() {
    SlurmControllerOptions o;
    o.topology_path = dir_ + "/topology.conf";
    o.phasord_endpoint = phasord_.options().request_endpoint;
    o.state_path = dir_ + "/state.json";
    o.submit_timeout_ms = 2000;
    o.profiles.profile_dir = dir_;
    o.clock = [this] { return now_us_; };
    o.token_seed = 7;
    return o;
  }
  std::unique_ptr<SlurmController> Make() {
    absl::StatusOr<std::unique_ptr<SlurmController>> c = SlurmController::Create(Options());
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? *std::move(c) : nullptr;
  }
  static std::vector<SlurmNode> AllIdleBut(const std::set<std::string>& busy) {
    std::vector<SlurmNode> out;
    for (int i = 1; i <= 8; ++i) {
      const std::string n = "n0" + std::to_string(i);
      out.push_back({n, busy.contains(n) ? "allocated" : "idle", {}});
    }
    return out;
  }
  std::unique_ptr<client::Client> Client() {
    client::ClientOptions o;
    o.endpoint = phasord_.options().request_endpoint;
    return *client::Client::Connect(o);
  }

  DaemonHarness phasord_;
  std::string dir_;
  int64_t now_us_ = 1'000'000'000;
};

TEST_F(ControllerTest, SubmitStartEndKeepPhasordInStep) {
  auto c = Make();
  EXPECT_EQ(c->Submit({2, "phasor"}).status().message(), "no Slurm state polled yet");
  ASSERT_TRUE(c->Refresh(AllIdleBut({}), {}).ok());
  absl::StatusOr<Proposal> a = c->Submit({3, "phasor profile=heavy.json"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_THAT(a->nodes, ElementsAre("n01", "n02", "n03"));
  EXPECT_EQ(a->token.size(), 32u);
  // A's nodes stay promised until it starts: the next job goes elsewhere.
  absl::StatusOr<Proposal> b = c->Submit({2, "phasor"});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_THAT(b->nodes, ElementsAre("n05", "n06"));

  ASSERT_TRUE(c->Start(a->token, "41", {}).ok());
  ASSERT_TRUE(c->Start(a->token, "41", {}).ok());  // every node's Prolog: once
  EXPECT_EQ(c->Start("feed", "42", {}).code(), absl::StatusCode::kNotFound);
  auto phasord = Client();
  absl::StatusOr<v1::OffsetUpdate> offset = phasord->GetOffset("41");
  ASSERT_TRUE(offset.ok()) << offset.status().message();
  EXPECT_EQ(offset->period_us(), 100000u);
  EXPECT_EQ(c->counters().starts, 1u);

  // A restarted controller knows job 41 and B's token.
  c.reset();
  c = Make();
  EXPECT_THAT(c->Placed().at("41"), ElementsAre("n01", "n02", "n03"));
  ASSERT_TRUE(c->Start(b->token, "43", {"n05", "n06"}).ok());
  ASSERT_TRUE(phasord->GetOffset("43").ok());

  // 43 ends (Epilog); 41 is requeued (the poll sees it pending).
  ASSERT_TRUE(c->End("43").ok());
  EXPECT_EQ(phasord->GetOffset("43").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(c->End("99").ok());  // not placed by phasor: nothing to do
  ASSERT_TRUE(c->Refresh(AllIdleBut({}), {{"41", "PENDING", {}, "phasor"}}).ok());
  EXPECT_EQ(phasord->GetOffset("41").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(c->Placed().empty());
  EXPECT_EQ(c->counters().releases, 2u);
}

TEST_F(ControllerTest, RunningJobsTakeTheProbesProfileAndTheirShiftIsPinned) {
  SlurmControllerOptions o = Options();
  o.dump_dir = dir_;
  auto c = *SlurmController::Create(o);
  ASSERT_TRUE(c->Refresh(AllIdleBut({}), {}).ok());
  absl::StatusOr<Proposal> a = c->Submit({2, "phasor profile=heavy.json"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(c->Start(a->token, "41", {}).ok());
  // A probe measures job 41 (keyed by its Slurm job id) with another period.
  auto sender = *::phasor::testing::ConnectProbe(phasord_.options().profile_endpoint);
  v1::ProfileUpdate update;
  update.set_subject("41");
  update.set_period_us(200000);
  update.set_bin_us(100000);
  update.add_gbps(90);
  update.add_gbps(0);
  update.set_confidence(1);
  ASSERT_TRUE(sender->Publish(update));
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] { return phasord_.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}) == 1; }));
  ASSERT_TRUE(c->Refresh(AllIdleBut({"n01", "n02"}), {{"41", "RUNNING", {"n01", "n02"}, ""}}).ok());
  absl::StatusOr<Proposal> b = c->Submit({2, "phasor"});
  ASSERT_TRUE(b.ok()) << b.status().message();
  std::ifstream in(dir_ + "/" + b->token + ".json");
  const nlohmann::json dumped = nlohmann::json::parse(in);
  ASSERT_EQ(dumped["jobs"].size(), 2u);
  EXPECT_EQ(dumped["jobs"][0]["id"], "41");
  EXPECT_EQ(dumped["jobs"][0]["profile"]["period_us"], 200000);
  EXPECT_EQ(dumped["jobs"][0]["pinned_shift_us"], 0);
  EXPECT_EQ(dumped["jobs"][1]["id"], "submit-" + b->token);
  EXPECT_EQ(dumped["candidates"][0]["servers"]["41"], nlohmann::json::parse(R"(["n01", "n02"])"));
}

// n01, n02 are busy: topology/tree's best fit for two nodes is n03, n04
// (tor1's rest), which leaves tor2 whole. Every other candidate takes from
// tor2 and leaves no leaf idle: keep_packing sends only the first to phasord.
TEST_F(ControllerTest, KeepPackingSendsNoCandidateThatBreaksAnIdleLeaf) {
  for (bool keep : {true, false}) {
    SCOPED_TRACE(keep ? "keep_packing" : "no keep_packing");
    SlurmControllerOptions o = Options();
    o.keep_packing = keep;
    o.dump_dir = dir_;
    o.state_path = dir_ + (keep ? "/keep.json" : "/all.json");
    auto c = *SlurmController::Create(o);
    // n99 is idle but not in topology.conf: ignored, as by topology/tree.
    std::vector<SlurmNode> nodes = AllIdleBut({"n01", "n02"});
    nodes.push_back({"n99", "idle", {}});
    ASSERT_TRUE(c->Refresh(nodes, {}).ok());
    absl::StatusOr<Proposal> p = c->Submit({2, "phasor profile=heavy.json"});
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_THAT(p->nodes, ElementsAre("n03", "n04"));
    std::ifstream in(dir_ + "/" + p->token + ".json");
    const nlohmann::json dumped = nlohmann::json::parse(in);
    const size_t all = EnumerateTreeCandidates(Fabric(), {"n03", "n04", "n05", "n06", "n07", "n08"}, 2, 8)->size();
    ASSERT_GE(all, 2u);
    if (keep) {
      EXPECT_EQ(p->candidates, 1u);
      ASSERT_EQ(dumped["candidates"].size(), 1u);
      EXPECT_EQ(dumped["candidates"][0]["servers"]["submit-" + p->token], nlohmann::json::parse(R"(["n03", "n04"])"));
      EXPECT_EQ(c->counters().packing_dropped, all - 1);
    } else {
      EXPECT_EQ(p->candidates, all);
      EXPECT_EQ(dumped["candidates"].size(), all);
      EXPECT_EQ(c->counters().packing_dropped, 0u);
    }
  }
}

TEST_F(ControllerTest, NodeFailureWithdrawsThePlacement) {
  auto c = Make();
  ASSERT_TRUE(c->Refresh(AllIdleBut({}), {}).ok());
  absl::StatusOr<Proposal> a = c->Submit({2, "phasor"});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(c->Start(a->token, "5", {}).ok());
  std::vector<SlurmNode> nodes = AllIdleBut({"n01", "n02"});
  ASSERT_TRUE(c->Refresh(nodes, {{"5", "RUNNING", {"n01", "n02"}, ""}}).ok());
  EXPECT_EQ(c->Placed().size(), 1u);
  nodes[1].state = "down";
  ASSERT_TRUE(c->Refresh(nodes, {{"5", "RUNNING", {"n01", "n02"}, ""}}).ok());
  EXPECT_TRUE(c->Placed().empty());
  EXPECT_EQ(Client()->GetOffset("5").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ControllerTest, DeclinesWithTheReason) {
  auto c = Make();
  ASSERT_TRUE(c->Refresh(AllIdleBut({"n01", "n02", "n03", "n04", "n05", "n06", "n07"}), {}).ok());
  EXPECT_EQ(c->Submit({2, "phasor"}).status().message(), "1 free nodes, the job needs 2");
  EXPECT_EQ(c->Submit({1, "hello"}).status().message(), "comment: does not start with the word 'phasor'");
  EXPECT_EQ(c->Submit({1, "phasor profile=missing.json"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c->counters().declined, 3u);
  // phasord gone: Unavailable within the submit deadline.
  phasord_.Stop();
  SlurmControllerOptions o = Options();
  o.submit_timeout_ms = 50;
  o.lifecycle_timeout_ms = 100;
  o.state_path = dir_ + "/other.json";
  auto fast = *SlurmController::Create(o);
  ASSERT_FALSE(fast->Refresh(AllIdleBut({}), {}).ok());  // the snapshot fails; the state is kept
  absl::Status s = fast->Submit({1, "phasor"}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("phasord: "));
}

TEST_F(ControllerTest, HookRequestsAnswerInLines) {
  auto c = Make();
  ASSERT_TRUE(c->Refresh(AllIdleBut({}), {}).ok());
  const std::string reply = AnswerHookRequest(*c, "op=submit\nnodes=2\ncomment=phasor\n");
  EXPECT_THAT(reply, HasSubstr("ok=1\nnodes=n01,n02\ntoken="));
  EXPECT_EQ(AnswerHookRequest(*c, "op=submit\nnodes=x\n"), "ok=0\nreason=nodes: must be a positive integer\n");
  EXPECT_EQ(AnswerHookRequest(*c, "op=submit\nnodes=1\nnodes=2\n"), "ok=0\nreason=request line 3: 'nodes' given twice\n");
  EXPECT_EQ(AnswerHookRequest(*c, "garbage"), "ok=0\nreason=request line 1: expected key=value\n");
  EXPECT_EQ(AnswerHookRequest(*c, "op=rm\n"), "ok=0\nreason=op: 'rm' is not submit, start, end or ping\n");
  EXPECT_EQ(AnswerHookRequest(*c, "op=ping\n"), "ok=1\nplaced=0\n");
  EXPECT_EQ(AnswerHookRequest(*c, std::string(5000, 'a')), "ok=0\nreason=request: 5000 bytes exceed the limit of 4096\n");

  // Over the socket.
  absl::StatusOr<std::unique_ptr<HookServer>> server = HookServer::Listen(dir_ + "/hook.sock", c.get());
  ASSERT_TRUE(server.ok()) << server.status().message();
  std::thread t([&] { (*server)->Serve(); });
  absl::StatusOr<std::string> pong = AskHookServer(dir_ + "/hook.sock", "op=ping\n", 2000);
  (*server)->Stop();
  t.join();
  ASSERT_TRUE(pong.ok()) << pong.status().message();
  EXPECT_EQ(*pong, "ok=1\nplaced=0\n");
  EXPECT_EQ(AskHookServer(dir_ + "/none.sock", "op=ping\n", 100).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ControllerTest, BadOptionsNameTheOption) {
  SlurmControllerOptions o = Options();
  o.topology_path = "";
  EXPECT_EQ(SlurmController::Create(o).status().message(), "topology_path: required");
  o = Options();
  o.submit_timeout_ms = 0;
  EXPECT_EQ(SlurmController::Create(o).status().message(), "submit_timeout_ms: must be positive");
  o = Options();
  o.topology_path = dir_ + "/none.conf";
  EXPECT_EQ(SlurmController::Create(o).status().code(), absl::StatusCode::kNotFound);
  std::ofstream(dir_ + "/broken.json") << "{";
  o = Options();
  o.state_path = dir_ + "/broken.json";
  EXPECT_THAT(std::string(SlurmController::Create(o).status().message()), HasSubstr("not a JSON object"));
}

}  // namespace
}  // namespace phasor::slurm
