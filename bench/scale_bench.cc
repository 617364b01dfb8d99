// phasord's ranking at 10,000 servers, in process (no sockets: the request
// path's work, not the transport; phasord_bench has the round trips): a
// RankRequest in server form as the Slurm controller and the extender send
// it, with 100 running jobs (4-64 servers each, seeded), free_servers (every
// server no running job holds) and 8 host candidates of one arriving job of
// 32-256 servers, each candidate a different set of free servers (the first
// packed by leaf, the others spread over more leaves). phasord routes every
// ring on the fabric (its topology file), adds its own candidates, ranks,
// applies the policy and keeps the ranking for commit: Service::Rank, what
// `phasor rank --topology` does plus phasord's own steps.
//
//   BM_Rank10k/<fabric>/servers:N/pinned:P/order:O
//                                    fabric 0: a 3-tier fat tree (k = 34,
//                                    9,826 servers), 1: a leaf-spine of 250
//                                    leaves x 40 servers, 16 spines, 2:1;
//                                    pinned 1: the running jobs pinned at
//                                    their shifts, as the Slurm controller
//                                    and the extender send them (phasord's
//                                    committed offsets); 0: free, as a
//                                    request that gives no shifts;
//                                    order 1: reply_detail ORDER (the
//                                    extender's and the Slurm controller's:
//                                    no link results in the reply), 0: FULL
//                                    (`phasor rank`'s)
//
// The fat tree's request needs limits.max_jobs_x_links raised past its
// default (2^22; the benchmark sets 2^23), and the deadline is 120 s instead
// of 10 s so that every call is measured to its end. Each benchmark makes 25
// calls (the fat tree's 5): the first with nothing solved before it
// (first_ms), then the others, each after one running job ended and another
// started on its servers (p50_ms, p99_ms: the slowest of them). Counters also: peak_rss_mib (the
// process's high water mark, the fabric and phasord's state included),
// contended links, and reply_digest: 48 bits of FNV-1a over every reply
// (deterministically serialized, solve_seconds cleared), equal at two
// commits when a change to the path changed no reply.
//
//   build/bench/scale_bench --benchmark_filter=fabric:1
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "daemon/metrics.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "daemon/service.h"
#include "placer/ranker.h"
#include "protocol/convert.h"
#include "spdlog/spdlog.h"
#include "topology/generators.h"
#include "topology/topology_yaml.h"

