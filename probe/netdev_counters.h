// Linux interface byte counters as a CounterSource, for hosts without RDMA
// NICs and collectives over TCP (NCCL's socket transport, gloo).
//
// Layout under the root (default /sys/class/net, configurable so that tests
// use a fake tree): <interface>/statistics/tx_bytes and .../rx_bytes, 64-bit
// decimal counters. Every interface named must have both.
//
// Polling: reads are scheduled every interval_us from the first one (a fixed
// schedule that does not drift with read time). Each read is stamped with
// the real time the injected clock gives right after the files were read,
// and the series use those real times, so an irregular read moves bytes to
// where they were counted rather than to the slot. A read starting more than
// max_late_us after its slot is skipped and counted as late (its bytes land
// in the next kept read's interval). Lateness of the kept reads is the
// jitter, reported per series (SamplingReport). Measure() resamples onto a
// grid of interval_us bins.
//
// Files are opened once, in Create(), and read with pread(). Not
// thread-safe.
#ifndef PHASOR_PROBE_NETDEV_COUNTERS_H_
#define PHASOR_PROBE_NETDEV_COUNTERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "probe/counter_series.h"
#include "probe/rdma_counters.h"

namespace phasor::probe {

inline constexpr char kDefaultNetRoot[] = "/sys/class/net";

struct NetdevOptions {
  std::string sysfs_root = kDefaultNetRoot;
  std::vector<std::string> interfaces;  // required, e.g. {"eth0", "ens1f0"}
  int64_t interval_us = 10000;          // polling interval, 1000 (1 ms) or more
  int64_t duration_us = 10000000;       // how long to poll
  int64_t max_late_us = 0;              // 0: interval_us / 2
  PollClock clock;                      // empty members: SystemPollClock()
};

class NetdevSource : public CounterSource {
 public:
  // InvalidArgument for no interfaces, an interface name with '/', or timing
  // out of range (naming the field); NotFound for an interface whose
  // statistics/tx_bytes or rx_bytes cannot be opened (naming the file).
  static absl::StatusOr<std::unique_ptr<NetdevSource>> Create(const NetdevOptions& options);
  ~NetdevSource() override;

  // Polls for duration_us; series "<interface>/tx" and ".../rx", source
  // "netdev:<root>", each with its SamplingReport; bin_us = interval_us.
  // Unavailable when fewer than two reads were kept; a file that stops
  // holding a number skips that read (a note counts them).
  absl::StatusOr<CounterCollection> Collect() override;

  // One read of every counter (tx, rx per interface, in order); false when a
  // file does not hold a number. Exposed for the benchmark.
  bool ReadOnce(std::vector<uint64_t>& values) const;

 private:
  explicit NetdevSource(NetdevOptions options) : options_(std::move(options)) {}
  NetdevOptions options_;
  std::vector<int> fds_;  // tx, rx per interface
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_NETDEV_COUNTERS_H_
