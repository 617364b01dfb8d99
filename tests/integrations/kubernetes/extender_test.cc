// The extender end to end: a harness plays kube-scheduler from the contract
// (filter, then prioritize in parallel with a stand-in for the in-tree
// plugins, score x weight x 10 added, bind through the extender) and the API
// server (records Bindings); a real phasord ranks and receives commits.
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "integrations/kubernetes/api_binder.h"
#include "integrations/kubernetes/extender.h"
#include "integrations/kubernetes/http_server.h"
#include "placer/rank_json.h"
#include "protocol/running_jobs.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/testing/subprocess.h"

namespace phasor::kubernetes {
namespace {

using ::phasor::testing::DaemonHarness;
using nlohmann::json;

// TCP ports of this test (loopback, 27410-27451).
constexpr int kApiPort = 27411;
constexpr int kExtenderPort = 27410;

const std::string& Fabric() {
  static const std::string path = std::string(PHASOR_SOURCE_DIR) + "/tests/integrations/kubernetes/leaf_spine_4x4.yaml";
  return path;
}

std::vector<std::string> AllNodes() {
  std::vector<std::string> n;
  for (int i = 1; i <= 16; ++i) n.push_back("s" + std::to_string(i));
  return n;
}

// Up 120 ms of a 200 ms period at 80 Gbit/s: two such jobs on one link
// cannot interleave fully (2u - 1 = 0.2).
json SquareProfile() { return {{"period_us", 200000}, {"square", {{"up_us", 120000}, {"up_gbps", 80.0}}}}; }

// Plays the API server: records each Binding's target.
class FakeApiServer {
 public:
  explicit FakeApiServer(int port) {
    server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   json b = json::parse(req.body, nullptr, false);
                   if (b.is_discarded() || b.value("kind", "") != "Binding" ||
                       b["target"].value("kind", "") != "Node") {
                     res.status = 400;
                     return;
                   }
                   std::lock_guard<std::mutex> lock(mu_);
                   const std::string pod = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
                   if (fail_) {
                     res.status = 409;
                     res.set_content("conflict", "text/plain");
                     return;
                   }
                   bound_[pod] = b["target"]["name"].get<std::string>();
                   res.status = 201;
                   res.set_content("{}", "application/json");
                 });
    EXPECT_TRUE(server_.bind_to_port("127.0.0.1", port));
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeApiServer() {
    server_.stop();
    thread_.join();
  }
  std::map<std::string, std::string> bound() {
    std::lock_guard<std::mutex> lock(mu_);
    return bound_;
  }
  void set_fail(bool fail) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = fail;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, std::string> bound_;
  bool fail_ = false;
};

// The binder of a FakeApiServer on `port` (plain HTTP, no token).
ApiServerOptions FakeApiOptions(int port) {
  ApiServerOptions ao;
  ao.url = "http://127.0.0.1:" + std::to_string(port);
  ao.token_file = "";
  return ao;
}

json PodJson(const std::string& ns, const std::string& name, const std::string& group, int size,
             const json& profile) {
  json annotations = {{"phasor.io/job-size", std::to_string(size)}};
  if (!profile.is_null()) annotations["phasor.io/profile"] = profile.dump();
  json labels = json::object();
  if (!group.empty()) labels["scheduling.x-k8s.io/pod-group"] = group;
  return {{"metadata",
           {{"name", name}, {"namespace", ns}, {"uid", ns + "-" + name + "-uid"}, {"labels", labels},
            {"annotations", annotations}}},
          {"spec", {{"containers", json::array({{{"name", "train"},
                                                  {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}})}}}};
}

// Plays kube-scheduler with one extender (nodeCacheCapable: true, weight 20,
// filter + prioritize + bind), one pod per node (NodeResourcesFit of 8-GPU
// pods on 8-GPU nodes), in-tree scores from a fixed stand-in.
class SchedulerHarness {
 public:
  SchedulerHarness(int extender_port, int weight) : client_("127.0.0.1", extender_port), weight_(weight) {
    client_.set_read_timeout(5, 0);  // the scheduler's default httpTimeout
  }

  // The stand-in for the in-tree plugins (their sum is about 1,200 points at
  // most): it prefers nodes in a scrambled order, not the fabric's.
  static int64_t InTreeScore(const std::string& node) {
    const int i = std::stoi(node.substr(1)) - 1;
    return 1200 - 40 * ((i * 5) % 16);
  }

  // Schedules one pod; returns the node bound, or "" when the cycle failed.
  std::string Schedule(const json& pod, const std::set<std::string>& occupied) {
    std::vector<std::string> feasible;
    for (const std::string& n : AllNodes()) {
      if (!occupied.contains(n)) feasible.push_back(n);
    }
    // Filter extenders run in sequence, each narrowing the list.
    const json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", feasible}};
    httplib::Result f = client_.Post("/phasor/filter", args.dump(), "application/json");
    if (!f || f->status != 200) return "";
    json filtered = json::parse(f->body);
    if (!filtered["Error"].get<std::string>().empty()) return "";
    feasible = filtered["NodeNames"].get<std::vector<std::string>>();
    std::map<std::string, int64_t> total;
    for (const std::string& n : feasible) total[n] = 0;
    if (feasible.size() > 1) {  // with one feasible node the scheduler skips scoring
      const json pargs = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", feasible}};
      // Prioritize calls run in parallel with the in-tree scoring.
      std::future<httplib::Result> p = std::async(std::launch::async, [&] {
        return client_.Post("/phasor/prioritize", pargs.dump(), "application/json");
      });
      for (const std::string& n : feasible) total[n] += InTreeScore(n);
      httplib::Result r = p.get();
      if (r && r->status == 200) {  // prioritize errors are ignored
        for (const json& hp : json::parse(r->body)) {
          const std::string host = hp["Host"].get<std::string>();
          if (total.contains(host)) total[host] += hp["Score"].get<int64_t>() * weight_ * 10;
        }
      }
    }
    std::string best;
    for (const std::string& n : feasible) {
      if (best.empty() || total[n] > total[best]) best = n;
    }
    if (best.empty()) return "";
    const json bind = {{"PodName", pod["metadata"]["name"]},
                       {"PodNamespace", pod["metadata"]["namespace"]},
                       {"PodUID", pod["metadata"]["uid"]},
                       {"Node", best}};
    httplib::Result b = client_.Post("/phasor/bind", bind.dump(), "application/json");
    if (!b || b->status != 200 || !json::parse(b->body)["Error"].get<std::string>().empty()) return "";
    return best;
  }

 private:
  httplib::Client client_;
  int weight_;
};

// The `phasor rank` input for a plan's request (the same jobs, links,
// candidates and options phasord got).
json RankInput(const placer::RankRequest& r) {
  json doc;
  doc["links"] = json::array();
  for (const placer::Link& l : r.links) doc["links"].push_back({{"id", l.id}, {"capacity_gbps", l.capacity_gbps}});
  doc["jobs"] = json::array();
  for (const placer::Job& j : r.jobs) {
    json job = {{"id", j.id}, {"profile", json::parse(placer::TrafficProfileToJson(j.profile).dump())}};
    if (j.pinned_shift_us) job["pinned_shift_us"] = *j.pinned_shift_us;
    doc["jobs"].push_back(job);
  }
  doc["candidates"] = json::array();
  for (const placer::Candidate& c : r.candidates) {
    json cand = {{"id", c.id}};
    if (!c.links.empty()) cand["links"] = c.links;
    if (!c.servers.empty()) cand["servers"] = c.servers;
    doc["candidates"].push_back(cand);
  }
  doc["options"] = {{"quantum_us", r.options.circle.quantum_us}, {"max_bins", r.options.circle.max_bins}};
  return doc;
}

ExtenderOptions Options(const DaemonHarness& phasord) {
  ExtenderOptions o;
  o.phasord_endpoint = phasord.options().request_endpoint;
  o.topology_path = Fabric();
  o.rank.circle.quantum_us = 1000;
  // Generous: these tests check decisions, not the fail-open bound (a loaded
  // machine must not turn them into neutral answers).
  o.phasord_timeout_ms = 2000;
  o.http_timeout_ms = 2 * o.phasord_timeout_ms + kTimeoutMarginMs;
  // They call the bind verb (the scheduler harness binds through it).
  o.bind_verb = true;
  return o;
}

void TweakPhasord(daemon::DaemonOptions& o) {
  o.topology_path = Fabric();
  o.metrics_listen = "";
}

// Commits a running job on s1 and s5 (leaf1 and leaf2: its ring crosses the
// spine) straight through the client, as another scheduler would.
void CommitRunningJob(const DaemonHarness& phasord) {
  client::ClientOptions co;
  co.endpoint = phasord.options().request_endpoint;
  auto c = client::Client::Connect(co);
  ASSERT_TRUE(c.ok());
  placer::RankRequest r;
  placer::Job running{"default/running", *placer::TrafficProfileFromJson(SquareProfile(), "p"), std::nullopt};
  r.jobs = {running};
  placer::Candidate cand;
  cand.id = "r";
  cand.servers["default/running"] = {"s1", "s5"};
  r.candidates = {cand};
  auto ranked = (*c)->Rank(r);
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  ASSERT_TRUE((*c)->Commit(ranked->ranking_id, "r").ok());
}

// The plan's request in the long form `phasor rank` takes: its candidates
// among phasord's committed placement (what running_committed adds, read
// here from a snapshot), the running jobs' shares in every candidate.
placer::RankRequest LongForm(const DaemonHarness& phasord, placer::RankRequest request) {
  client::ClientOptions co;
  co.endpoint = phasord.options().request_endpoint;
  auto c = client::Client::Connect(co);
  EXPECT_TRUE(c.ok());
  if (!c.ok()) return request;
  auto snapshot = (*c)->GetSnapshot();
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  if (!snapshot.ok()) return request;
  std::vector<placer::Link> links;
  auto running = protocol::RunningJobsOfSnapshot(*snapshot, links);
  EXPECT_TRUE(running.ok()) << running.status();
  if (!running.ok()) return request;
  protocol::PrependRunningJobs(*running, links, request);
  placer::MoveRunningIntoCandidates(request);
  return request;
}

std::vector<std::string> BestOfPhasorRank(const placer::RankRequest& request, const std::string& job) {
  const json input = RankInput(request);
  testing::CommandResult r = testing::RunCommand(std::string(PHASOR_BIN) + " rank --topology " + Fabric(), input.dump());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out, nullptr, false);
  if (out.is_discarded() || out["ranked"].empty()) return {};
  const std::string best = out["ranked"][0]["candidate"].get<std::string>();
  for (const placer::Candidate& c : request.candidates) {
    if (c.id == best) return c.servers.at(job);
  }
  return {};
}

TEST(ExtenderE2eTest, ThreeJobsLandOnTheirPlansWhichArePhasorRanksBest) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  CommitRunningJob(phasord);
  FakeApiServer api(kApiPort);
  const ApiServerOptions ao = FakeApiOptions(kApiPort);
  auto binder = MakeApiServerBinder(ao);
  ASSERT_TRUE(binder.ok());
  auto extender = Extender::Create(Options(phasord), *binder);
  ASSERT_TRUE(extender.ok()) << extender.status();
  HttpServerOptions ho;
  ho.host = "127.0.0.1";
  ho.port = kExtenderPort;
  auto server = ExtenderHttpServer::Start(extender->get(), ho);
  ASSERT_TRUE(server.ok()) << server.status();
  SchedulerHarness scheduler(kExtenderPort, /*weight=*/20);

