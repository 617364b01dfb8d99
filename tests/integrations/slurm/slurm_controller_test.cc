// The Slurm controller against an in-process phasord and a fake Slurm (the
// SlurmCommands seam: a cluster state the test sets, pins recorded and
// applied to it as scontrol would), its hook socket and its node endpoint.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integrations/slurm/controller.h"
#include "integrations/slurm/hook_client.h"
#include "integrations/slurm/hook_server.h"
#include "integrations/slurm/node_server.h"
#include "placer/candidates.h"
#include "nlohmann/json.hpp"
#include "protocol/curve_keys.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/testing/probe_publisher.h"
#include "topology/slurm_import.h"

namespace phasor::slurm::slurm_controller_test {
namespace {

using ::phasor::testing::DaemonHarness;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsSubsetOf;
using ::testing::SizeIs;

// tor1 = n01, n02, n05, n06; tor2 = n03, n04, n07, n08: each partition
// spans both leaves.
constexpr const char* kTopology =
    "SwitchName=tor1 Nodes=n[01-02],n[05-06]\nSwitchName=tor2 Nodes=n[03-04],n[07-08]\n"
    "SwitchName=spine Switches=tor[1-2]\n";

// A Slurm that answers from a state the test sets, and applies pins to it
// as scontrol update would.
class FakeSlurm : public SlurmCommands {
 public:
  FakeSlurm() {
    for (int i = 1; i <= 8; ++i) {
      SlurmNode n;
      n.name = "n0" + std::to_string(i);
      n.state = "idle";
      n.partitions = {i <= 4 ? "gpu" : "cpu"};
      if (i == 3 || i == 4 || i == 7 || i == 8) n.features = {"ib"};
      n.cpus = 2;
      n.real_memory_mb = 1000;
      state.nodes.push_back(std::move(n));
    }
    state.partitions = {{"gpu", {"n01", "n02", "n03", "n04"}, true, true},
                        {"cpu", {"n05", "n06", "n07", "n08"}, false, true}};
  }
  absl::StatusOr<ClusterState> Poll() override {
    std::lock_guard<std::mutex> lock(mu);
    ++polls;
    return state;
  }
  absl::Status UpdatePendingJob(const std::string& job, const std::vector<std::string>& nodes,
                                const std::string& num_nodes) override {
    std::lock_guard<std::mutex> lock(mu);
    updates.push_back(job + ":" + (nodes.empty() ? "-" + num_nodes : absl::StrJoin(nodes, ",")));
    for (SlurmJob& j : state.jobs) {
      if (j.id != job) continue;
      if (j.state != "PENDING") return absl::FailedPreconditionError("Job is no longer pending execution");
      j.required_nodes = absl::StrJoin(nodes, ",");
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError("Invalid job id specified");
  }

  // Test helpers (not thread-safe against the controller; call between its calls).
  void Busy(const std::string& job, const std::vector<std::string>& nodes, const std::string& comment = "") {
    for (SlurmNode& n : state.nodes) {
      if (std::find(nodes.begin(), nodes.end(), n.name) != nodes.end()) n.state = "allocated";
    }
    SlurmJob j;
    j.id = job;
    j.state = "RUNNING";
    j.nodes = nodes;
    j.comment = comment;
    state.jobs.push_back(j);
  }
  void Pending(const std::string& job, const std::string& comment, uint64_t priority, const std::string& partition,
               uint32_t nodes, const std::string& features = "") {
    SlurmJob j;
    j.id = job;
    j.state = "PENDING";
    j.comment = comment;
    j.priority = priority;
    j.partition = partition;
    j.node_count = nodes;
    j.max_nodes = nodes;
    j.features = features;
    j.state_reason = "Resources";
    state.jobs.push_back(j);
  }
  SlurmJob* Job(const std::string& id) {
    for (SlurmJob& j : state.jobs) {
      if (j.id == id) return &j;
    }
    return nullptr;
  }
  // The job ends: its nodes are held (COMPLETING) until the Epilog returns.
  void Completing(const std::string& id) { Job(id)->state = "COMPLETING"; }
  void Gone(const std::string& id) {
    SlurmJob* j = Job(id);
    for (SlurmNode& n : state.nodes) {
      if (std::find(j->nodes.begin(), j->nodes.end(), n.name) != j->nodes.end()) n.state = "idle";
    }
    state.jobs.erase(state.jobs.begin() + (j - state.jobs.data()));
  }
  // Slurm starts a pending job on `nodes`.
  void Run(const std::string& id, const std::vector<std::string>& nodes) {
    SlurmJob* j = Job(id);
    j->state = "RUNNING";
    j->nodes = nodes;
    for (SlurmNode& n : state.nodes) {
      if (std::find(nodes.begin(), nodes.end(), n.name) != nodes.end()) n.state = "allocated";
    }
  }

  std::mutex mu;
  ClusterState state;
  std::vector<std::string> updates;
  int polls = 0;
};

std::vector<std::string> Split(const std::string& list) {
  return absl::StrSplit(list, ',', absl::SkipEmpty());
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
    o.replan_timeout_ms = 2000;
    o.profiles.profile_dir = dir_;
    o.clock = [this] { return now_us_; };
    o.token_seed = 7;
    o.slurm = &slurm_;
    o.dump_dir = dir_;
    return o;
  }
  std::unique_ptr<SlurmController> Make(SlurmControllerOptions o) {
    absl::StatusOr<std::unique_ptr<SlurmController>> c = SlurmController::Create(std::move(o));
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::unique_ptr<SlurmController> Make() { return Make(Options()); }
  std::unique_ptr<client::Client> Client() {
    client::ClientOptions o;
    o.endpoint = phasord_.options().request_endpoint;
    return *client::Client::Connect(o);
  }
  static SubmitQuery Query(const std::string& comment, std::map<std::string, std::string> fields) {
    return {comment, std::move(fields), 0};
  }
  // The job the hook submitted with `answer` now shows in squeue as `id`.
  void Submitted(const std::string& id, const SubmitAnswer& answer, const std::string& partition, uint32_t nodes,
                 uint64_t priority = 100) {
    slurm_.Pending(id, answer.comment, priority, partition, nodes);
    slurm_.Job(id)->required_nodes = absl::StrJoin(answer.nodes, ",");
  }

  DaemonHarness phasord_;
  FakeSlurm slurm_;
  std::string dir_;
  int64_t now_us_ = 1'000'000'000;
};

TEST_F(ControllerTest, IdleClusterPinsAtSubmitAndCommitsAtStart) {
  auto c = Make();
  EXPECT_EQ(c->Submit(Query("phasor", {{"min_nodes", "2"}})).status().message(), "no Slurm state polled yet");
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> a = c->Submit(Query("phasor profile=heavy.json", {{"min_nodes", "3"}, {"max_nodes", "3"}}));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->token.size(), 32u);
  EXPECT_EQ(a->comment, "phasor token=" + a->token + " profile=heavy.json");
  ASSERT_THAT(a->nodes, SizeIs(3));
  EXPECT_THAT(a->nodes, IsSubsetOf({"n01", "n02", "n03", "n04"}));  // the default partition
  EXPECT_EQ(a->node_count, 3u);
  // A's nodes stay promised until it starts: B, in gpu too, gets the one left.
  absl::StatusOr<SubmitAnswer> b = c->Submit(Query("phasor", {}));
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_THAT(b->nodes, SizeIs(1));
  EXPECT_THAT(a->nodes, ::testing::Not(::testing::Contains(b->nodes[0])));

