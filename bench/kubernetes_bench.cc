// The scheduler extender's latency at 1,000 nodes (and 10,000: ...10kNodes), over HTTP on loopback as
// kube-scheduler calls it (nodeCacheCapable: 1,000 node names per body), with
// a real phasord in process: prioritize and filter for a pod whose job is
// already planned (warm) and for the first pod of a new job (the planning
// call: phasord snapshot + a rank of the default 8 candidates, or 16, of a
// 16-pod job among 20 running jobs). p50 and p99 are counters (ms), with the
// CPU of the whole process per call (process_cpu_ms_per_call), which the
// machine's load does not inflate.
//
//   build/bench/kubernetes_bench --benchmark_min_time=1
//   PHASOR_BENCH_PORT=27200 build/bench/kubernetes_bench   (ports 27200-27203)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <set>
#include <fstream>
#include <thread>

#include "daemon/server.h"
#include "httplib.h"
#include "integrations/client/client.h"
#include "integrations/kubernetes/extender.h"
#include "integrations/kubernetes/http_server.h"
#include "nlohmann/json.hpp"
#include "protocol/convert.h"
#include "spdlog/spdlog.h"
#include "topology/generators.h"
#include "topology/topology_yaml.h"

namespace {

using namespace phasor;
using nlohmann::json;

// Loopback ports kPort..kPort+3: 27400 unless PHASOR_BENCH_PORT names another
// base (a shared machine gives each user a range).
const int kPort = [] {
  const char* env = std::getenv("PHASOR_BENCH_PORT");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 27400;
}();
constexpr int kRunningJobs = 20;
constexpr int kJobPods = 16;

placer::TrafficProfile Square(uint32_t period, uint32_t up) {
  placer::TrafficProfile p;
  p.period_us = period;
  p.square = placer::SquareWave{up, 80.0, 0, 0};
  return p;
}

// 50 leaves x 20 servers (s1..s1000) under 4 spines, 2:1 oversubscribed;
// phasord with that fabric and 20 running 8-server jobs; the extender on HTTP.
class Bench {
 public:
  // quantum_us: the RankRequests' quantum (0: the placer's default, 1 ms);
  // max_candidates: candidates per plan (0: the extender's default, 8).
  // leaves: of 20 servers each (50: 1,000 nodes; 500: 10,000).
  Bench(int port, uint32_t quantum_us, uint32_t max_candidates = 0, uint32_t leaves = 50) : port_(port) {
    spdlog::set_level(spdlog::level::err);
    char tmpl[] = "/tmp/k8s-bench-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    topology::LeafSpineOptions ls;
    ls.leaves = leaves;
    ls.spines = 4;
    ls.servers_per_leaf = 20;
    ls.oversubscription = 2;
    std::ofstream(dir_ + "/fabric.yaml") << topology::ToYaml(*topology::MakeLeafSpine(ls));
    daemon::DaemonOptions d;
    d.request_endpoint = "ipc://" + dir_ + "/requests";
    d.profile_endpoint = "ipc://" + dir_ + "/profiles";
    d.offset_endpoint = "ipc://" + dir_ + "/offsets";
    d.metrics_listen = "";
    d.allow_plain = true;
    d.state_path = dir_ + "/state.db";
    d.topology_path = dir_ + "/fabric.yaml";
    d.log_level = "error";
    daemon_ = *daemon::Daemon::Start(d);
    thread_ = std::thread([this] { daemon_->Run(stop_); });
    client::ClientOptions co;
    co.endpoint = d.request_endpoint;
    auto c = *client::Client::Connect(co);
    // Running jobs: 8 servers each, straddling two leaves (they cross the spines).
    for (int j = 0; j < kRunningJobs; ++j) {
      placer::RankRequest r;
      const std::string id = "default/running-" + std::to_string(j);
      r.jobs.push_back({id, Square(200000 + 20000 * (j % 3), 60000), std::nullopt});
      placer::Candidate cand;
      cand.id = "r";
      for (int k = 0; k < 8; ++k) {
        const int s = j * 20 + 16 + k;  // the last 4 of leaf j and the first 4 of leaf j+1
        cand.servers[id].push_back("s" + std::to_string(s + 1));
        occupied_.insert("s" + std::to_string(s + 1));
      }
      r.candidates = {cand};
      auto ranked = c->Rank(r);
      if (!ranked.ok() || !c->Commit(ranked->ranking_id, "r").ok()) std::abort();
    }
    for (int i = 1; i <= static_cast<int>(leaves) * 20; ++i) {
      const std::string n = "s" + std::to_string(i);
      if (!occupied_.contains(n)) names_.push_back(n);
    }
    kubernetes::ExtenderOptions o;
    o.phasord_endpoint = d.request_endpoint;
    o.topology_path = dir_ + "/fabric.yaml";
    o.filter_to_plan = true;
    o.phasord_timeout_ms = 2000;  // measure the planning call, not the fail-open bound
    o.http_timeout_ms = 2 * o.phasord_timeout_ms + kubernetes::kTimeoutMarginMs;
    if (quantum_us > 0) o.rank.circle.quantum_us = quantum_us;
    if (max_candidates > 0) o.max_candidates = max_candidates;
    o.plan_ttl_ms = 1;  // every plan expires at the next call unless the clock is held
    extender_ = *kubernetes::Extender::Create(
        o, [](const kubernetes::ExtenderBindingArgs&) { return absl::OkStatus(); }, [this] { return now_.load(); });
    kubernetes::HttpServerOptions h;
    h.host = "127.0.0.1";
    h.port = port_;
    h.io_timeout_ms = o.http_timeout_ms;
    server_ = *kubernetes::ExtenderHttpServer::Start(extender_.get(), h);
  }
  ~Bench() {
    server_->Stop();
    stop_ = true;
    thread_.join();
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }

  // variant: the new job's Up rate is 80 + variant / 8 Gbit/s (planning
  // calls differ, so no solve of the new job's links is known from an
  // earlier call; its period, and so every circle's size, stays the same).
  std::string Body(const std::string& group, int variant = 0) const {
    const json profile = {{"period_us", 240000},
                          {"square", {{"up_us", 90000}, {"up_gbps", 80.0 + 0.125 * variant}}}};
    const json pod = {{"metadata",
                       {{"name", group + "-0"}, {"namespace", "ml"}, {"uid", group + "-uid"},
                        {"labels", {{"scheduling.x-k8s.io/pod-group", group}}},
                        {"annotations", {{"phasor.io/job-size", std::to_string(kJobPods)},
                                         {"phasor.io/profile", profile.dump()}}}}}};
    return json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names_}}.dump();
  }

  int port() const { return port_; }
  std::atomic<int64_t> now_{0};
  std::unique_ptr<kubernetes::Extender> extender_;

 private:
  int port_;
  std::string dir_;
  std::unique_ptr<daemon::Daemon> daemon_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::set<std::string> occupied_;
  std::vector<std::string> names_;
  std::unique_ptr<kubernetes::ExtenderHttpServer> server_;
};

// Each lives for the program (phasord threads).
enum class Setup { kDefault, kQuantum10ms, kCandidates16, kNodes10k };
Bench& Shared(Setup setup) {
  switch (setup) {
    case Setup::kQuantum10ms: {
      static Bench* b = new Bench(kPort + 1, 10000);
      return *b;
    }
    case Setup::kNodes10k: {
      static Bench* b = new Bench(kPort + 3, 0, 0, 500);
      return *b;
    }
    case Setup::kCandidates16: {
      static Bench* b = new Bench(kPort + 2, 0, 16);
      return *b;
    }
    case Setup::kDefault:
      break;
  }
  static Bench* b = new Bench(kPort, 0);
  return *b;
}

void Report(benchmark::State& state, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  if (ms.empty()) return;
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}

