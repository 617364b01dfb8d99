// FlowCounter: the probe's per-core packet sink. Parses every packet
// (probe/roce_parser.h), counts packets by kind, and adds each RoCE packet's
// frame bytes to its flow's time bin; with `tcp_udp`, TCP and UDP packets
// too, by 5-tuple, in the same table.
//
// Memory is allocated once, in Create(): a fixed-capacity open-addressing
// flow table and, per flow, a ring of `window_bins` bins. OnBurst() never
// allocates, logs or locks. Bin b covers [origin + b*bin_us, origin +
// (b+1)*bin_us), the origin being the first packet's time rounded down to a
// multiple of bin_us; the ring keeps the newest `window_bins` bins of each
// flow. Packets older than the ring, or new flows when the table is full,
// are counted and dropped.
//
// Thread safety: one FlowCounter per worker; Snapshot() and stats() must not
// run concurrently with OnBurst() (read them after the capture stopped, or
// from the worker itself).
#ifndef PHASOR_PROBE_FLOW_COUNTER_H_
#define PHASOR_PROBE_FLOW_COUNTER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "probe/packet.h"
#include "probe/roce_parser.h"

namespace phasor::probe {

struct FlowCounterOptions {
  uint32_t bin_us = 1000;       // width of a time bin
  uint32_t window_bins = 8192;  // bins kept per flow (the ring length)
  uint32_t max_flows = 256;     // flow table capacity
  bool tcp_udp = false;         // also count TCP and UDP (non-RoCE) flows by 5-tuple
};

// Per-worker counters, on their own cache lines.
struct alignas(64) ProbeStats {
  uint64_t packets = 0;
  std::array<uint64_t, kPacketKinds> by_kind{};  // indexed by PacketKind
  std::array<uint64_t, 7> by_opcode_class{};     // RoCE packets by OpcodeClass
  uint64_t roce_bytes = 0;                       // frame bytes of counted RoCE packets
  uint64_t tcp_udp_bytes = 0;                    // frame bytes of counted TCP and UDP packets
  uint64_t snapped = 0;                          // RoCE packets captured shorter than their frame
  uint64_t late = 0;                             // RoCE packets older than the ring (dropped)
  uint64_t table_full = 0;  // RoCE packets of flows that found no table slot (dropped)

  void Add(const ProbeStats& other);
};

// One flow's bytes per bin over [t0_epoch_us, t0_epoch_us + bytes.size()*bin_us).
struct FlowSeries {
  FlowKey key;
  int64_t t0_epoch_us = 0;
  uint32_t bin_us = 0;
  std::vector<double> bytes;
};

class FlowCounter : public PacketSink {
 public:
  // InvalidArgument naming the field for a zero bin_us, window_bins or max_flows.
  static absl::StatusOr<std::unique_ptr<FlowCounter>> Create(const FlowCounterOptions& options);

  void OnBurst(std::span<const PacketView> burst) override;

  const ProbeStats& stats() const { return stats_; }

  // Every flow over the newest window (common to all flows of this counter):
  // bins from max(0, newest - window_bins + 1) to the newest bin seen.
  std::vector<FlowSeries> Snapshot() const;

  // Sums snapshots of several workers (same bin width) flow by flow onto a
  // common time axis.
  static std::vector<FlowSeries> Merge(const std::vector<std::vector<FlowSeries>>& parts);

 private:
  struct Slot {
    FlowKey key;
    bool used = false;
    int64_t last_bin = -1;  // newest bin this flow wrote
  };
  explicit FlowCounter(const FlowCounterOptions& options);
  void Count(const PacketView& packet);
  // Adds a packet's bytes to its flow's bin; false when dropped (late, table full).
  bool Add(const FlowKey& key, int64_t timestamp_us, uint32_t bytes);

  FlowCounterOptions options_;
  uint32_t mask_ = 0;
  std::vector<Slot> slots_;           // capacity = power of two >= 2 * max_flows
  std::vector<uint32_t> ring_index_;  // slot -> ring number (UINT32_MAX: none yet)
  std::vector<uint64_t> rings_;       // max_flows * window_bins bytes
  uint32_t flows_ = 0;
  bool have_origin_ = false;
  int64_t origin_us_ = 0;
  int64_t newest_bin_ = -1;
  ProbeStats stats_;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_FLOW_COUNTER_H_
