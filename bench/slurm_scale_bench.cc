// The Slurm controller's submit path at 10,000 nodes, in process:
// SlurmController::Submit for an arriving opted-in job, against a fake Slurm
// (the SlurmCommands seam) and a phasord serving on an ipc:// socket in this
// process (the controller's real client, so the request and reply are
// serialized and cross a socket as in production; the hook's own socket and
// job_submit.lua are not part of it: bench/slurm_submit_bench.sh measures
// those on a real 8-node cluster).
//
// The cluster: Slurm's topology.conf of 250 leaf switches of 40 nodes
// (n00001-n10000), each leaf under 16 spine switches with 125 Gb/s per
// leaf-spine link (100 Gb/s nodes: 2:1, the leaf-spine of scale_bench.cc),
// one partition of all the nodes. The steady state: 100 opted-in jobs of
// 4-64 nodes (seeded, each with its own square-wave profile) placed through
// the controller itself, as production would: Submit (pinned), the fake
// Slurm runs the job on its pin, Start commits it to phasord, and a poll
// follows each. So the running jobs sit where phasor put them (packed by
// leaf), not spread at random. The setup is not measured.
//
// Measured: Submit of an arriving job of N nodes (min = max = N, profile
// file), each call a fresh job whose token and pin are dropped (Abandon)
// before the next, so every call sees the same state. Two settings:
//   timeout:0  the shipped defaults: submit_timeout_ms 40 (the controller's
//              default) and the hook's deadline 50 ms after the call
//              (job_submit.lua's PHASOR_TIMEOUT_MS), as the hook sends it
//   timeout:1  no deadline and a 60 s phasord timeout: the path's real cost
//              when nothing cuts it short (not what a submission gets)
//
// Counters: p50_ms, p99_ms, max_ms of the calls' wall time (with 40 calls
// p99 is the slowest), first_ms and rest_max_ms (the first call, and the
// slowest of the others); cpu_ms (the
// process's CPU time per call: the controller, phasord's threads and the
// state-file writer) and caller_cpu_ms (the calling thread's alone); pinned
// (answers with nodes), within_50ms (calls that returned within 50 ms),
// failed_open (calls that returned an error: the hook submits the job
// unmodified) split into deadline_exceeded, unavailable (phasord gave no
// reply within submit_timeout_ms) and failed_precondition;
// peak_rss_mib (the process's high-water mark: phasord, the controller, the
// fake Slurm's state and the setup together) and controller_rss_mib (the
// resident growth while the first controller loaded the fabric and took its
// first poll of the idle cluster: a rough share of the controller alone,
// before any job).
//
// Every pin is checked: N distinct nodes, each idle in the fake Slurm's
// state; otherwise the benchmark fails. With timeout:1 every answer must pin.
//
//   nice -n 10 build/bench/slurm_scale_bench
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/server.h"
#include "integrations/slurm/controller.h"
#include "spdlog/spdlog.h"

