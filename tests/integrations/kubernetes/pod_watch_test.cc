// The extender lets go: a PodWatcher follows a stand-in API server that
// streams its watch as the real one does (chunked, long-lived, one event a
// line, 410 Gone after a compaction, both as an ERROR event and as the
// answer to a watch from a version too old), and a real phasord (in process,
// ipc://) holds the commits. Jobs are committed when their pods land where
// the default binder put them, and released when a pod finishes or goes,
// including while nobody watched (the relist finds it gone) and before a
// restart (phasord's job, no pod: released; pods running: adopted).
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integrations/client/client.h"
#include "integrations/kubernetes/extender.h"
#include "integrations/kubernetes/pod_watcher.h"
#include "placer/rank_json.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/integrations/kubernetes/fake_api_server.h"

namespace phasor::kubernetes {
namespace pod_watch_test {
namespace {

using ::phasor::testing::DaemonHarness;
using ::phasor::testing::FakeApiServer;
using nlohmann::json;

const std::string& Fabric() {
  static const std::string path = std::string(PHASOR_SOURCE_DIR) + "/tests/integrations/kubernetes/leaf_spine_4x4.yaml";
  return path;
}

std::vector<std::string> Nodes() {
  std::vector<std::string> n;
  for (int i = 1; i <= 16; ++i) n.push_back("s" + std::to_string(i));
  return n;
}

json Profile() { return {{"period_us", 200000}, {"square", {{"up_us", 60000}, {"up_gbps", 40.0}}}}; }

// A training pod of job ml/<group> (size pods) for the phasor scheduler.
json TrainingPod(const std::string& name, const std::string& group, int size) {
  return FakeApiServer::Pod("ml", name, "phasor-scheduler", {{"scheduling.x-k8s.io/pod-group", group}},
                            {{"phasor.io/job-size", std::to_string(size)}, {"phasor.io/profile", Profile().dump()}});
}

// The jobs phasord holds an offset for.
std::set<std::string> PhasordJobs(const DaemonHarness& phasord) {
  client::ClientOptions o;
  o.endpoint = phasord.options().request_endpoint;
  auto c = client::Client::Connect(o);
  std::set<std::string> jobs;
  if (!c.ok()) return jobs;
  absl::StatusOr<v1::Snapshot> s = (*c)->GetSnapshot();
  if (!s.ok()) return jobs;
  for (const v1::OffsetUpdate& off : s->offsets()) jobs.insert(off.job());
  return jobs;
}

bool Eventually(const std::function<bool()>& f) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return f();
}

void TweakPhasord(daemon::DaemonOptions& o) {
  o.topology_path = Fabric();
  o.metrics_listen = "";
}

class PodWatchTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(phasord_.Start()); }

  void StartExtender() {
    ExtenderOptions o;
    o.phasord_endpoint = phasord_.options().request_endpoint;
    o.topology_path = Fabric();
    o.phasord_timeout_ms = 2000;  // decisions, not bounds, are tested here
    o.http_timeout_ms = 2 * o.phasord_timeout_ms + kTimeoutMarginMs;
    auto e = Extender::Create(o);  // bind_verb off: the scheduler's binder binds
    ASSERT_TRUE(e.ok()) << e.status();
    extender_ = *std::move(e);
    PodWatcherOptions w;
    w.api.url = api_.url();
    w.api.token_file = "";
    w.api.ca_file = "";
    w.list_page_size = 2;  // lists come in pages
    w.watch_timeout_s = 60;
    w.retry_ms = 50;
    auto watcher = PodWatcher::Start(w, ExtenderSink(*extender_));
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    watcher_ = *std::move(watcher);
    ASSERT_TRUE(Eventually([&] { return api_.watches_open() == 1; }));
  }
  void StopExtender() {
    watcher_.reset();
    extender_.reset();
  }