namespace {

using namespace phasor;

topology::Topology Fabric(int64_t which) {
  if (which == 0) {
    topology::FatTreeOptions o;
    o.k = 34;  // 34^3 / 4 = 9,826 servers
    o.nic_gbps = 100;
    return *topology::MakeFatTree(o);
  }
  topology::LeafSpineOptions o;
  o.leaves = 250;
  o.servers_per_leaf = 40;
  o.spines = 16;
  o.nic_gbps = 100;
  o.oversubscription = 2;
  return *topology::MakeLeafSpine(o);
}

placer::TrafficProfile Profile(std::mt19937_64& rng) {
  placer::TrafficProfile p;
  p.period_us = 100000 + 10000 * static_cast<uint32_t>(rng() % 31);
  p.square = placer::SquareWave{p.period_us / 4 + static_cast<uint32_t>(rng() % (p.period_us / 4)), 60.0, 0, 0};
  return p;
}

// The request: servers grouped by their leaf (edge switch), jobs placed on
// whole servers.
placer::RankRequest Request(const topology::Topology& fabric, int64_t job_servers, bool pinned) {
  std::map<std::string, std::vector<std::string>> by_leaf;
  for (topology::NodeIndex s : fabric.Servers()) {
    by_leaf[fabric.node(*fabric.LeafOf(s)).id].push_back(fabric.node(s).id);
  }
  std::vector<std::vector<std::string>> leaves;
  for (auto& [leaf, servers] : by_leaf) leaves.push_back(servers);
  std::mt19937_64 rng(2026);
  std::vector<std::string> order;
  for (const auto& l : leaves) order.insert(order.end(), l.begin(), l.end());
  std::shuffle(order.begin(), order.end(), rng);
  placer::RankRequest r;
  std::set<std::string> used;
  size_t next = 0;
  for (int j = 0; j < 100; ++j) {
    const std::string id = "run" + std::to_string(j);
    r.jobs.push_back({id, Profile(rng), std::nullopt});
    // As the integrations send them (protocol::AddRunningJobs): each running
    // job pinned at the shift phasord committed for it.
    if (pinned) r.jobs.back().pinned_shift_us = static_cast<uint32_t>(rng() % r.jobs.back().profile.period_us);
    const size_t n = 4 + rng() % 61;
    std::vector<std::string>& servers = r.running.servers[id];
    for (size_t k = 0; k < n; ++k) {
      servers.push_back(order[next]);
      used.insert(order[next++]);
    }
  }
  for (const std::string& s : order) {
    if (!used.count(s)) r.free_servers.push_back(s);
  }
  r.jobs.push_back({"new", Profile(rng), std::nullopt});
  // Candidate c: the free servers of leaves taken from leaf c * 7 on, at
  // most (c + 1) * 4 servers from each leaf: the first packs, the later
  // ones spread.
  for (int c = 0; c < 8; ++c) {
    placer::Candidate cand;
    cand.id = "host" + std::to_string(c);
    std::vector<std::string>& servers = cand.servers["new"];
    for (size_t i = 0; servers.size() < static_cast<size_t>(job_servers) && i < leaves.size(); ++i) {
      const std::vector<std::string>& leaf = leaves[(c * 7 + i) % leaves.size()];
      size_t taken = 0;
      for (const std::string& s : leaf) {
        if (servers.size() == static_cast<size_t>(job_servers) || taken == static_cast<size_t>(c + 1) * 4) break;
        if (used.count(s)) continue;
        servers.push_back(s);
        ++taken;
      }
    }
    r.candidates.push_back(cand);
  }
  return r;
}

// FNV-1a over `reply` serialized deterministically (map order fixed), its
// solve time cleared, folded into `digest`: candidate by candidate, so that
// a FULL reply's copy does not add to the peak RSS the benchmark reports.
void FoldBytes(const google::protobuf::MessageLite& m, uint64_t& digest) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  for (unsigned char c : bytes) digest = (digest ^ c) * 0x100000001b3ULL;
}
void FoldReply(const v1::RankReply& reply, uint64_t& digest) {
  for (const v1::RankedCandidate& c : reply.ranked()) FoldBytes(c, digest);
  v1::RankReply rest;
  rest.set_request_id(reply.request_id());
  rest.set_ranking_id(reply.ranking_id());
  *rest.mutable_rejected() = reply.rejected();
  FoldBytes(rest, digest);
}

long PeakRssKib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

