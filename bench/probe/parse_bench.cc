// Parse-and-count throughput of the probe's fast path on one core:
//  - BM_ParseAndCount/views: frames in plain memory (no DPDK),
//  - BM_ParseAndCount/mbufs: frames in rte_mbufs of a DPDK mempool, turned
//    into PacketViews exactly as the capture worker does (mtod, data_len,
//    pkt_len, timestamp dynfield), then FlowCounter::OnBurst.
// Target: >= 10 Mpps (400 GbE with 4 KB frames is about 12 Mpps).
// The EAL starts in main() without hugepages or NICs.
#include <benchmark/benchmark.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <cstring>
#include <vector>

#include "probe/flow_counter.h"
#include "probe/packet_builder.h"

namespace {

using phasor::probe::BuildFrame;
using phasor::probe::FlowCounter;
using phasor::probe::FlowCounterOptions;
using phasor::probe::FrameSpec;
using phasor::probe::PacketView;

constexpr int kBurst = 32;
constexpr int kPackets = 4096;  // distinct frames cycled through
constexpr int kFlows = 64;

std::vector<std::vector<uint8_t>> Frames(uint32_t frame_bytes) {
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < kPackets; ++i) {
    FrameSpec s;
    s.dest_qp = 0x100 + (i % kFlows);
    s.psn = i;
    s.vlans = (i % 4 == 0) ? std::vector<uint16_t>{10} : std::vector<uint16_t>{};
    s.payload_bytes = frame_bytes - 14 - 20 - 8 - 12 - static_cast<uint32_t>(4 * s.vlans.size());
    frames.push_back(BuildFrame(s));
  }
  return frames;
}

std::unique_ptr<FlowCounter> Counter() {
  FlowCounterOptions o;
  o.bin_us = 1000;
  o.window_bins = 4096;
  o.max_flows = 256;
  return *FlowCounter::Create(o);
}

void BM_ParseAndCountViews(benchmark::State& state) {
  const auto frames = Frames(static_cast<uint32_t>(state.range(0)));
  std::vector<PacketView> views(kPackets);
  for (int i = 0; i < kPackets; ++i) {
    views[i] = {frames[i].data(), static_cast<uint32_t>(frames[i].size()),
                static_cast<uint32_t>(frames[i].size()), 0};
  }
  auto counter = Counter();
  int64_t t = 1'700'000'000'000'000;
  size_t at = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBurst; ++i) views[at + i].timestamp_us = t;
    counter->OnBurst(std::span<const PacketView>(views.data() + at, kBurst));
    at = (at + kBurst) % kPackets;
    t += 3;  // ~10 Mpps of wall time per packet burst
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  state.SetBytesProcessed(state.iterations() * kBurst * state.range(0));
  benchmark::DoNotOptimize(counter->stats().roce_bytes);
}
BENCHMARK(BM_ParseAndCountViews)->Arg(1024)->Arg(4096);

rte_mempool* g_pool = nullptr;
int g_ts_offset = -1;

void BM_ParseAndCountMbufs(benchmark::State& state) {
  const auto frames = Frames(static_cast<uint32_t>(state.range(0)));
  std::vector<rte_mbuf*> mbufs(kPackets);
  if (rte_pktmbuf_alloc_bulk(g_pool, mbufs.data(), kPackets) != 0) {
    state.SkipWithError("mbuf allocation failed");
    return;
  }
  for (int i = 0; i < kPackets; ++i) {
    char* p = rte_pktmbuf_append(mbufs[i], static_cast<uint16_t>(frames[i].size()));
    std::memcpy(p, frames[i].data(), frames[i].size());
  }
  auto counter = Counter();
  std::vector<PacketView> views(kBurst);
  int64_t t = 1'700'000'000'000'000;
  size_t at = 0;
  for (auto _ : state) {
    rte_mbuf** burst = mbufs.data() + at;
    for (int i = 0; i < kBurst; ++i) {
      rte_mbuf* m = burst[i];
      *RTE_MBUF_DYNFIELD(m, g_ts_offset, rte_mbuf_timestamp_t*) = static_cast<uint64_t>(t);
      views[i].data = rte_pktmbuf_mtod(m, const uint8_t*);
      views[i].captured_len = m->data_len;
      views[i].wire_len = m->pkt_len;
      views[i].timestamp_us =
          static_cast<int64_t>(*RTE_MBUF_DYNFIELD(m, g_ts_offset, rte_mbuf_timestamp_t*));
    }
    counter->OnBurst(std::span<const PacketView>(views.data(), kBurst));
    at = (at + kBurst) % kPackets;
    t += 3;
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  state.SetBytesProcessed(state.iterations() * kBurst * state.range(0));
  benchmark::DoNotOptimize(counter->stats().roce_bytes);
  rte_pktmbuf_free_bulk(mbufs.data(), kPackets);
}
BENCHMARK(BM_ParseAndCountMbufs)->Arg(1024)->Arg(4096);

}  // namespace

int main(int argc, char** argv) {
  char arg0[] = "probe_parse_bench", a1[] = "--no-huge", a2[] = "--no-shconf", a3[] = "-m",
       a4[] = "512", a5[] = "--no-pci", a6[] = "--no-telemetry", a7[] = "--log-level=error";
  char* eal[] = {arg0, a1, a2, a3, a4, a5, a6, a7, nullptr};
  if (rte_eal_init(8, eal) < 0) return 1;
  g_pool = rte_pktmbuf_pool_create("bench", kPackets + 512, 256, 0, 4096 + RTE_PKTMBUF_HEADROOM,
                                   SOCKET_ID_ANY);
  uint64_t flag = 0;
  if (g_pool == nullptr || rte_mbuf_dyn_rx_timestamp_register(&g_ts_offset, &flag) != 0) return 1;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rte_eal_cleanup();
  return 0;
}