  // kube-scheduler asks the extender about the job's first pod (the plan),
  // then the default binder binds every pod where the plan says.
  std::vector<std::string> PlaceJob(const std::string& group, int size) {
    for (int i = 0; i < size; ++i) api_.Add(TrainingPod(group + "-" + std::to_string(i), group, size));
    ExtenderArgs args;
    args.pod = *PodFromJson(TrainingPod(group + "-0", group, size), "Pod");
    args.node_names = Nodes();
    extender_->Prioritize(args);
    std::optional<JobPlan> plan = extender_->PlanOf("ml/" + group);
    EXPECT_TRUE(plan.has_value()) << group;
    if (!plan) return {};
    for (int i = 0; i < size; ++i) api_.SetNode("ml", group + "-" + std::to_string(i), plan->nodes[i]);
    EXPECT_TRUE(Eventually([&] { return PhasordJobs(phasord_).contains("ml/" + group); })) << group;
    return plan->nodes;
  }

  DaemonHarness phasord_{TweakPhasord};
  FakeApiServer api_;
  std::unique_ptr<Extender> extender_;
  std::unique_ptr<PodWatcher> watcher_;
};

TEST_F(PodWatchTest, JobsAreReleasedWhenTheirPodsEndAndAfterEveryKindOf410) {
  // A pod of another scheduler is never selected.
  api_.Add(FakeApiServer::Pod("ml", "other-0", "default-scheduler", {{"scheduling.x-k8s.io/pod-group", "other"}},
                              {{"phasor.io/job-size", "1"}}));
  StartExtender();
  const std::string listed_at = std::to_string(api_.resource_version());

  // 1. A pod that succeeds ends its job: released in phasord, forgotten.
  PlaceJob("a", 2);
  EXPECT_EQ(extender_->CommittedJobs(), (std::set<std::string>{"ml/a"}));
  api_.SetPhase("ml", "a-0", "Succeeded");
  EXPECT_TRUE(Eventually([&] { return !PhasordJobs(phasord_).contains("ml/a"); }));
  EXPECT_TRUE(extender_->CommittedJobs().empty());
  EXPECT_FALSE(extender_->PlanOf("ml/a").has_value());
  ASSERT_TRUE(extender_->WaitIdle(10000));
  EXPECT_EQ(extender_->stats().releases, 1u);
  EXPECT_EQ(extender_->stats().commits, 1u);
  // One long-lived stream carried every event so far, from the list's version.
  EXPECT_EQ(api_.watch_versions(), std::vector<std::string>{listed_at});
  EXPECT_GE(watcher_->stats().events, 5u);  // two added, two bound, one succeeded

  // 2. The history is compacted and the open watch cut with an ERROR event
  // (410); b's pod was deleted meanwhile, and no event said so. The relist
  // does not list it: b is released.
  PlaceJob("b", 1);
  const int lists_before = api_.lists();
  api_.Delete("ml", "b-0", /*tell_watches=*/false);
  api_.Compact(/*cut_watches=*/true);
  EXPECT_TRUE(Eventually([&] { return !PhasordJobs(phasord_).contains("ml/b"); }));
  EXPECT_GE(watcher_->stats().gone, 1u);
  EXPECT_GT(api_.lists(), lists_before);

  // 3. A watch ends cleanly, and the version it would resume from has been
  // compacted away: the new watch is answered 410, the relist does not list
  // c's deleted pod, c is released.
  ASSERT_TRUE(Eventually([&] { return api_.watches_open() == 1; }));
  PlaceJob("c", 1);
  const uint64_t gone_before = watcher_->stats().gone;
  api_.Delete("ml", "c-0", /*tell_watches=*/false);
  api_.Compact(/*cut_watches=*/false);
  api_.EndWatches();
  EXPECT_TRUE(Eventually([&] { return !PhasordJobs(phasord_).contains("ml/c"); }));
  EXPECT_GT(watcher_->stats().gone, gone_before);
  // 4. A deletion the watch reports releases at once.
  ASSERT_TRUE(Eventually([&] { return api_.watches_open() == 1; }));
  PlaceJob("d", 1);
  api_.Delete("ml", "d-0");
  EXPECT_TRUE(Eventually([&] { return !PhasordJobs(phasord_).contains("ml/d"); }));
  ASSERT_TRUE(extender_->WaitIdle(10000));
  EXPECT_EQ(extender_->stats().releases, 4u);
  EXPECT_EQ(extender_->stats().commits, 4u);
  EXPECT_TRUE(extender_->CommittedJobs().empty());
  EXPECT_TRUE(PhasordJobs(phasord_).empty());
  // Every request went to the pods of the extender's scheduler.
  for (const std::string& p : api_.paths()) {
    EXPECT_THAT(p, ::testing::StartsWith("/api/v1/pods?fieldSelector=spec.schedulerName%3Dphasor-scheduler&")) << p;
  }
}

