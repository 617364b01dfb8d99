#include "probe/dpdk_capture.h"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"

namespace phasor::probe {
namespace {

bool g_eal_initialised = false;

int64_t NowEpochUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::Status InitEal(const std::vector<std::string>& args) {
  if (g_eal_initialised) {
    return absl::FailedPreconditionError("the DPDK EAL is already initialised in this process");
  }
  std::vector<std::string> storage;
  storage.push_back("phasor-probe");
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int rc = rte_eal_init(static_cast<int>(storage.size()), argv.data());
  if (rc < 0) {
    return absl::UnavailableError(
        absl::StrCat("DPDK EAL initialisation failed: ", rte_strerror(rte_errno)));
  }
  g_eal_initialised = true;
  return absl::OkStatus();
}

void CleanupEal() {
  if (g_eal_initialised) rte_eal_cleanup();
  g_eal_initialised = false;
}

struct DpdkCaptureSource::Worker {
  DpdkCaptureSource* source;
  uint16_t queue;
  PacketSink* sink;
  const std::atomic<bool>* stop;
  std::atomic<uint64_t>* total;  // packets of all workers (for stop_after_packets)
  uint64_t packets = 0;
  uint64_t bursts = 0;
  int64_t last_packet_us = 0;
};

int DpdkCaptureSource::WorkerMain(void* arg) {
  Worker& w = *static_cast<Worker*>(arg);
  const DpdkCaptureOptions& opt = w.source->options_;
  const int ts_offset = w.source->timestamp_offset_;
  const uint64_t ts_flag = w.source->timestamp_flag_;
  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t tsc0 = rte_rdtsc();
  const int64_t epoch0 = NowEpochUs();
  uint64_t last_rx_tsc = tsc0;
  const uint64_t idle_tsc = opt.idle_stop_ms * (hz / 1000);
  std::vector<rte_mbuf*> mbufs(opt.burst);
  std::vector<PacketView> views(opt.burst);
  while (!w.stop->load(std::memory_order_relaxed)) {
    const uint16_t n = rte_eth_rx_burst(opt.port, w.queue, mbufs.data(), opt.burst);
    const uint64_t now_tsc = rte_rdtsc();
    if (n == 0) {
      if (idle_tsc > 0 && now_tsc - last_rx_tsc > idle_tsc) break;
      if (opt.stop_after_packets > 0 &&
          w.total->load(std::memory_order_relaxed) >= opt.stop_after_packets) {
        break;
      }
      continue;
    }
    last_rx_tsc = now_tsc;
    const int64_t tsc_us =
        epoch0 + static_cast<int64_t>(static_cast<double>(now_tsc - tsc0) * 1e6 / hz);
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = mbufs[i];
      PacketView& v = views[i];
      v.data = rte_pktmbuf_mtod(m, const uint8_t*);
      v.captured_len = m->data_len;
      v.wire_len = m->pkt_len;
      v.timestamp_us =
          (ts_offset >= 0 && (m->ol_flags & ts_flag) != 0)
              ? static_cast<int64_t>(*RTE_MBUF_DYNFIELD(m, ts_offset, rte_mbuf_timestamp_t*))
              : tsc_us;
    }
    w.sink->OnBurst(std::span<const PacketView>(views.data(), n));
    rte_pktmbuf_free_bulk(mbufs.data(), n);
    w.packets += n;
    ++w.bursts;
    if (opt.stop_after_packets > 0 &&
        w.total->fetch_add(n, std::memory_order_relaxed) + n >= opt.stop_after_packets) {
      break;
    }
  }
  return 0;
}

absl::StatusOr<std::unique_ptr<DpdkCaptureSource>> DpdkCaptureSource::Create(
    const DpdkCaptureOptions& options) {
  if (!g_eal_initialised) {
    return absl::FailedPreconditionError("DpdkCaptureSource: call InitEal first");
  }
  if (options.queues == 0) return absl::InvalidArgumentError("queues: must be at least 1");
  if (options.burst == 0 || options.burst > 1024) {
    return absl::InvalidArgumentError("burst: must be in 1..1024");
  }
  if (options.queues > rte_lcore_count()) {
    return absl::InvalidArgumentError(absl::StrCat("queues: ", options.queues,
                                                   " workers need as many lcores (EAL -l), have ",
                                                   rte_lcore_count()));
  }
  if (!rte_eth_dev_is_valid_port(options.port)) {
    return absl::NotFoundError(absl::StrCat("port: DPDK has no port ", options.port, " (",
                                            rte_eth_dev_count_avail(),
                                            " available; pass --vdev=... or a NIC to the EAL)"));
  }
  std::unique_ptr<DpdkCaptureSource> src(new DpdkCaptureSource(options));
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(options.port, &info); rc != 0) {
    return absl::UnavailableError(absl::StrCat("rte_eth_dev_info_get: ", rte_strerror(-rc)));
  }
  src->driver_ = info.driver_name != nullptr ? info.driver_name : "";
  if (options.queues > info.max_rx_queues) {
    return absl::InvalidArgumentError(absl::StrCat("queues: port ", options.port, " (",
                                                   src->driver_, ") has at most ",
                                                   info.max_rx_queues, " RX queues"));
  }
  const std::string pool_name = absl::StrCat("phasor_rx_", options.port);
  src->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), options.mbufs, 256, 0,
                                       options.mbuf_data_room, rte_eth_dev_socket_id(options.port));
  if (src->pool_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("rte_pktmbuf_pool_create(", options.mbufs,
                                               " mbufs of ", options.mbuf_data_room,
                                               " bytes): ", rte_strerror(rte_errno)));
  }
  // Register the RX timestamp field before the port starts so that PMDs
  // which support it fill it.
  rte_mbuf_dyn_rx_timestamp_register(&src->timestamp_offset_, &src->timestamp_flag_);
  src->timestamp_offset_ = -1;
  rte_eth_conf conf{};
  if (int rc = rte_eth_dev_configure(options.port, options.queues, 0, &conf); rc != 0) {
    // Some drivers insist on a TX queue.
    if (int rc2 = rte_eth_dev_configure(options.port, options.queues, 1, &conf); rc2 != 0) {
      return absl::UnavailableError(absl::StrCat("rte_eth_dev_configure: ", rte_strerror(-rc)));
    }
    if (int rc3 = rte_eth_tx_queue_setup(options.port, 0, 512, rte_eth_dev_socket_id(options.port),
                                         nullptr);
        rc3 != 0) {
      return absl::UnavailableError(absl::StrCat("rte_eth_tx_queue_setup: ", rte_strerror(-rc3)));
    }
  }
  for (uint16_t q = 0; q < options.queues; ++q) {
    if (int rc = rte_eth_rx_queue_setup(options.port, q, options.rx_descriptors,
                                        rte_eth_dev_socket_id(options.port), nullptr, src->pool_);
        rc != 0) {
      return absl::UnavailableError(
          absl::StrCat("rte_eth_rx_queue_setup(queue ", q, "): ", rte_strerror(-rc)));
    }
  }
  if (int rc = rte_eth_dev_start(options.port); rc != 0) {
    return absl::UnavailableError(absl::StrCat("rte_eth_dev_start: ", rte_strerror(-rc)));
  }
  src->started_ = true;
  if (options.promiscuous) rte_eth_promiscuous_enable(options.port);  // best effort
  // The field exists once a PMD (or our registration) created it; the flag
  // in each mbuf says whether this packet carries a timestamp.
  int offset = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, nullptr);
  int flag_bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, nullptr);
  if (offset >= 0 && flag_bit >= 0) {
    src->timestamp_offset_ = offset;
    src->timestamp_flag_ = 1ULL << flag_bit;
  }
  return src;
}