  std::set<std::string> occupied = {"s1", "s5"};  // the running job's pods
  const std::vector<std::pair<std::string, int>> jobs = {{"a", 3}, {"b", 4}, {"c", 2}};
  std::map<std::string, std::vector<std::string>> planned;
  for (const auto& [group, size] : jobs) {
    const std::string key = "ml/" + group;
    std::set<std::string> landed;
    for (int i = 0; i < size; ++i) {
      const json pod = PodJson("ml", group + "-" + std::to_string(i), group, size, SquareProfile());
      if (i == size - 1) {
        // Before the last pod binds (and the plan is committed and dropped):
        // the plan equals `phasor rank`'s best on the same input.
        std::optional<JobPlan> plan = (*extender)->PlanOf(key);
        ASSERT_TRUE(plan.has_value()) << key;
        EXPECT_EQ(BestOfPhasorRank(LongForm(phasord, plan->request), key), plan->nodes) << key;
        planned[group] = plan->nodes;
      }
      const std::string node = scheduler.Schedule(pod, occupied);
      ASSERT_FALSE(node.empty()) << key << " pod " << i;
      occupied.insert(node);
      landed.insert(node);
    }
    // What the API server bound is the plan.
    EXPECT_EQ(landed, std::set<std::string>(planned[group].begin(), planned[group].end())) << key;
    EXPECT_FALSE((*extender)->PlanOf(key).has_value()) << key << ": committed plans are dropped";
  }
  // a packs leaf1's free servers; b would share leaf2's uplinks with the
  // running job when packed from leaf2, so phasor takes leaf3; c fits on leaf2.
  EXPECT_EQ(planned["a"], (std::vector<std::string>{"s2", "s3", "s4"}));
  EXPECT_EQ(planned["b"], (std::vector<std::string>{"s9", "s10", "s11", "s12"}));
  EXPECT_EQ(planned["c"], (std::vector<std::string>{"s6", "s7"}));
  std::map<std::string, std::string> bound = api.bound();
  EXPECT_EQ(bound.size(), 9u);
  // Among the plan's nodes (all +2,000) the in-tree stand-in decides: s11
  // scores 1,120, the best of s9..s12.
  EXPECT_EQ(bound["ml/b-0"], "s11");