// Placed by an extender that stopped: phasord holds ml/gone (its pod ended
// while no extender ran), ml/alive (its pod runs) and job 1234 (another
// integration's id). The new extender releases ml/gone after its first list,
// adopts ml/alive (and releases it when its pod goes), and leaves 1234.
TEST_F(PodWatchTest, AfterARestartEndedJobsAreReleasedAndRunningOnesAdopted) {
  client::ClientOptions co;
  co.endpoint = phasord_.options().request_endpoint;
  auto c = *client::Client::Connect(co);
  for (const auto& [job, server] : std::vector<std::pair<std::string, std::string>>{
           {"ml/gone", "s1"}, {"ml/alive", "s2"}, {"1234", "s3"}}) {
    placer::RankRequest r;
    r.jobs = {{job, *placer::TrafficProfileFromJson(Profile(), "p"), std::nullopt}};
    placer::Candidate cand;
    cand.id = "x";
    cand.servers[job] = {server};
    r.candidates = {cand};
    auto ranked = c->Rank(r);
    ASSERT_TRUE(ranked.ok()) << ranked.status();
    ASSERT_TRUE(c->Commit(ranked->ranking_id, "x").ok());
  }
  api_.Add(TrainingPod("alive-0", "alive", 1));
  api_.SetNode("ml", "alive-0", "s2");
  StartExtender();
  EXPECT_TRUE(Eventually([&] { return PhasordJobs(phasord_) == std::set<std::string>{"1234", "ml/alive"}; }));
  ASSERT_TRUE(extender_->WaitIdle(10000));
  EXPECT_EQ(extender_->stats().jobs_adopted, 1u);
  EXPECT_EQ(extender_->CommittedJobs(), (std::set<std::string>{"ml/alive"}));
  api_.Delete("ml", "alive-0");
  EXPECT_TRUE(Eventually([&] { return PhasordJobs(phasord_) == std::set<std::string>{"1234"}; }));
}

// What a pod object says: its node, and whether it finished (a terminal
// phase, or a deletion under way).
TEST(PodStateTest, ThePodsStateComesFromItsObject) {
  json pod = FakeApiServer::Pod("ml", "p-0", "phasor-scheduler", json::object(), json::object());
  absl::StatusOr<PodState> s = PodStateFromJson(pod, "o");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->pod.name, "p-0");
  EXPECT_EQ(s->node, "");
  EXPECT_FALSE(s->finished);
  pod["spec"]["nodeName"] = "s4";
  pod["status"]["phase"] = "Failed";
  s = PodStateFromJson(pod, "o");
  EXPECT_EQ(s->node, "s4");
  EXPECT_TRUE(s->finished);
  pod["status"]["phase"] = "Running";
  pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  EXPECT_TRUE(PodStateFromJson(pod, "o")->finished);
  EXPECT_EQ(PodStateFromJson(json::array(), "o").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pod_watch_test
}  // namespace phasor::kubernetes