namespace {

using namespace phasor;
using namespace phasor::slurm;

constexpr int kLeaves = 250;
constexpr int kNodesPerLeaf = 40;
constexpr int kSpines = 16;
constexpr int kRunningJobs = 100;

std::string NodeName(int i) { return absl::StrFormat("n%05d", i); }  // 1-based

// Slurm's topology/tree file: every leaf under every spine.
std::string TopologyConf() {
  std::string out;
  for (int l = 1; l <= kLeaves; ++l) {
    const int first = (l - 1) * kNodesPerLeaf + 1;
    absl::StrAppendFormat(&out, "SwitchName=leaf%03d Nodes=n[%05d-%05d]\n", l, first,
                          first + kNodesPerLeaf - 1);
  }
  for (int s = 1; s <= kSpines; ++s) {
    absl::StrAppendFormat(&out, "SwitchName=spine%02d Switches=leaf[001-%03d]\n", s, kLeaves);
  }
  return out;
}

// A Slurm that answers polls from its state and applies pins as scontrol
// update would (tests/integrations/slurm/slurm_controller_test.cc's fake,
// at 10,000 nodes, with a node index so Run stays linear).
class FakeSlurm : public SlurmCommands {
 public:
  FakeSlurm() {
    for (int i = 1; i <= kLeaves * kNodesPerLeaf; ++i) {
      SlurmNode n;
      n.name = NodeName(i);
      n.state = "idle";
      n.partitions = {"batch"};
      n.cpus = 64;
      n.real_memory_mb = 512000;
      index_[n.name] = state_.nodes.size();
      state_.nodes.push_back(std::move(n));
    }
    SlurmPartition p{"batch", {}, true, true};
    for (const SlurmNode& n : state_.nodes) p.nodes.push_back(n.name);
    state_.partitions = {p};
  }
  absl::StatusOr<ClusterState> Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  absl::Status UpdatePendingJob(const std::string& job, const std::vector<std::string>& nodes,
                                const std::string&) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (SlurmJob& j : state_.jobs) {
      if (j.id != job) continue;
      if (j.state != "PENDING")
        return absl::FailedPreconditionError("Job is no longer pending execution");
      j.required_nodes = absl::StrJoin(nodes, ",");
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError("Invalid job id specified");
  }
  // Slurm starts job `id` (submitted with `comment`) on `nodes`.
  void Run(const std::string& id, const std::string& comment,
           const std::vector<std::string>& nodes) {
    std::lock_guard<std::mutex> lock(mu_);
    SlurmJob j;
    j.id = id;
    j.state = "RUNNING";
    j.nodes = nodes;
    j.comment = comment;
    j.partition = "batch";
    j.node_count = j.max_nodes = static_cast<uint32_t>(nodes.size());
    j.priority = 100;
    j.required_nodes = absl::StrJoin(nodes, ",");
    state_.jobs.push_back(std::move(j));
    for (const std::string& n : nodes) state_.nodes[index_.at(n)].state = "allocated";
  }
  bool Idle(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(node);
    return it != index_.end() && NodeIsFree(state_.nodes[it->second]);
  }

 private:
  std::mutex mu_;
  ClusterState state_;
  std::map<std::string, size_t> index_;
};

// A square wave: period 100-400 ms, up a quarter to a half of it at 60 Gb/s
// (scale_bench.cc's profiles).
std::string ProfileJson(std::mt19937_64& rng) {
  const uint32_t period = 100000 + 10000 * static_cast<uint32_t>(rng() % 31);
  const uint32_t up = period / 4 + static_cast<uint32_t>(rng() % (period / 4));
  return absl::StrFormat(R"({"period_us": %d, "square": {"up_us": %d, "up_gbps": 60}})", period,
                         up);
}

SubmitQuery Query(const std::string& profile_file, uint32_t nodes, int64_t deadline_us) {
  SubmitQuery q;
  q.comment = "phasor profile=" + profile_file;
  q.fields = {{"min_nodes", absl::StrCat(nodes)}, {"max_nodes", absl::StrCat(nodes)}};
  q.deadline_us = deadline_us;
  return q;
}

int64_t SystemUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double CpuMs(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double RssMib() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

double PeakRssMib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024;
}

// phasord, the fake Slurm and the controller's state file with the 100
// running jobs placed: built once, shared by every run (each run starts a
// controller of its own from the state file; its submits are abandoned, so
// the file is as the setup left it).
struct World {
  std::string dir;
  daemon::DaemonOptions phasord_options;
  std::unique_ptr<daemon::Daemon> phasord;
  std::atomic<bool> stop{false};
  std::thread serving;
  FakeSlurm slurm;
  double setup_s = 0;
  double controller_rss_mib = 0;
  int running_nodes = 0;
  absl::Status status;

