// CaptureSource: where packets come from. Two backends: PcapFileSource
// (probe/pcap_file.h, plain file reading, no DPDK) and DpdkCaptureSource
// (probe/dpdk_capture.h: pcap files, live interfaces and NIC ports through
// DPDK poll-mode drivers).
#ifndef PHASOR_PROBE_CAPTURE_SOURCE_H_
#define PHASOR_PROBE_CAPTURE_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "probe/packet.h"

namespace phasor::probe {

struct CaptureStats {
  uint64_t packets = 0;    // delivered to sinks
  uint64_t bursts = 0;     // OnBurst calls
  uint64_t dropped = 0;    // lost before delivery (NIC/driver drops, mbuf exhaustion)
  double elapsed_s = 0.0;  // wall time Run() spent
};

class CaptureSource {
 public:
  virtual ~CaptureSource() = default;

  // How many workers deliver packets; Run() takes one sink per worker.
  virtual int workers() const = 0;

  // Delivers packets in bursts, worker i to sinks[i] (each sink from one
  // thread only), until the source is exhausted (a file) or `stop` becomes
  // true. Returns InvalidArgument for a malformed input (naming what and
  // where) after delivering the packets before it, FailedPrecondition when
  // sinks.size() != workers(). Not thread-safe: call once at a time.
  virtual absl::Status Run(std::span<PacketSink* const> sinks, const std::atomic<bool>& stop) = 0;

  // Counters of the last Run().
  virtual CaptureStats stats() const = 0;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_CAPTURE_SOURCE_H_
