// RDMA NIC port counters from sysfs (SPEC section 8).
//
// Layout under the root (default /sys/class/infiniband, configurable so that
// tests use a fake tree):
//   <device>/ports/<port>/counters/port_xmit_data    (4-byte units)
//   <device>/ports/<port>/counters/port_rcv_data     (4-byte units)
//   <device>/ports/<port>/hw_counters/<name>         (np_ecn_marked_roce_packets,
//                                                     rp_cnp_handled, ... as is)
// Devices come from libibverbs (ibv_get_device_list, which returns NULL or an
// empty list on hosts without RDMA); when it names none, or for a root other
// than the default, the root's subdirectories are the devices.
//
// RdmaCounterReader is immutable after Create; Read() is thread-safe.
#ifndef PHASOR_PROBE_RDMA_COUNTERS_H_
#define PHASOR_PROBE_RDMA_COUNTERS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "probe/counter_series.h"

namespace phasor::probe {

inline constexpr char kDefaultSysfsRoot[] = "/sys/class/infiniband";

// Device names libibverbs reports; empty when it reports none (NULL list).
std::vector<std::string> IbverbsDeviceNames();

struct RdmaCounterOptions {
  std::string sysfs_root = kDefaultSysfsRoot;
  std::vector<std::string> devices;  // empty: discover (see the header comment)
};

// One reading of every counter: "<device>/<port>/<counter>" -> value, where
// counter is "port_xmit_data", "port_rcv_data" or "hw_counters/<name>".
struct CounterSnapshot {
  int64_t time_us = 0;
  std::map<std::string, uint64_t> values;
  uint64_t unreadable = 0;  // files that vanished or hold no number (skipped)
};

class RdmaCounterReader {
 public:
  // NotFound when the root does not exist or has no device with ports.
  static absl::StatusOr<RdmaCounterReader> Create(const RdmaCounterOptions& options);

  const std::vector<std::string>& ports() const { return ports_; }  // "<device>/<port>"
  bool found_by_ibverbs() const { return by_ibverbs_; }

  // Reads every counter file once, stamped `time_us`.
  CounterSnapshot Read(int64_t time_us) const;

 private:
  std::string root_;
  std::vector<std::string> ports_;
  bool by_ibverbs_ = false;
};

// Turns snapshots (in time order) into byte series per port and direction:
// "<device>/<port>/tx" from port_xmit_data and ".../rx" from port_rcv_data,
// times 4. A counter going backwards is a 32-bit wrap or a reset
// (DeltasFromReadings); counts land in *wraps and *resets.
std::vector<CounterSeries> RdmaSeries(const std::vector<CounterSnapshot>& snapshots,
                                      const std::string& source, uint64_t* wraps, uint64_t* resets);

// Reads a directory of snapshots: one subdirectory per reading, named by its
// time in epoch microseconds, each holding a copy of the sysfs root.
// InvalidArgument when a subdirectory name is not a number or there are
// fewer than two.
absl::StatusOr<std::vector<CounterSnapshot>> ReadSnapshotSeries(const std::string& dir);

// Whether `dir` looks like a snapshot series (all subdirectories numeric).
bool IsSnapshotSeries(const std::string& dir);

// Time for polling, injected so that tests run without waiting.
struct PollClock {
  std::function<int64_t()> now_us;
  std::function<void(int64_t)> sleep_until_us;
};
PollClock SystemPollClock();

// Reads `count` snapshots `interval_us` apart (fixed schedule, not drifting
// with read time).
std::vector<CounterSnapshot> PollCounters(const RdmaCounterReader& reader, int count,
                                          int64_t interval_us, const PollClock& clock);

struct RdmaSourceOptions {
  // A directory of snapshots (IsSnapshotSeries), or a live sysfs root polled
  // every interval_us for duration_us.
  std::string path = kDefaultSysfsRoot;
  int64_t interval_us = 10000;    // live: polling interval
  int64_t duration_us = 10000000;  // live: how long to poll
  PollClock clock;                // live: empty members mean SystemPollClock()
};

// RDMA NIC port counters as a CounterSource: "<device>/<port>/tx" and
// ".../rx" series from port_xmit_data/port_rcv_data, source
// "rdma-sysfs:<path>". Counter resets become a note. InvalidArgument when
// there are no port_xmit_data/port_rcv_data readings or the live timing is
// not positive; the reader's and ReadSnapshotSeries' errors otherwise.
class RdmaSysfsSource : public CounterSource {
 public:
  explicit RdmaSysfsSource(RdmaSourceOptions options) : options_(std::move(options)) {}
  absl::StatusOr<CounterCollection> Collect() override;

 private:
  RdmaSourceOptions options_;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_RDMA_COUNTERS_H_