  World() {
    char tmpl[] = "/tmp/phasor-slurm-scale-XXXXXX";
    dir = ::mkdtemp(tmpl);
    daemon::SetLogLevel("warn");
    phasord_options.allow_plain = true;
    phasord_options.request_endpoint = "ipc://" + dir + "/r";
    phasord_options.profile_endpoint = "ipc://" + dir + "/p";
    phasord_options.offset_endpoint = "ipc://" + dir + "/o";
    phasord_options.metrics_listen = "127.0.0.1:0";
    phasord_options.state_path = dir + "/phasord.db";
    phasord_options.log_level = "warn";
    absl::StatusOr<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Start(phasord_options);
    if (!d.ok()) {
      status = d.status();
      return;
    }
    phasord = *std::move(d);
    serving = std::thread([this] { phasord->Run(stop); });
    std::ofstream(dir + "/topology.conf") << TopologyConf();
    status = PlaceRunningJobs();
  }
  ~World() {
    stop = true;
    if (serving.joinable()) serving.join();
    phasord.reset();
    std::filesystem::remove_all(dir);
  }

  SlurmControllerOptions Options(bool shipped) {
    SlurmControllerOptions o;
    o.topology_path = dir + "/topology.conf";
    o.slurm_import.node_link_gbps = 100;
    o.slurm_import.switch_link_gbps = 125;  // 16 x 125 up for 40 x 100 down: 2:1
    o.phasord_endpoint = phasord_options.request_endpoint;
    o.state_path = dir + "/controller.json";
    o.profiles.profile_dir = dir;
    o.slurm = &slurm;
    if (!shipped) {
      o.submit_timeout_ms = 60'000;
      o.replan_timeout_ms = 60'000;
      o.lifecycle_timeout_ms = 60'000;
    }
    return o;
  }