  ASSERT_TRUE((*extender)->WaitIdle(20000));  // commits run on the extender's own thread
  const ExtenderStats s = (*extender)->stats();
  EXPECT_EQ(s.plans, 3u);
  EXPECT_EQ(s.commits, 3u);
  EXPECT_EQ(s.commits_replanned, 0u);
  EXPECT_EQ(s.plan_failures, 0u);
  EXPECT_EQ(s.binds, 9u);
  // phasord now holds offsets for the running job and the three new ones.
  client::ClientOptions co;
  co.endpoint = phasord.options().request_endpoint;
  auto c = client::Client::Connect(co);
  ASSERT_TRUE(c.ok());
  auto snapshot = (*c)->GetSnapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  std::set<std::string> with_offset;
  for (const auto& o : snapshot->offsets()) with_offset.insert(o.job());
  EXPECT_EQ(with_offset, (std::set<std::string>{"default/running", "ml/a", "ml/b", "ml/c"}));
}

TEST(ExtenderE2eTest, PodsThatLandElsewhereAreCommittedWhereTheyLanded) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  FakeApiServer api(kApiPort + 10);
  const ApiServerOptions ao = FakeApiOptions(kApiPort + 10);
  auto extender = Extender::Create(Options(phasord), *MakeApiServerBinder(ao));
  ASSERT_TRUE(extender.ok()) << extender.status();
  ExtenderArgs args;
  args.pod = *PodFromJson(PodJson("ml", "x-0", "x", 2, SquareProfile()), "Pod");
  args.node_names = AllNodes();
  HostPriorityList scores = (*extender)->Prioritize(args);
  ASSERT_EQ(scores.size(), 16u);
  EXPECT_EQ(scores[0].score, 10);  // s1, s2: leaf1 packed
  EXPECT_EQ(scores[1].score, 10);
  EXPECT_EQ(scores[2].score, 0);
  // The scheduler put both pods elsewhere (its other scores won).
  ExtenderBindingResult r = (*extender)->Bind({"x-0", "ml", "ml-x-0-uid", "s7"});
  EXPECT_EQ(r.error, "");
  args.pod = *PodFromJson(PodJson("ml", "x-1", "x", 2, SquareProfile()), "Pod");
  (*extender)->Prioritize(args);
  r = (*extender)->Bind({"x-1", "ml", "ml-x-1-uid", "s13"});
  EXPECT_EQ(r.error, "");
  ASSERT_TRUE((*extender)->WaitIdle(20000));
  EXPECT_EQ((*extender)->stats().commits, 1u);
  EXPECT_EQ((*extender)->stats().commits_replanned, 1u);
  client::ClientOptions co;
  co.endpoint = phasord.options().request_endpoint;
  auto c = client::Client::Connect(co);
  auto snapshot = (*c)->GetSnapshot();
  ASSERT_TRUE(snapshot.ok());
  // The committed shares are those of s7 -> s13 (leaf2 -> leaf4), not the plan's.
  ASSERT_EQ(snapshot->placement().candidates_size(), 1);
  const auto& links = snapshot->placement().candidates(0).links().at("ml/x").shares();
  EXPECT_TRUE(links.contains("s7->leaf2"));
  EXPECT_TRUE(links.contains("leaf4->s13"));
  EXPECT_FALSE(links.contains("s1->leaf1"));
}

