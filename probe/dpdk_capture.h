// DpdkCaptureSource: packets from a DPDK ethdev port, which is whatever the
// EAL arguments made it: a pcap file (`--vdev=net_pcap0,rx_pcap=FILE`), a
// live interface (`--vdev=net_af_packet0,iface=eth1` or
// `--vdev=net_pcap0,iface=eth1`, e.g. a switch's mirror port) or a real NIC.
//
// Fast path (per worker lcore, one RX queue each): rte_eth_rx_burst, one
// PacketView per mbuf (first segment; wire length = pkt_len), the sink's
// OnBurst, rte_pktmbuf_free_bulk. No allocation, logging or locking per
// packet. Timestamps: the mbuf RX timestamp dynamic field when the PMD sets
// it (the pcap PMD stores the file's time in microseconds), else the TSC
// read once per burst and converted to epoch microseconds.
//
// The EAL initialises once per process (InitEal); a second call fails.
// A DpdkCaptureSource owns its port's configuration and stops and closes
// the port when destroyed. Run() is not reentrant.
#ifndef PHASOR_PROBE_DPDK_CAPTURE_H_
#define PHASOR_PROBE_DPDK_CAPTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "probe/capture_source.h"

struct rte_mempool;

namespace phasor::probe {

// rte_eal_init with these arguments (argv[0] is added). FailedPrecondition
// when the EAL is already initialised, Unavailable with DPDK's reason when it
// fails (no hugepages, bad --vdev, ...).
absl::Status InitEal(const std::vector<std::string>& args);
// rte_eal_cleanup; harmless when InitEal did not run.
void CleanupEal();

struct DpdkCaptureOptions {
  uint16_t port = 0;    // ethdev port id, in EAL probe order
  uint16_t queues = 1;  // RX queues = workers, one lcore each (the main lcore is worker 0)
  uint16_t burst = 32;  // packets per rte_eth_rx_burst
  uint16_t rx_descriptors = 1024;
  uint32_t mbufs = 4095;            // mempool size (per port)
  uint16_t mbuf_data_room = 10240;  // bytes per mbuf: jumbo frames fit in one segment
  uint64_t stop_after_packets = 0;  // stop once this many arrived (a file's count); 0: never
  uint32_t idle_stop_ms = 0;        // stop after this long without a packet; 0: never
  bool promiscuous = true;
};

class DpdkCaptureSource : public CaptureSource {
 public:
  // Configures and starts the port. Requires InitEal. NotFound when the port
  // does not exist (no --vdev or NIC), InvalidArgument for options out of
  // range, Unavailable when DPDK refuses the configuration (naming the call).
  static absl::StatusOr<std::unique_ptr<DpdkCaptureSource>> Create(
      const DpdkCaptureOptions& options);
  ~DpdkCaptureSource() override;

  int workers() const override { return options_.queues; }
  absl::Status Run(std::span<PacketSink* const> sinks, const std::atomic<bool>& stop) override;
  CaptureStats stats() const override { return stats_; }

  // Replaces options.stop_after_packets for the next Run() (0: never).
  void set_stop_after_packets(uint64_t packets) { options_.stop_after_packets = packets; }

  // The port's driver name ("net_pcap", "net_af_packet", ...).
  const std::string& driver() const { return driver_; }
  // Whether the PMD delivers RX timestamps (else the TSC is used).
  bool hardware_timestamps() const { return timestamp_offset_ >= 0; }

 private:
  explicit DpdkCaptureSource(const DpdkCaptureOptions& options) : options_(options) {}
  struct Worker;
  static int WorkerMain(void* arg);

  DpdkCaptureOptions options_;
  rte_mempool* pool_ = nullptr;
  bool started_ = false;
  std::string driver_;
  int timestamp_offset_ = -1;
  uint64_t timestamp_flag_ = 0;
  CaptureStats stats_;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_DPDK_CAPTURE_H_