  Submitted("41", *a, "gpu", 3);
  Submitted("42", *b, "gpu", 1);
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_TRUE(slurm_.updates.empty());  // both would start on their pins: nothing to change
  slurm_.Run("41", a->nodes);
  // Slurm lists the nodes in its own order: the ring is the pin's (phasor's
  // ring order), on every node's Prolog.
  std::vector<std::string> slurm_order = a->nodes, ring;
  std::sort(slurm_order.rbegin(), slurm_order.rend());
  ASSERT_TRUE(c->Start("41", a->token, slurm_order, &ring).ok());
  EXPECT_EQ(ring, a->nodes);
  ring.clear();
  ASSERT_TRUE(c->Start("41", a->token, a->nodes, &ring).ok());  // every node's Prolog: once
  EXPECT_EQ(ring, a->nodes);
  auto phasord = Client();
  absl::StatusOr<v1::OffsetUpdate> offset = phasord->GetOffset("41");
  ASSERT_TRUE(offset.ok()) << offset.status().message();
  EXPECT_EQ(offset->period_us(), 100000u);
  EXPECT_EQ(c->counters().starts, 1u);
  EXPECT_EQ(c->counters().starts_on_pin, 1u);
  // The RankRequest behind A's pin is dumped.
  c->Flush();
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/" + a->token + ".json"));