// A six-pod Indexed Job (each pod labelled with its completion index) that
// no leaf holds: its plan spans two leaves, in the ring order phasor chose
// (each leaf's servers together), and every pod, scheduled in a scrambled
// order, lands at its own rank's place in that ring; the commit is the plan's,
// and phasord holds the servers in rank order.
TEST(ExtenderE2eTest, PodsWithRanksGoToTheirPlaceInTheRing) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  CommitRunningJob(phasord);
  FakeApiServer api(kApiPort + 2);
  const ApiServerOptions ao = FakeApiOptions(kApiPort + 2);
  auto extender = Extender::Create(Options(phasord), *MakeApiServerBinder(ao));
  ASSERT_TRUE(extender.ok()) << extender.status();
  HttpServerOptions ho;
  ho.host = "127.0.0.1";
  ho.port = kExtenderPort + 5;
  auto server = ExtenderHttpServer::Start(extender->get(), ho);
  ASSERT_TRUE(server.ok()) << server.status();
  SchedulerHarness scheduler(kExtenderPort + 5, /*weight=*/20);
  std::set<std::string> occupied = {"s1", "s5"};
  auto pod = [](int index) {
    json p = PodJson("ml", "r-" + std::to_string(index), "r", 6, SquareProfile());
    p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
    return p;
  };
  std::map<int, std::string> landed;
  std::vector<std::string> ring;
  for (int index : {4, 1, 5, 0, 3, 2}) {
    if (landed.size() == 5) {
      std::optional<JobPlan> plan = (*extender)->PlanOf("ml/r");
      ASSERT_TRUE(plan.has_value());
      ring = plan->nodes;
    }
    const std::string node = scheduler.Schedule(pod(index), occupied);
    ASSERT_FALSE(node.empty()) << "pod " << index;
    occupied.insert(node);
    landed[index] = node;
  }
  ASSERT_EQ(ring.size(), 6u);
  for (const auto& [index, node] : landed) EXPECT_EQ(node, ring[index]) << "pod " << index;
  // The ring crosses each leaf boundary once: a leaf's servers are together.
  auto leaf = [](const std::string& s) { return (std::stoi(s.substr(1)) - 1) / 4; };
  int boundaries = 0;
  for (size_t i = 1; i < ring.size(); ++i) boundaries += leaf(ring[i]) != leaf(ring[i - 1]);
  EXPECT_EQ(boundaries, 1) << absl::StrJoin(ring, ",");
  ASSERT_TRUE((*extender)->WaitIdle(20000));
  EXPECT_EQ((*extender)->stats().commits, 1u);
  EXPECT_EQ((*extender)->stats().commits_replanned, 0u);
  client::ClientOptions co;
  co.endpoint = phasord.options().request_endpoint;
  auto c = client::Client::Connect(co);
  auto snapshot = (*c)->GetSnapshot();
  ASSERT_TRUE(snapshot.ok());
  bool found = false;
  for (const auto& cand : snapshot->placement().candidates()) {
    auto it = cand.servers().find("ml/r");
    if (it == cand.servers().end()) continue;
    found = true;
    EXPECT_EQ(std::vector<std::string>(it->second.servers().begin(), it->second.servers().end()), ring);
  }
  EXPECT_TRUE(found);
}