void BM_Rank10k(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  const topology::Topology fabric = Fabric(state.range(0));
  char tmpl[] = "/tmp/phasor-scale-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  daemon::DaemonOptions options;
  options.allow_plain = true;
  options.request_endpoint = "ipc://" + dir + "/r";
  options.profile_endpoint = "ipc://" + dir + "/p";
  options.offset_endpoint = "ipc://" + dir + "/o";
  options.state_path = dir + "/state.db";
  options.topology_path = dir + "/fabric.yaml";
  // The fat tree's request is 101 jobs x ~47,000 links, past the default
  // limits.max_jobs_x_links (2^22): raised here, as its operator would.
  options.rank_limits.max_jobs_x_links = uint64_t{1} << 23;
  options.rank_limits.deadline_ms = 120'000;  // measured, not cut off at the default 10 s
  std::ofstream(options.topology_path) << topology::ToYaml(fabric);
  int64_t now_us = 1'700'000'000'000'000;
  static daemon::Metrics metrics;
  absl::StatusOr<std::unique_ptr<daemon::Service>> service =
      daemon::Service::Open(options, &metrics, [&] { return now_us; }, [](const v1::OffsetUpdate&) {});
  if (!service.ok()) {
    state.SkipWithError(std::string(service.status().message()).c_str());
    return;
  }
  // The first request finds nothing solved (a phasord just started, or a
  // fabric whose jobs all changed); each later one is the cluster a moment
  // on: one running job ended and another started on its servers (a new id
  // and profile), so the links that job crosses are new and the rest were
  // ranked before (the process-wide memos of link solves and routed rings
  // keep them; placer::ClearSolveMemo).
  placer::ClearSolveMemo();
  const placer::RankRequest base = Request(fabric, state.range(1), state.range(2) != 0);
  const int churn = static_cast<int>(state.max_iterations) - 1;
  std::vector<v1::RankRequest> requests;
  std::mt19937_64 rng(7);
  requests.push_back(protocol::ToProto(base));
  const bool order = state.range(3) != 0;
  for (int i = 1; i <= churn; ++i) {
    placer::RankRequest next = base;
    const size_t j = static_cast<size_t>(i * 37) % 100;  // a running job (jobs 0..99 are the running ones)
    const std::string old_id = next.jobs[j].id;
    next.jobs[j] = {old_id + "-then-" + std::to_string(i), Profile(rng), std::nullopt};
    if (state.range(2) != 0) next.jobs[j].pinned_shift_us = static_cast<uint32_t>(rng() % next.jobs[j].profile.period_us);
    auto node = next.running.servers.extract(old_id);
    node.key() = next.jobs[j].id;
    next.running.servers.insert(std::move(node));
    requests.push_back(protocol::ToProto(next));
  }
  if (order) {
    for (v1::RankRequest& r : requests) r.set_reply_detail(v1::RankRequest::ORDER);
  }
  std::vector<double> ms;
  double first_ms = 0;
  size_t contended = 0, ranked = 0, call = 0;
  uint64_t digest = 0xcbf29ce484222325ULL;
  for (auto _ : state) {
    const v1::RankRequest& request = requests[std::min<size_t>(call, churn)];
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<v1::RankReply> reply = (*service)->Rank(request);
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (call++ == 0) {
      first_ms = took;
    } else {
      ms.push_back(took);
    }
    if (!reply.ok()) {
      state.SkipWithError(std::string(reply.status().message()).c_str());
      break;
    }
    state.PauseTiming();  // the digest is not phasord's time
    FoldReply(*reply, digest);
    state.ResumeTiming();
    ranked = reply->ranked_size();
    if (!order && reply->ranked_size() > 0) contended = reply->ranked(0).links_size();
    now_us += 1000;
  }
  state.counters["first_ms"] = first_ms;
  std::sort(ms.begin(), ms.end());
  if (!ms.empty()) {
    state.counters["p50_ms"] = ms[ms.size() / 2];
    state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
  }
  state.counters["peak_rss_mib"] = static_cast<double>(PeakRssKib()) / 1024;
  state.counters["ranked"] = static_cast<double>(ranked);
  state.counters["contended_links"] = static_cast<double>(contended);
  state.counters["reply_digest"] = static_cast<double>(digest >> 16);  // 48 bits: exact in a double
  state.counters["servers"] = static_cast<double>(fabric.Servers().size());
  service->reset();
  std::filesystem::remove_all(dir);
}
// The first request and 24 after one job's churn each; on the fat tree
// (half a minute a call) the first and 4.
BENCHMARK(BM_Rank10k)
    ->ArgNames({"fabric", "servers", "pinned", "order"})
    ->Args({1, 32, 1, 0})
    ->Args({1, 32, 1, 1})
    ->Args({1, 256, 1, 0})
    ->Args({1, 32, 0, 0})
    ->Iterations(25)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Rank10k)
    ->ArgNames({"fabric", "servers", "pinned", "order"})
    ->Args({0, 32, 1, 0})
    ->Args({0, 256, 1, 0})
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