  // A restarted controller knows job 41, and 42's token.
  c.reset();
  c = Make();
  EXPECT_EQ(c->Placed().at("41"), a->nodes);
  slurm_.Run("42", b->nodes);
  ASSERT_TRUE(c->Start("42", b->token, b->nodes).ok());
  EXPECT_EQ(c->Start("43", "", {"n05"}).code(), absl::StatusCode::kNotFound);

  // 42 ends (Epilog); 41 is requeued (the poll sees it pending).
  slurm_.Completing("42");
  ASSERT_TRUE(c->End("42", b->nodes[0]).ok());
  EXPECT_EQ(phasord->GetOffset("42").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(c->End("99", "n05").ok());  // not placed by phasor: nothing to do
  slurm_.Gone("42");
  slurm_.Job("41")->state = "PENDING";
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_EQ(phasord->GetOffset("41").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(c->Placed().empty());
  EXPECT_EQ(c->counters().releases, 2u);
}

// The cluster is busy: the opted-in job gets a token and waits unpinned.
// When a job ends, its Epilog (End) re-plans while its nodes are still held,
// and the waiting job is pinned to phasor's choice among them.
TEST_F(ControllerTest, BusyClusterPlacesTheWaitingJobWhenNodesFree) {
  auto c = Make();
  slurm_.Busy("10", {"n01", "n02"});
  slurm_.Busy("11", {"n03", "n04"});
  slurm_.Busy("12", {"n05", "n06", "n07", "n08"});
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> a = c->Submit(Query("phasor profile=heavy.json", {{"min_nodes", "2"}, {"max_nodes", "2"}}));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a->nodes.empty());
  EXPECT_EQ(a->unpinned_because, "0 free nodes it may use, it needs 2");
  Submitted("20", *a, "gpu", 2);
  // A poll: still nothing free, nothing pinned.
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_TRUE(slurm_.updates.empty());
  // Job 12 (cpu) ends: its nodes are not the job's partition's.
  slurm_.Completing("12");
  ASSERT_TRUE(c->End("12", "n05").ok());
  EXPECT_TRUE(slurm_.updates.empty());
  slurm_.Gone("12");
  // Job 11 ends: n03, n04 freeing, the gate pins job 20 there.
  slurm_.Completing("11");
  ASSERT_TRUE(c->End("11", "n03").ok());
  ASSERT_THAT(slurm_.updates, ElementsAre("20:n03,n04"));
  EXPECT_EQ(slurm_.Job("20")->required_nodes, "n03,n04");
  EXPECT_EQ(c->Pins().at("20"), Split("n03,n04"));
  // The other node's Epilog of job 11: already counted.
  ASSERT_TRUE(c->End("11", "n04").ok());
  EXPECT_THAT(slurm_.updates, SizeIs(1));
  EXPECT_EQ(c->counters().replan_pins, 1u);
  // A poll while the nodes still complete (the job already shows as ended):
  // the pin waits for them, it is not taken back.
  slurm_.Job("11")->state = "COMPLETED";
  for (SlurmNode& n : slurm_.state.nodes) {
    if (n.name == "n03" || n.name == "n04") n.flags = {"COMPLETING"};
  }
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_THAT(slurm_.updates, SizeIs(1));
  for (SlurmNode& n : slurm_.state.nodes) n.flags.clear();
  // Slurm starts it there; its Prolog commits it.
  slurm_.Gone("11");
  slurm_.Run("20", {"n03", "n04"});
  ASSERT_TRUE(c->Start("20", a->token, {"n03", "n04"}).ok());
  EXPECT_EQ(c->counters().starts_on_pin, 1u);
  EXPECT_TRUE(Client()->GetOffset("20").ok());
  // The dump behind the pin names the job by its Slurm id, on those nodes.
  c->Flush();
  std::ifstream in(dir_ + "/" + a->token + ".json");
  const nlohmann::json dumped = nlohmann::json::parse(in);
  bool found = false;
  for (const nlohmann::json& cand : dumped["candidates"]) {
    if (cand["servers"].contains("20") && cand["servers"]["20"] == nlohmann::json::parse(R"(["n03", "n04"])")) found = true;
  }
  EXPECT_TRUE(found) << dumped.dump();
}

// Slurm's priority order: a plain job ahead of the opted-in one takes the
// nodes that free first; the opted-in job is pinned only when nodes are
// free for it too.
TEST_F(ControllerTest, PendingJobsArePlacedInSlurmsPriorityOrder) {
  auto c = Make();
  slurm_.Busy("10", {"n01", "n02"});
  slurm_.Busy("11", {"n03", "n04"});
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> a = c->Submit(Query("phasor", {{"min_nodes", "2"}}));
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->nodes.empty());
  Submitted("21", *a, "gpu", 2, /*priority=*/50);
  slurm_.Pending("20", "plain", /*priority=*/90, "gpu", 2);  // ahead
  ASSERT_TRUE(c->Poll().ok());
  slurm_.Completing("10");
  ASSERT_TRUE(c->End("10", "n01").ok());
  EXPECT_TRUE(slurm_.updates.empty());  // n01, n02 go to job 20
  slurm_.Gone("10");
  slurm_.Run("20", {"n01", "n02"});
  slurm_.Completing("11");
  ASSERT_TRUE(c->End("11", "n03").ok());
  EXPECT_THAT(slurm_.updates, ElementsAre("21:n03,n04"));
  // A submission behind a waiting job in its partition is not pinned either.
  absl::StatusOr<SubmitAnswer> b = c->Submit(Query("phasor", {{"min_nodes", "1"}, {"partition", "cpu"}}));
  ASSERT_TRUE(b.ok());
  EXPECT_THAT(b->nodes, SizeIs(1));  // cpu is free and nobody waits there
  slurm_.Pending("30", "plain", 90, "cpu", 4);  // 3 cpu nodes are free: it waits, and holds cpu
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> d = c->Submit(Query("phasor", {{"min_nodes", "1"}, {"partition", "cpu"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->nodes.empty());
  EXPECT_EQ(d->unpinned_because, "jobs wait ahead of it in partition cpu");
}

// Partition, constraint and node count reach the choice: the pin is among
// the nodes the job may use, or there is none.
TEST_F(ControllerTest, RestrictionsAreHonoured) {
  auto c = Make();
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> ib = c->Submit(Query("phasor", {{"partition", "cpu"}, {"features", "ib"}, {"min_nodes", "2"}}));
  ASSERT_TRUE(ib.ok()) << ib.status().message();
  EXPECT_THAT(ib->nodes, ElementsAre("n07", "n08"));
  absl::StatusOr<SubmitAnswer> tasks = c->Submit(Query("phasor", {{"num_tasks", "4"}}));
  ASSERT_TRUE(tasks.ok()) << tasks.status().message();
  EXPECT_THAT(tasks->nodes, SizeIs(2));  // 4 tasks on 2-CPU nodes
  EXPECT_EQ(tasks->node_count, 2u);
  EXPECT_THAT(tasks->nodes, IsSubsetOf({"n01", "n02", "n03", "n04"}));
  // Only n05, n06 are left in cpu, and none has ib: untouched? No: it may
  // wait for n07, n08 (Slurm accepts it): a token, no pin.
  absl::StatusOr<SubmitAnswer> wait = c->Submit(Query("phasor", {{"partition", "cpu"}, {"features", "ib"}}));
  ASSERT_TRUE(wait.ok());
  EXPECT_TRUE(wait->nodes.empty());
  // What phasor does not model leaves the job untouched (no token).
  EXPECT_EQ(c->Submit(Query("phasor", {{"array_inx", "0-3"}})).status().message(), "unsupported: array_inx");
  EXPECT_EQ(c->Submit(Query("phasor", {{"features", "nope"}})).status().message(),
            "no node satisfies the job's restrictions");
  EXPECT_EQ(c->counters().declined, 2u);
}

// A pin that stopped matching (its nodes went to another job before the
// pinned job started) is taken back, so the job is not kept waiting for
// them; when nodes free again it is pinned anew.
TEST_F(ControllerTest, StalePinsAreTakenBack) {
  auto c = Make();
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> a = c->Submit(Query("phasor", {{"partition", "cpu"}, {"min_nodes", "2"}}));
  ASSERT_TRUE(a.ok());
  ASSERT_THAT(a->nodes, SizeIs(2));
  Submitted("30", *a, "cpu", 2);
  // Something else took the pinned nodes first (a job started outside the model).
  slurm_.Busy("31", a->nodes);
  std::vector<std::string> rest;
  for (const std::string n : {"n05", "n06", "n07", "n08"}) {
    if (std::find(a->nodes.begin(), a->nodes.end(), n) == a->nodes.end()) rest.push_back(n);
  }
  slurm_.Busy("32", rest);
  ASSERT_TRUE(c->Poll().ok());
  ASSERT_THAT(slurm_.updates, ElementsAre("30:-2"));
  EXPECT_EQ(slurm_.Job("30")->required_nodes, "");
  EXPECT_FALSE(c->Pins().contains("30"));
  EXPECT_EQ(c->counters().replan_unpins, 1u);
  // A job whose comment no longer carries its token is no longer phasor's:
  // its pin goes with its proposal.
  slurm_.state.jobs.clear();
  for (SlurmNode& n : slurm_.state.nodes) n.state = "idle";
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> b = c->Submit(Query("phasor", {{"partition", "cpu"}, {"min_nodes", "2"}}));
  ASSERT_TRUE(b.ok());
  ASSERT_THAT(b->nodes, SizeIs(2));
  Submitted("33", *b, "cpu", 2);
  slurm_.Busy("34", {"n01"});  // 33 waits (something else holds it back)
  slurm_.Job("33")->state_reason = "Priority";
  ASSERT_TRUE(c->Poll().ok());  // binds the token to 33
  EXPECT_TRUE(c->Pins().contains("33"));
  slurm_.Job("33")->comment = "phasor model=x";  // scontrol update Comment=...
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_EQ(slurm_.updates.back(), "33:-2");
  EXPECT_TRUE(c->Pins().empty());
}

// A submission whose job never shows (the hook gave up on the answer, or
// Slurm rejected the job) gives its nodes back; so does Abandon at once.
TEST_F(ControllerTest, AbandonedAndRejectedSubmissionsReleaseTheirNodes) {
  SlurmControllerOptions o = Options();
  o.unbound_grace_ms = 1000;
  auto c = Make(o);
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> a = c->Submit(Query("phasor", {{"min_nodes", "4"}}));
  ASSERT_TRUE(a.ok());
  ASSERT_THAT(a->nodes, SizeIs(4));
  absl::StatusOr<SubmitAnswer> b = c->Submit(Query("phasor", {{"min_nodes", "1"}}));
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->nodes.empty());  // gpu is all promised to a
  // A poll that began before the grace: a's job may still come.
  now_us_ += 500'000;
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_THAT(c->Pins(), SizeIs(1));
  now_us_ += 600'000;
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_TRUE(c->Pins().empty());
  EXPECT_EQ(c->counters().dropped_unbound, 2u);
  absl::StatusOr<SubmitAnswer> again = c->Submit(Query("phasor", {{"min_nodes", "4"}}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->nodes, a->nodes);
  c->Abandon(again->token);
  absl::StatusOr<SubmitAnswer> after = c->Submit(Query("phasor", {{"min_nodes", "4"}}));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->nodes, a->nodes);
  // An answer ready after the hook's deadline is not given.
  absl::StatusOr<SubmitAnswer> late = c->Submit({"phasor", {{"partition", "cpu"}}, now_us_ - 1});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
}

// A token belongs to the first job that carries it: a job whose comment was
// given another job's token gets nothing from it.
TEST_F(ControllerTest, ATokenCannotBeReusedByAnotherJob) {
  auto c = Make();
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> a = c->Submit(Query("phasor", {{"min_nodes", "2"}}));
  ASSERT_TRUE(a.ok());
  Submitted("50", *a, "gpu", 2);
  slurm_.Pending("51", a->comment, 100, "gpu", 2);  // a copy
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_EQ(c->counters().token_conflicts, 1u);
  slurm_.Run("51", {"n03", "n04"});
  absl::Status s = c->Start("51", a->token, {"n03", "n04"});
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "token: belongs to job 50");
  EXPECT_EQ(Client()->GetOffset("51").status().code(), absl::StatusCode::kNotFound);
  slurm_.Run("50", a->nodes);
  EXPECT_TRUE(c->Start("50", a->token, a->nodes).ok());
  // A job that runs without its Prolog reaching the controller is committed by the poll.
  absl::StatusOr<SubmitAnswer> b = c->Submit(Query("phasor", {{"partition", "cpu"}}));
  ASSERT_TRUE(b.ok());
  Submitted("52", *b, "cpu", 1);
  slurm_.Run("52", b->nodes);
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_TRUE(c->Placed().contains("52"));
}

TEST_F(ControllerTest, RunningJobsTakeTheProbesProfileAndTheirShiftIsPinned) {
  auto c = Make();
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> a = c->Submit(Query("phasor profile=heavy.json", {{"min_nodes", "2"}}));
  ASSERT_TRUE(a.ok()) << a.status().message();
  Submitted("41", *a, "gpu", 2);
  slurm_.Run("41", a->nodes);
  ASSERT_TRUE(c->Start("41", a->token, a->nodes).ok());
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
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> b = c->Submit(Query("phasor", {{"min_nodes", "2"}}));
  ASSERT_TRUE(b.ok()) << b.status().message();
  c->Flush();
  std::ifstream in(dir_ + "/" + b->token + ".json");
  const nlohmann::json dumped = nlohmann::json::parse(in);
  ASSERT_EQ(dumped["jobs"].size(), 2u);
  EXPECT_EQ(dumped["jobs"][0]["id"], "41");
  EXPECT_EQ(dumped["jobs"][0]["profile"]["period_us"], 200000);
  EXPECT_EQ(dumped["jobs"][0]["pinned_shift_us"], 0);
  EXPECT_EQ(dumped["jobs"][1]["id"], "submit-" + b->token);
  EXPECT_EQ(dumped["candidates"][0]["servers"]["41"], nlohmann::json(a->nodes));
}

// n01 is busy: topology/tree's best fit for one gpu node is n02 (the one
// left on tor1), which keeps tor2 wholly idle; the other candidate (n03)
// breaks tor2: keep_packing sends only the first to phasord.
TEST_F(ControllerTest, KeepPackingSendsNoCandidateThatBreaksAnIdleLeaf) {
  for (bool keep : {true, false}) {
    SCOPED_TRACE(keep ? "keep_packing" : "no keep_packing");
    SlurmControllerOptions o = Options();
    o.keep_packing = keep;
    o.state_path = dir_ + (keep ? "/keep.json" : "/all.json");
    auto c = Make(o);
    for (SlurmNode& n : slurm_.state.nodes) n.state = n.name == "n01" ? "allocated" : "idle";
    ASSERT_TRUE(c->Poll().ok());
    absl::StatusOr<SubmitAnswer> p = c->Submit(Query("phasor profile=heavy.json", {}));
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_THAT(p->nodes, ElementsAre("n02"));
    const size_t all =
        placer::LeafCandidates(*topology::ParseSlurmTopology(kTopology), {"n02", "n03", "n04"}, 1, 8)->size();
    ASSERT_EQ(all, 2u);
    if (keep) {
      EXPECT_EQ(p->candidates, 1u);
      EXPECT_EQ(c->counters().packing_dropped, 1u);
    } else {
      EXPECT_EQ(p->candidates, 2u);
      EXPECT_EQ(c->counters().packing_dropped, 0u);
    }
  }
}

TEST_F(ControllerTest, NodeFailureWithdrawsThePlacement) {
  auto c = Make();
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<SubmitAnswer> a = c->Submit(Query("phasor", {{"min_nodes", "2"}}));
  ASSERT_TRUE(a.ok());
  Submitted("5", *a, "gpu", 2);
  slurm_.Run("5", a->nodes);
  ASSERT_TRUE(c->Start("5", a->token, a->nodes).ok());
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_EQ(c->Placed().size(), 1u);
  for (SlurmNode& n : slurm_.state.nodes) {
    if (n.name == a->nodes[1]) n.state = "down";
  }
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_TRUE(c->Placed().empty());
  EXPECT_EQ(Client()->GetOffset("5").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ControllerTest, DeclinesWithTheReason) {
  auto c = Make();
  ASSERT_TRUE(c->Poll().ok());
  EXPECT_EQ(c->Submit(Query("hello", {})).status().message(), "comment: does not start with the word 'phasor'");
  EXPECT_EQ(c->Submit(Query("phasor profile=missing.json", {})).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c->Submit(Query("phasor", {{"req_nodes", "n01"}})).status().message(),
            "the job names its nodes (--nodelist)");
  EXPECT_EQ(c->counters().declined, 3u);
  // phasord gone: Unavailable within the submit deadline.
  phasord_.Stop();
  SlurmControllerOptions o = Options();
  o.submit_timeout_ms = 50;
  o.lifecycle_timeout_ms = 100;
  o.state_path = dir_ + "/other.json";
  auto fast = Make(o);
  EXPECT_FALSE(fast->Poll().ok());  // the snapshot fails; the state is kept
  absl::Status s = fast->Submit(Query("phasor", {})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("phasord: "));
}

TEST_F(ControllerTest, BadOptionsNameTheOption) {
  SlurmControllerOptions o = Options();
  o.topology_path = "";
  EXPECT_EQ(SlurmController::Create(o).status().message(), "topology_path: required");
  o = Options();
  o.slurm = nullptr;
  EXPECT_EQ(SlurmController::Create(o).status().message(), "slurm: required");
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

// The hook's socket: requests in lines, answered on a thread each; the one
// client (hook_client.h) keeps its deadline against a server that never
// answers.
// The hook's deadline passes while the controller prepares the candidates
// (the clock jumps past it after the two checks before the preparation): the
// answer is DeadlineExceeded at once, without routing or asking phasord (no
// request is dumped), and no pin is kept.
TEST_F(ControllerTest, ADeadlinePassedWhileTheCandidatesArePreparedAsksNoRanking) {
  int clock_calls = -1;  // < 0: not counting
  SlurmControllerOptions o = Options();
  o.clock = [this, &clock_calls] {
    if (clock_calls < 0) return now_us_;
    return ++clock_calls <= 2 ? now_us_ : now_us_ + 100'000;
  };
  auto c = Make(std::move(o));
  ASSERT_TRUE(c->Poll().ok());
  SubmitQuery q = Query("phasor profile=heavy.json", {{"min_nodes", "2"}, {"max_nodes", "2"}});
  q.deadline_us = now_us_ + 50'000;
  clock_calls = 0;
  absl::StatusOr<SubmitAnswer> a = c->Submit(q);
  clock_calls = -1;
  EXPECT_EQ(a.status(), absl::DeadlineExceededError("the hook's deadline passed while the candidates were "
                                                    "prepared: the job goes on unmodified"));
  c->Flush();
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_NE(entry.path().filename().string().rfind("submit-", 0), 0u) << entry.path();
  }
  EXPECT_TRUE(c->Pins().empty());
  // With time left, the same submission is ranked and pinned.
  q.deadline_us = 0;
  a = c->Submit(q);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->nodes, SizeIs(2));
}

TEST_F(ControllerTest, HookSocketAnswersAndTheClientKeepsItsDeadline) {
  auto c = Make();
  ASSERT_TRUE(c->Poll().ok());
  const std::string reply = AnswerHookRequest(*c, "op=submit\nmin_nodes=2\ncomment=phasor%20--%20a%3Bb\n", HookAccess::kAll);
  EXPECT_THAT(reply, HasSubstr("ok=1\ntoken="));
  EXPECT_THAT(reply, HasSubstr("%20--%20a%3Bb\nnodes="));
  EXPECT_EQ(AnswerHookRequest(*c, "op=submit\nmin_nodes=x\ncomment=phasor\n", HookAccess::kAll),
            "ok=0\nreason=min_nodes:%20%27x%27%20is%20not%20a%20count\n");
  EXPECT_EQ(AnswerHookRequest(*c, "op=submit\ncomment=phasor\n", HookAccess::kLifecycle),
            "ok=0\nreason=op:%20submit%20is%20taken%20on%20the%20hook%27s%20socket%20only\n");
  EXPECT_EQ(AnswerHookRequest(*c, "garbage", HookAccess::kAll), "ok=0\nreason=request%20line%201:%20expected%20key=value\n");
  EXPECT_EQ(AnswerHookRequest(*c, "op=rm\n", HookAccess::kAll), "ok=0\nreason=op:%20%27rm%27%20is%20not%20submit,%20start,%20end%20or%20ping\n");
  EXPECT_EQ(AnswerHookRequest(*c, "op=ping\n", HookAccess::kAll), "ok=1\nplaced=0\npolled=1\n");

  absl::StatusOr<std::unique_ptr<HookServer>> server = HookServer::Listen(dir_ + "/hook.sock", c.get());
  ASSERT_TRUE(server.ok()) << server.status().message();
  std::thread t([&] { (*server)->Serve(); });
  HookExchange pong = AskUnixSocket(dir_ + "/hook.sock", "op=ping\n", MonotonicMs() + 5000);
  ASSERT_TRUE(pong.ok) << pong.reply;
  EXPECT_EQ(pong.reply, "ok=1\nplaced=0\npolled=1\n");
  // The Prolog and Epilog on the controller's own host take the same socket.
  NodeConfig local;
  local.controller = "unix://" + dir_ + "/hook.sock";
  absl::StatusOr<std::string> end = AskController(local, "op=end\njob=77\nnode=n01\n");
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_EQ(*end, "ok=1\n");
  (*server)->Stop();
  t.join();
  HookExchange none = AskUnixSocket(dir_ + "/none.sock", "op=ping\n", MonotonicMs() + 1000);
  EXPECT_FALSE(none.ok);
  EXPECT_FALSE(none.timed_out);
  // A server that accepts and never answers: the client gives up at its deadline.
  const std::string mute = dir_ + "/mute.sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, mute.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  const int64_t start = MonotonicMs();
  HookExchange hung = AskUnixSocket(mute, "op=ping\n", start + 100);
  const int64_t took = MonotonicMs() - start;
  ::close(fd);
  EXPECT_FALSE(hung.ok);
  EXPECT_TRUE(hung.timed_out);
  EXPECT_EQ(hung.reply, "controller: no answer in time");
  EXPECT_GE(took, 100);
  EXPECT_LT(took, 2000);  // bounded by the deadline, not by the server
}

// The compute nodes' endpoint: CURVE with an allow-list over TCP; plain on
// ipc:// only; never submit.
TEST_F(ControllerTest, NodeEndpointSpeaksCurveWithAnAllowList) {
  auto c = Make();
  ASSERT_TRUE(c->Poll().ok());
  absl::StatusOr<protocol::CurveKeyPair> server_keys = protocol::GenerateCurveKeyPair();
  absl::StatusOr<protocol::CurveKeyPair> node_keys = protocol::GenerateCurveKeyPair();
  absl::StatusOr<protocol::CurveKeyPair> stranger = protocol::GenerateCurveKeyPair();
  ASSERT_TRUE(server_keys.ok() && node_keys.ok() && stranger.ok());
  ASSERT_TRUE(protocol::WriteKeyPair(*server_keys, dir_ + "/controller", false).ok());
  ASSERT_TRUE(protocol::WriteKeyPair(*node_keys, dir_ + "/node", false).ok());
  ASSERT_TRUE(protocol::WriteKeyPair(*stranger, dir_ + "/stranger", false).ok());
  std::ofstream(dir_ + "/allowed") << "# the nodes\n" << node_keys->public_key << "\n";
  NodeServerOptions o;
  o.endpoint = "tcp://127.0.0.1:0";
  o.secret_key_file = dir_ + "/controller.secret";
  o.public_key_file = dir_ + "/controller.pub";
  o.allowed_clients_file = dir_ + "/allowed";
  absl::StatusOr<std::unique_ptr<NodeServer>> server = NodeServer::Start(o, c.get());
  ASSERT_TRUE(server.ok()) << server.status().message();
  NodeConfig node;
  node.controller = (*server)->endpoint();
  node.controller_public_key_file = dir_ + "/controller.pub";
  node.client_key_prefix = dir_ + "/node";
  node.controller_timeout_ms = 3000;
  absl::StatusOr<std::string> pong = AskController(node, "op=ping\n");
  ASSERT_TRUE(pong.ok()) << pong.status().message();
  EXPECT_EQ(*pong, "ok=1\nplaced=0\npolled=1\n");
  absl::StatusOr<std::string> submit = AskController(node, "op=submit\ncomment=phasor\n");
  ASSERT_TRUE(submit.ok());
  EXPECT_THAT(*submit, HasSubstr("ok=0"));
  node.client_key_prefix = dir_ + "/stranger";
  node.controller_timeout_ms = 300;
  EXPECT_EQ(AskController(node, "op=ping\n").status().code(), absl::StatusCode::kUnavailable);
  node.client_key_prefix = dir_ + "/none";
  EXPECT_EQ(AskController(node, "op=ping\n").status().code(), absl::StatusCode::kInvalidArgument);
  // A controller that is down costs the connection budget, not the whole bound.
  const std::string down = (*server)->endpoint();
  server->reset();
  node.controller = down;
  node.client_key_prefix = dir_ + "/node";
  node.controller_timeout_ms = 5000;
  absl::Status gone = AskController(node, "op=ping\n").status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(gone.message(), absl::StrCat("controller at ", down, ": no connection in 500 ms"));
  // Plain TCP beyond loopback is refused; the key files go three together.
  o.secret_key_file.clear();
  o.endpoint = "tcp://10.1.2.3:7420";
  EXPECT_EQ(NodeServer::Start(o, c.get()).status().code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.endpoint = "ipc://" + dir_ + "/nodes";
  absl::StatusOr<std::unique_ptr<NodeServer>> plain = NodeServer::Start(o, c.get());
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  node = {};
  node.controller = "ipc://" + dir_ + "/nodes";
  node.controller_timeout_ms = 3000;
  EXPECT_EQ(*AskController(node, "op=ping\n"), "ok=1\nplaced=0\npolled=1\n");
}

}  // namespace
}  // namespace phasor::slurm::slurm_controller_test