// Pods that carry a rank but landed off it (the scheduler's other scores
// won): the commit is re-ranked with the pods' own ring (their ranks), not
// the plan's.
TEST(ExtenderE2eTest, RankedPodsOffThePlanAreCommittedInTheirRanksOrder) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  FakeApiServer api(kApiPort + 3);
  const ApiServerOptions ao = FakeApiOptions(kApiPort + 3);
  auto extender = Extender::Create(Options(phasord), *MakeApiServerBinder(ao));
  ASSERT_TRUE(extender.ok()) << extender.status();
  ExtenderArgs args;
  args.node_names = AllNodes();
  const std::vector<std::pair<int, std::string>> binds = {{1, "s9"}, {0, "s2"}};
  for (const auto& [index, node] : binds) {
    json p = PodJson("ml", "y-" + std::to_string(index), "y", 2, SquareProfile());
    p["metadata"]["labels"]["apps.kubernetes.io/pod-index"] = std::to_string(index);
    args.pod = *PodFromJson(p, "Pod");
    (*extender)->Prioritize(args);
    const std::string name = "y-" + std::to_string(index);
    EXPECT_EQ((*extender)->Bind({name, "ml", "ml-" + name + "-uid", node}).error, "");
  }
  ASSERT_TRUE((*extender)->WaitIdle(20000));
  EXPECT_EQ((*extender)->stats().commits_replanned, 1u);
  client::ClientOptions co;
  co.endpoint = phasord.options().request_endpoint;
  auto c = client::Client::Connect(co);
  auto snapshot = (*c)->GetSnapshot();
  ASSERT_TRUE(snapshot.ok());
  ASSERT_EQ(snapshot->placement().candidates_size(), 1);
  const auto& servers = snapshot->placement().candidates(0).servers().at("ml/y").servers();
  EXPECT_EQ(std::vector<std::string>(servers.begin(), servers.end()), (std::vector<std::string>{"s2", "s9"}));
}

TEST(ExtenderE2eTest, FailsOpenWithPhasordStopped) {
  DaemonHarness phasord(TweakPhasord);  // never started: nobody on the endpoint
  FakeApiServer api(kApiPort + 20);
  const ApiServerOptions ao = FakeApiOptions(kApiPort + 20);
  int64_t now = 1000;
  ExtenderOptions o = Options(phasord);
  o.phasord_timeout_ms = 200;
  o.http_timeout_ms = 1000;
  o.filter_to_plan = true;
  auto extender = Extender::Create(o, *MakeApiServerBinder(ao), [&now] { return now; });
  ASSERT_TRUE(extender.ok()) << extender.status();
  ExtenderArgs args;
  args.pod = *PodFromJson(PodJson("ml", "y-0", "y", 2, SquareProfile()), "Pod");
  args.node_names = AllNodes();
  // Filter passes every node, prioritize answers neutral scores.
  ExtenderFilterResult f = (*extender)->Filter(args);
  EXPECT_EQ(f.error, "");
  EXPECT_EQ(*f.node_names, AllNodes());
  EXPECT_TRUE(f.failed_nodes.empty());
  HostPriorityList p = (*extender)->Prioritize(args);
  ASSERT_EQ(p.size(), 16u);
  for (const HostPriority& h : p) EXPECT_EQ(h.score, 0) << h.host;
  // One attempt, then neutral answers without asking phasord until retry_after_ms.
  EXPECT_EQ((*extender)->stats().plan_failures, 1u);
  EXPECT_EQ((*extender)->stats().neutral_answers, 2u);
  now += 1001;
  (*extender)->Prioritize(args);
  EXPECT_EQ((*extender)->stats().plan_failures, 2u);
  // Binding still works; nothing is committed.
  EXPECT_EQ((*extender)->Bind({"y-0", "ml", "ml-y-0-uid", "s3"}).error, "");
  EXPECT_EQ((*extender)->Bind({"y-1", "ml", "ml-y-1-uid", "s4"}).error, "");
  EXPECT_EQ(api.bound().at("ml/y-1"), "s4");
  ASSERT_TRUE((*extender)->WaitIdle(20000));
  EXPECT_EQ((*extender)->stats().commits, 0u);
  // An API server refusal fails the bind verb with its reason.
  api.set_fail(true);
  EXPECT_THAT((*extender)->Bind({"z-0", "ml", "", "s5"}).error,
              ::testing::HasSubstr("bind ml/z-0 to s5: api server answered 409: conflict"));
}

