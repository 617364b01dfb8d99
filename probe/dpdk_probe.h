// The whole probe on DPDK: EAL start, capture into per-worker FlowCounters,
// periodic and final reports. Shared by the `phasor-probe` daemon and
// `phasor profile --pcap`.
//
// pcap files named in the EAL arguments (`rx_pcap=FILE` of a net_pcap vdev)
// are checked first with the project's own reader, so that a missing or
// corrupt file or a non-Ethernet link type is a clear InvalidArgument/NotFound
// before DPDK sees it, and the capture stops by itself once all their
// packets arrived.
#ifndef PHASOR_PROBE_DPDK_PROBE_H_
#define PHASOR_PROBE_DPDK_PROBE_H_

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "probe/capture_source.h"
#include "probe/dpdk_capture.h"
#include "probe/flow_counter.h"

namespace phasor::probe {

struct DpdkProbeOptions {
  std::vector<std::string> eal_args;  // as after `--` on the command line
  DpdkCaptureOptions capture;         // stop_after_packets is set from rx_pcap files
  FlowCounterOptions counter;
  double report_s = 0;    // report every this many seconds while capturing; 0: only at the end
  double duration_s = 0;  // stop after this long; 0: at the end of the input or on `interrupted`
};

// Called with the merged flows of all workers (the newest window), the
// summed parse counters, the capture counters, and whether it is the last.
using ProbeReport =
    std::function<void(const std::vector<FlowSeries>& flows, const ProbeStats& stats,
                       const CaptureStats& capture, bool final)>;

// The files named by `rx_pcap=` in EAL arguments.
std::vector<std::string> PcapFilesInEalArgs(const std::vector<std::string>& eal_args);

// Runs until the input ends, `duration_s` passes, or `interrupted` becomes
// true (e.g. from a signal handler), then makes the final report.
absl::Status RunDpdkProbe(const DpdkProbeOptions& options, const std::atomic<bool>& interrupted,
                          const ProbeReport& report);

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_DPDK_PROBE_H_