  // The steady state, through the controller as production gets there.
  absl::Status PlaceRunningJobs() {
    const auto start = std::chrono::steady_clock::now();
    std::mt19937_64 rng(2026);
    const double rss_before = RssMib();
    absl::StatusOr<std::unique_ptr<SlurmController>> c =
        SlurmController::Create(Options(/*shipped=*/false));
    if (!c.ok()) return c.status();
    if (absl::Status s = (*c)->Poll(); !s.ok()) return s;
    controller_rss_mib = RssMib() - rss_before;
    for (int j = 0; j < kRunningJobs; ++j) {
      const std::string file = absl::StrFormat("run%03d.json", j);
      std::ofstream(dir + "/" + file) << ProfileJson(rng);
      const uint32_t n = 4 + static_cast<uint32_t>(rng() % 61);
      absl::StatusOr<SubmitAnswer> a = (*c)->Submit(Query(file, n, 0));
      if (!a.ok()) return a.status();
      if (a->nodes.size() != n) {
        return absl::InternalError(
            absl::StrCat("setup job ", j, " not pinned: ", a->unpinned_because));
      }
      const std::string id = absl::StrCat(1000 + j);
      slurm.Run(id, a->comment, a->nodes);
      if (absl::Status s = (*c)->Start(id, a->token, a->nodes); !s.ok()) return s;
      if (absl::Status s = (*c)->Poll(); !s.ok()) return s;
      running_nodes += static_cast<int>(n);
    }
    if ((*c)->Placed().size() != kRunningJobs)
      return absl::InternalError("setup: not every job was placed");
    c->reset();  // writes the state file
    std::ofstream(dir + "/arriving.json") << ProfileJson(rng);
    setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return absl::OkStatus();
  }
};

// Built by the first benchmark that runs, shared by the others, and
// stopped by main after the last (phasord's thread joined, the temp dir
// removed) rather than at static destruction.
std::unique_ptr<World> the_world;

World& TheWorld() {
  if (the_world == nullptr) the_world = std::make_unique<World>();
  return *the_world;
}

void BM_Submit10k(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  World& w = TheWorld();
  if (!w.status.ok()) {
    state.SkipWithError(absl::StrCat("setup: ", w.status.message()).c_str());
    return;
  }
  const bool shipped = state.range(0) == 0;
  const uint32_t count = static_cast<uint32_t>(state.range(1));
  absl::StatusOr<std::unique_ptr<SlurmController>> made =
      SlurmController::Create(w.Options(shipped));
  if (!made.ok()) {
    state.SkipWithError(absl::StrCat("controller: ", made.status().message()).c_str());
    return;
  }
  SlurmController& c = **made;
  if (absl::Status s = c.Poll(); !s.ok()) {
    state.SkipWithError(absl::StrCat("poll: ", s.message()).c_str());
    return;
  }
  if (c.Placed().size() != kRunningJobs) {
    state.SkipWithError("the restarted controller lost running jobs");
    return;
  }

  std::vector<double> ms;
  double cpu = 0, caller_cpu = 0;
  int pinned = 0, within = 0, deadline_exceeded = 0, unavailable = 0, precondition = 0, other = 0;
  std::string last_error;
  for (auto _ : state) {
    // The hook's deadline starts when it asks (job_submit.lua: 50 ms).
    const SubmitQuery q = Query("arriving.json", count, shipped ? SystemUs() + 50'000 : 0);
    const double cpu0 = CpuMs(CLOCK_PROCESS_CPUTIME_ID), caller0 = CpuMs(CLOCK_THREAD_CPUTIME_ID);
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<SubmitAnswer> a = c.Submit(q);
    const double took =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    caller_cpu += CpuMs(CLOCK_THREAD_CPUTIME_ID) - caller0;
    cpu += CpuMs(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    state.SetIterationTime(took / 1e3);
    ms.push_back(took);
    within += took < 50;
    if (!a.ok()) {
      last_error = std::string(a.status().message());
      switch (a.status().code()) {
        case absl::StatusCode::kDeadlineExceeded:
          ++deadline_exceeded;
          break;
        case absl::StatusCode::kUnavailable:
          ++unavailable;
          break;
        case absl::StatusCode::kFailedPrecondition:
          ++precondition;
          break;
        default:
          ++other;
      }
      if (!shipped) {
        state.SkipWithError(absl::StrCat("submit: ", last_error).c_str());
        break;
      }
      continue;
    }
    if (a->nodes.empty()) {
      last_error = a->unpinned_because;
      if (!shipped) {
        state.SkipWithError(absl::StrCat("not pinned: ", a->unpinned_because).c_str());
        break;
      }
    } else {
      const std::set<std::string> distinct(a->nodes.begin(), a->nodes.end());
      const bool idle = std::all_of(a->nodes.begin(), a->nodes.end(),
                                    [&](const std::string& n) { return w.slurm.Idle(n); });
      if (a->nodes.size() != count || distinct.size() != count || !idle) {
        state.SkipWithError(absl::StrCat("bad pin: ", a->nodes.size(), " nodes, ", distinct.size(),
                                         " distinct, ", idle ? "all idle" : "not all idle")
                                .c_str());
        break;
      }
      ++pinned;
    }
    c.Abandon(a->token);  // the next call sees the same state
  }
  if (!last_error.empty()) spdlog::warn("slurm_scale_bench: last failure: {}", last_error);
  if (!ms.empty()) {
    // The first call also fills the router's lazily built tables and
    // phasord's caches: shown apart, and in the percentiles.
    state.counters["first_ms"] = ms.front();
    state.counters["rest_max_ms"] =
        ms.size() > 1 ? *std::max_element(ms.begin() + 1, ms.end()) : ms.front();
  }
  std::sort(ms.begin(), ms.end());
  if (!ms.empty()) {
    const double calls = static_cast<double>(ms.size());
    state.counters["p50_ms"] = ms[ms.size() / 2];
    state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
    state.counters["max_ms"] = ms.back();
    state.counters["cpu_ms"] = cpu / calls;
    state.counters["caller_cpu_ms"] = caller_cpu / calls;
  }
  state.counters["pinned"] = pinned;
  state.counters["within_50ms"] = within;
  state.counters["failed_open"] = deadline_exceeded + unavailable + precondition + other;
  state.counters["deadline_exceeded"] = deadline_exceeded;
  state.counters["unavailable"] = unavailable;
  state.counters["failed_precondition"] = precondition;
  state.counters["peak_rss_mib"] = PeakRssMib();
  state.counters["controller_rss_mib"] = w.controller_rss_mib;
  state.counters["running_nodes"] = w.running_nodes;
  state.counters["setup_s"] = w.setup_s;
}
BENCHMARK(BM_Submit10k)
    ->ArgNames({"timeout", "nodes"})
    ->ArgsProduct({{0, 1}, {32, 256}})
    ->Iterations(40)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  the_world.reset();
  return 0;
}