// phasord hung: its socket takes the request and never answers. While a
// plan waits on it, the extender answers everything that needs no phasord
// at once (no lock is held across phasord's calls), a second pod of the same
// job waits for the same attempt instead of starting another, and both fail
// open within the scheduler's httpTimeout.
TEST(ExtenderE2eTest, NoLockIsHeldWhilePhasordHangsAndPlansFailOpenInTime) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  zmq::context_t ctx;
  zmq::socket_t hung(ctx, zmq::socket_type::router);
  hung.set(zmq::sockopt::linger, 0);
  hung.bind("ipc://" + dir + "/requests");
  ExtenderOptions o;
  o.phasord_endpoint = "ipc://" + dir + "/requests";
  o.topology_path = Fabric();
  o.phasord_timeout_ms = 1500;
  o.http_timeout_ms = 2 * o.phasord_timeout_ms + kTimeoutMarginMs;
  auto extender = Extender::Create(o);
  ASSERT_TRUE(extender.ok()) << extender.status();
  ExtenderArgs first, second, lone;
  first.pod = *PodFromJson(PodJson("ml", "h-0", "h", 2, SquareProfile()), "Pod");
  second.pod = *PodFromJson(PodJson("ml", "h-1", "h", 2, SquareProfile()), "Pod");
  lone.pod = *PodFromJson(PodJson("ml", "alone", "", 1, json()), "Pod");
  first.node_names = second.node_names = lone.node_names = AllNodes();
  const auto start = std::chrono::steady_clock::now();
  auto planning = std::async(std::launch::async, [&] { return (*extender)->Prioritize(first); });
  // The plan's first call reached phasord, which keeps it.
  zmq::pollitem_t item{hung.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(5000)), 1);
  auto waiting = std::async(std::launch::async, [&] { return (*extender)->Prioritize(second); });
  // Calls that need no phasord are not held up by the one waiting for it.
  auto neutral = std::async(std::launch::async, [&] { return (*extender)->Prioritize(lone); });
  auto stats = std::async(std::launch::async, [&] { return (*extender)->stats(); });
  ASSERT_EQ(neutral.wait_for(std::chrono::milliseconds(500)), std::future_status::ready);
  ASSERT_EQ(stats.wait_for(std::chrono::milliseconds(500)), std::future_status::ready);
  EXPECT_EQ(neutral.get()[0].score, 0);
  EXPECT_EQ(stats.get().plan_failures, 0u);  // the plan is still waiting
  const HostPriorityList a = planning.get();
  const HostPriorityList b = waiting.get();
  const auto took = std::chrono::steady_clock::now() - start;
  for (const HostPriorityList* l : {&a, &b}) {
    for (const HostPriority& h : *l) EXPECT_EQ(h.score, 0) << h.host;
  }
  EXPECT_LT(took, std::chrono::milliseconds(o.http_timeout_ms));
  EXPECT_EQ((*extender)->stats().plan_failures, 1u);  // one attempt for the two pods
  std::filesystem::remove_all(dir);
}

TEST(ExtenderE2eTest, PhasordStoppedAfterPlanningCommitsNothing) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  FakeApiServer api(kApiPort + 30);
  const ApiServerOptions ao = FakeApiOptions(kApiPort + 30);
  auto extender = Extender::Create(Options(phasord), *MakeApiServerBinder(ao));
  ASSERT_TRUE(extender.ok());
  ExtenderArgs args;
  args.pod = *PodFromJson(PodJson("ml", "w-0", "w", 1, SquareProfile()), "Pod");
  args.node_names = AllNodes();
  EXPECT_EQ((*extender)->Prioritize(args)[0].score, 10);
  phasord.Stop();
  EXPECT_EQ((*extender)->Bind({"w-0", "ml", "ml-w-0-uid", "s1"}).error, "");
  ASSERT_TRUE((*extender)->WaitIdle(20000));
  EXPECT_EQ((*extender)->stats().commits, 0u);
  EXPECT_EQ((*extender)->stats().commit_failures, 1u);
}

TEST(ExtenderE2eTest, PlansExpireAndNothingIsCommittedForPodsThatNeverArrive) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  FakeApiServer api(kApiPort + 40);
  const ApiServerOptions ao = FakeApiOptions(kApiPort + 40);
  int64_t now = 0;
  ExtenderOptions o = Options(phasord);
  o.plan_ttl_ms = 60000;
  auto extender = Extender::Create(o, *MakeApiServerBinder(ao), [&now] { return now; });
  ASSERT_TRUE(extender.ok());
  ExtenderArgs args;
  args.pod = *PodFromJson(PodJson("ml", "v-0", "v", 3, SquareProfile()), "Pod");
  args.node_names = AllNodes();
  (*extender)->Prioritize(args);
  ASSERT_TRUE((*extender)->PlanOf("ml/v").has_value());
  EXPECT_EQ((*extender)->Bind({"v-0", "ml", "ml-v-0-uid", "s1"}).error, "");
  // Another job's plan avoids the nodes held by ml/v's plan.
  ExtenderArgs other = args;
  other.pod = *PodFromJson(PodJson("ml", "u-0", "u", 1, SquareProfile()), "Pod");
  (*extender)->Prioritize(other);
  EXPECT_EQ((*extender)->PlanOf("ml/u")->nodes, std::vector<std::string>{"s4"});
  now += 60000;
  // Any call expires old plans; u is planned afresh on the nodes v's plan
  // held (s1 is v-0's now, so the scheduler no longer offers it).
  other.node_names->erase(other.node_names->begin());
  (*extender)->Prioritize(other);
  EXPECT_FALSE((*extender)->PlanOf("ml/v").has_value());
  EXPECT_EQ((*extender)->stats().plans_expired, 2u);
  EXPECT_EQ((*extender)->PlanOf("ml/u")->nodes, std::vector<std::string>{"s2"});
  EXPECT_EQ((*extender)->stats().commits, 0u);
  client::ClientOptions co;
  co.endpoint = phasord.options().request_endpoint;
  auto snapshot = (*client::Client::Connect(co))->GetSnapshot();
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->offsets_size(), 0);
}