DpdkCaptureSource::~DpdkCaptureSource() {
  if (started_) {
    rte_eth_dev_stop(options_.port);
    rte_eth_dev_close(options_.port);
  }
  if (pool_ != nullptr) rte_mempool_free(pool_);
}

absl::Status DpdkCaptureSource::Run(std::span<PacketSink* const> sinks,
                                    const std::atomic<bool>& stop) {
  if (sinks.size() != options_.queues) {
    return absl::FailedPreconditionError(absl::StrCat("DpdkCaptureSource::Run: ", sinks.size(),
                                                      " sinks for ", options_.queues, " workers"));
  }
  stats_ = {};
  rte_eth_stats_reset(options_.port);
  std::atomic<uint64_t> total{0};
  std::vector<Worker> workers(options_.queues);
  for (uint16_t q = 0; q < options_.queues; ++q) {
    workers[q] = Worker{this, q, sinks[q], &stop, &total};
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<unsigned> launched;
  unsigned lcore = rte_get_next_lcore(-1, 1, 0);
  for (uint16_t q = 1; q < options_.queues; ++q) {
    if (int rc = rte_eal_remote_launch(&DpdkCaptureSource::WorkerMain, &workers[q], lcore);
        rc != 0) {
      return absl::UnavailableError(absl::StrCat("rte_eal_remote_launch(lcore ", lcore, ")"));
    }
    launched.push_back(lcore);
    lcore = rte_get_next_lcore(lcore, 1, 0);
  }
  WorkerMain(&workers[0]);
  for (unsigned l : launched) rte_eal_wait_lcore(l);
  stats_.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Worker& w : workers) {
    stats_.packets += w.packets;
    stats_.bursts += w.bursts;
  }
  rte_eth_stats eth{};
  if (rte_eth_stats_get(options_.port, &eth) == 0) stats_.dropped = eth.imissed + eth.rx_nombuf;
  return absl::OkStatus();
}

}  // namespace phasor::probe