// verb: "filter" or "prioritize"; planning: a new job per call (the old plan expires).
void Run(benchmark::State& state, const std::string& verb, bool planning, Setup setup = Setup::kDefault) {
  Bench& b = Shared(setup);
  httplib::Client c("127.0.0.1", b.port());
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);  // as Go's net/http client (kube-scheduler) does
  const std::string path = "/phasor/" + verb;
  std::string warm = b.Body("warm-" + verb);
  if (!planning) {
    b.now_ += 10;
    c.Post(path.c_str(), warm, "application/json");  // plans it
    if (!b.extender_->PlanOf("ml/warm-" + verb)) state.SkipWithError("the warm job could not be planned");
  }
  std::vector<double> ms;
  int64_t job = 0;
  // CPU of the whole process (extender, HTTP, phasord's threads) per call:
  // robust on a loaded machine, unlike wall-clock percentiles.
  timespec cpu0{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
  for (auto _ : state) {
    std::string body;
    if (planning) {
      state.PauseTiming();
      body = b.Body(verb + "-job-" + std::to_string(job), static_cast<int>(job % 97));
      ++job;
      b.now_ += 10;  // the previous plan expires: the planner has every free node
      state.ResumeTiming();
    }
    const auto t0 = std::chrono::steady_clock::now();
    httplib::Result r = c.Post(path.c_str(), planning ? body : warm, "application/json");
    const auto t1 = std::chrono::steady_clock::now();
    if (!r || r->status != 200) state.SkipWithError("request failed");
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  timespec cpu1{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
  const double cpu_ms = (cpu1.tv_sec - cpu0.tv_sec) * 1e3 + (cpu1.tv_nsec - cpu0.tv_nsec) / 1e6;
  if (!ms.empty()) state.counters["process_cpu_ms_per_call"] = cpu_ms / static_cast<double>(ms.size());
  Report(state, ms);
  const kubernetes::ExtenderStats s = b.extender_->stats();
  state.counters["plans"] = static_cast<double>(s.plans);
  state.counters["plan_failures"] = static_cast<double>(s.plan_failures);
  // The size of the last plan's RankRequest on the wire (the running jobs'
  // link shares once, in its running part).
  if (planning) {
    if (std::optional<kubernetes::JobPlan> p = b.extender_->PlanOf("ml/" + verb + "-job-" + std::to_string(job - 1))) {
      state.counters["rank_request_kib"] = static_cast<double>(p->rank_request_bytes) / 1024;
      state.counters["candidates"] = static_cast<double>(p->request.candidates.size());
    }
  }
}

void BM_PrioritizeWarm(benchmark::State& state) { Run(state, "prioritize", false); }
void BM_FilterWarm(benchmark::State& state) { Run(state, "filter", false); }
void BM_PrioritizePlanning(benchmark::State& state) { Run(state, "prioritize", true); }
void BM_FilterPlanning(benchmark::State& state) { Run(state, "filter", true); }
// The same planning call with a 10 ms quantum (quantum_us: 10000 in the config).
void BM_PrioritizePlanningQuantum10ms(benchmark::State& state) {
  Run(state, "prioritize", true, Setup::kQuantum10ms);
}
// The same planning call with 16 candidates (max_candidates: 16).
void BM_PrioritizePlanningCandidates16(benchmark::State& state) {
  Run(state, "prioritize", true, Setup::kCandidates16);
}

// 10,000 nodes (500 leaves of 20): every call names all of them.
void BM_PrioritizeWarm10kNodes(benchmark::State& state) { Run(state, "prioritize", false, Setup::kNodes10k); }
void BM_PrioritizePlanning10kNodes(benchmark::State& state) { Run(state, "prioritize", true, Setup::kNodes10k); }

BENCHMARK(BM_PrioritizeWarm)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(500);
BENCHMARK(BM_FilterWarm)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(500);
BENCHMARK(BM_PrioritizePlanning)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(200);
BENCHMARK(BM_FilterPlanning)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(200);
BENCHMARK(BM_PrioritizePlanningQuantum10ms)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(200);
BENCHMARK(BM_PrioritizePlanningCandidates16)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(200);
BENCHMARK(BM_PrioritizeWarm10kNodes)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(200);
BENCHMARK(BM_PrioritizePlanning10kNodes)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(100);

}  // namespace

BENCHMARK_MAIN();