// The candidates follow the fabric's order whatever order (and repeats) the
// scheduler offers the nodes in: planning sorts the offered nodes by the
// server index built when the fabric is loaded.
TEST(ExtenderE2eTest, CandidatesFollowTheFabricOrderWhateverTheOfferedOrder) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  CommitRunningJob(phasord);
  auto bind = [](const ExtenderBindingArgs&) { return absl::OkStatus(); };
  auto in_order = Extender::Create(Options(phasord), bind);
  auto scrambled = Extender::Create(Options(phasord), bind);
  ASSERT_TRUE(in_order.ok() && scrambled.ok());
  ExtenderArgs args;
  args.pod = *PodFromJson(PodJson("ml", "o-0", "o", 3, SquareProfile()), "Pod");
  args.node_names.emplace();
  for (const std::string& n : AllNodes()) {
    if (n != "s1" && n != "s5") args.node_names->push_back(n);  // the running job's nodes
  }
  (*in_order)->Prioritize(args);
  // Reversed, every node twice, and a node the fabric does not know.
  ExtenderArgs shuffled = args;
  shuffled.node_names.emplace(args.node_names->rbegin(), args.node_names->rend());
  shuffled.node_names->insert(shuffled.node_names->end(), args.node_names->begin(), args.node_names->end());
  shuffled.node_names->push_back("gpu-node-without-server");
  const HostPriorityList scores = (*scrambled)->Prioritize(shuffled);
  ASSERT_EQ(scores.size(), 29u);  // one score per offered entry, in the offered order
  EXPECT_EQ(scores.front().host, "s16");
  EXPECT_EQ(scores.back().host, "gpu-node-without-server");
  EXPECT_EQ(scores.back().score, 0);

  std::optional<JobPlan> a = (*in_order)->PlanOf("ml/o");
  std::optional<JobPlan> b = (*scrambled)->PlanOf("ml/o");
  ASSERT_TRUE(a.has_value() && b.has_value());
  // Packed from each leaf in turn, then one spread over the leaves.
  const std::vector<std::vector<std::string>> expected = {
      {"s2", "s3", "s4"}, {"s6", "s7", "s8"}, {"s9", "s10", "s11"}, {"s13", "s14", "s15"}, {"s2", "s6", "s9"}};
  for (const JobPlan* plan : {&*a, &*b}) {
    std::vector<std::vector<std::string>> candidates;
    for (const placer::Candidate& c : plan->request.candidates) candidates.push_back(c.servers.at("ml/o"));
    EXPECT_EQ(candidates, expected);
  }
  EXPECT_EQ(a->nodes, b->nodes);
  EXPECT_EQ(a->candidate, b->candidate);
  EXPECT_EQ(a->nodes, (std::vector<std::string>{"s2", "s3", "s4"}));
}

// With more leaves than max_candidates the spread still gets the last slot.
TEST(ExtenderE2eTest, TheSpreadKeepsTheLastCandidateSlot) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  ExtenderOptions o = Options(phasord);
  o.max_candidates = 3;
  auto extender = Extender::Create(o, [](const ExtenderBindingArgs&) { return absl::OkStatus(); });
  ASSERT_TRUE(extender.ok());
  ExtenderArgs args;
  args.pod = *PodFromJson(PodJson("ml", "w-0", "w", 2, SquareProfile()), "Pod");
  args.node_names = AllNodes();
  (*extender)->Prioritize(args);
  std::optional<JobPlan> plan = (*extender)->PlanOf("ml/w");
  ASSERT_TRUE(plan.has_value());
  std::vector<std::vector<std::string>> candidates;
  for (const placer::Candidate& c : plan->request.candidates) candidates.push_back(c.servers.at("ml/w"));
  EXPECT_EQ(candidates, (std::vector<std::vector<std::string>>{{"s1", "s2"}, {"s5", "s6"}, {"s1", "s5"}}));
  o.max_candidates = 1;  // one slot: the first packing alone
  auto one = Extender::Create(o, [](const ExtenderBindingArgs&) { return absl::OkStatus(); });
  ASSERT_TRUE(one.ok());
  (*one)->Prioritize(args);
  ASSERT_TRUE((*one)->PlanOf("ml/w").has_value());
  ASSERT_EQ((*one)->PlanOf("ml/w")->request.candidates.size(), 1u);
  EXPECT_EQ((*one)->PlanOf("ml/w")->nodes, (std::vector<std::string>{"s1", "s2"}));
}

TEST(ExtenderE2eTest, FullNodeModeEchoesNodesAndFiltersToThePlan) {
  DaemonHarness phasord(TweakPhasord);
  ASSERT_TRUE(phasord.Start());
  ExtenderOptions o = Options(phasord);
  o.filter_to_plan = true;
  o.node_server_label = "phasor.io/server";
  auto extender = Extender::Create(o, [](const ExtenderBindingArgs&) { return absl::OkStatus(); });
  ASSERT_TRUE(extender.ok());
  json items = json::array();
  for (int i = 1; i <= 16; ++i) {
    items.push_back({{"metadata", {{"name", "node-" + std::to_string(i)},
                                   {"labels", {{"phasor.io/server", "s" + std::to_string(i)}}}}},
                     {"status", {{"capacity", {{"nvidia.com/gpu", "8"}}}}}});
  }
  const json body = {{"Pod", PodJson("ml", "t-0", "t", 2, SquareProfile())},
                     {"Nodes", {{"metadata", json::object()}, {"items", items}}},
                     {"NodeNames", nullptr}};
  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body.dump());
  ASSERT_TRUE(args.ok()) << args.status();
  ExtenderFilterResult f = (*extender)->Filter(*args);
  EXPECT_FALSE(f.node_names.has_value());
  ASSERT_TRUE(f.nodes.has_value());
  ASSERT_EQ(f.nodes->items.size(), 2u);
  EXPECT_EQ(f.nodes->items[0].raw, items[0]);  // echoed unchanged
  EXPECT_EQ(f.nodes->items[1].name, "node-2");
  EXPECT_EQ(f.failed_nodes.size(), 14u);
  EXPECT_EQ(f.failed_nodes.at("node-16"), "phasor: not in the plan of job ml/t");
}

TEST(ExtenderHttpTest, MalformedBodiesGet400WithAMessage) {
  DaemonHarness phasord(TweakPhasord);
  auto extender = Extender::Create(Options(phasord), [](const ExtenderBindingArgs&) { return absl::OkStatus(); });
  ASSERT_TRUE(extender.ok());
  HttpServerOptions ho;
  ho.host = "127.0.0.1";
  ho.port = kExtenderPort + 2;
  ho.url_prefix = "/phasor/";
  ho.max_body_bytes = 4096;
  auto server = ExtenderHttpServer::Start(extender->get(), ho);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client c("127.0.0.1", kExtenderPort + 2);
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"/phasor/filter", "{not json", "body: not valid JSON\n"},
      {"/phasor/prioritize", R"({"Pod": {}, "NodeNames": [1]})", "NodeNames[0]: must be a string\n"},
      {"/phasor/bind", R"({"PodName": "p"})", "Node: missing\n"},
      {"/phasor/filter", "", "body: not valid JSON\n"},
  };
  for (const auto& [path, body, message] : cases) {
    httplib::Result r = c.Post(path.c_str(), body, "application/json");
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << " " << body;
    EXPECT_EQ(r->body, message) << path;
  }
  EXPECT_EQ((*server)->bad_requests(), 4u);
  httplib::Result big = c.Post("/phasor/filter", std::string(8192, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  httplib::Result ok = c.Post("/phasor/prioritize", R"({"Pod": {"metadata": {"name": "lonely"}}, "NodeNames": ["s1"]})",
                              "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, R"([{"Host":"s1","Score":0}])");
  httplib::Result health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->body, "ok\n");
  httplib::Result metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, ::testing::HasSubstr("phasor_k8s_bad_requests_total 4\n"));
}

TEST(ExtenderOptionsTest, BadOptionsNameTheOption) {
  ExtenderOptions o;
  auto bind = [](const ExtenderBindingArgs&) { return absl::OkStatus(); };
  EXPECT_EQ(Extender::Create(o, bind).status().message(), "phasord_endpoint: required");
  o.phasord_endpoint = "ipc:///tmp/none";
  EXPECT_EQ(Extender::Create(o, bind).status().message(), "topology_path: required");
  o.topology_path = Fabric();
  o.phasord_timeout_ms = 5000;
  EXPECT_EQ(Extender::Create(o, bind).status().message(), "phasord_timeout_ms: must be in 1..2000");
  // A plan's two calls must fit the scheduler's httpTimeout (1 s by default).
  o.phasord_timeout_ms = 600;
  EXPECT_EQ(Extender::Create(o, bind).status().message(),
            "phasord_timeout_ms: 2 x 600 ms (a plan's snapshot and rank) + 100 ms must fit http_timeout_ms "
            "(1000 ms, the scheduler's httpTimeout)");
  o.http_timeout_ms = 1300;
  EXPECT_TRUE(Extender::Create(o, bind).ok());
  o.phasord_timeout_ms = 200;
  o.bind_verb = true;
  EXPECT_EQ(Extender::Create(o, nullptr).status().message(), "bind: a bind function is required with bind_verb");
  o.bind_verb = false;
  o.max_candidates = 0;
  EXPECT_EQ(Extender::Create(o, bind).status().message(), "max_candidates: must be in 1..256");
  o.max_candidates = 16;
  o.topology_path = "/nonexistent.yaml";
  EXPECT_THAT(std::string(Extender::Create(o, bind).status().message()), ::testing::StartsWith("topology_path: "));
  EXPECT_EQ(MakeApiServerBinder({"ftp://x", "", "", 1000}).status().message(),
            "api_server: must start with https:// or http://, got 'ftp://x'");
}

}  // namespace
}  // namespace phasor::kubernetes
