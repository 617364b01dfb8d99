#include "probe/flow_counter.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "absl/status/status.h"
#include "probe/binning.h"

namespace phasor::probe {
namespace {

constexpr uint32_t kNoRing = 0xffffffffu;

inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

inline uint64_t HashKey(const FlowKey& key) {
  uint64_t w[4];
  std::memcpy(w, key.src.data(), 16);
  std::memcpy(w + 2, key.dst.data(), 16);
  uint64_t h = key.dest_qp ^ (uint64_t{static_cast<uint8_t>(key.transport)} << 24) ^
               (uint64_t{key.src_port} << 32) ^ (uint64_t{key.dst_port} << 48);
  for (uint64_t v : w) h = Mix(h, v);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

}  // namespace

void ProbeStats::Add(const ProbeStats& other) {
  packets += other.packets;
  for (size_t i = 0; i < by_kind.size(); ++i) by_kind[i] += other.by_kind[i];
  for (size_t i = 0; i < by_opcode_class.size(); ++i)
    by_opcode_class[i] += other.by_opcode_class[i];
  roce_bytes += other.roce_bytes;
  tcp_udp_bytes += other.tcp_udp_bytes;
  snapped += other.snapped;
  late += other.late;
  table_full += other.table_full;
}

absl::StatusOr<std::unique_ptr<FlowCounter>> FlowCounter::Create(
    const FlowCounterOptions& options) {
  if (options.bin_us == 0) return absl::InvalidArgumentError("bin_us: must be positive");
  if (options.window_bins == 0) return absl::InvalidArgumentError("window_bins: must be positive");
  if (options.max_flows == 0) return absl::InvalidArgumentError("max_flows: must be positive");
  if (static_cast<uint64_t>(options.window_bins) * options.max_flows > (1ull << 28)) {
    return absl::InvalidArgumentError(
        "window_bins * max_flows: more than 2^28 bins (2 GiB); lower one of them");
  }
  return std::unique_ptr<FlowCounter>(new FlowCounter(options));
}

FlowCounter::FlowCounter(const FlowCounterOptions& options) : options_(options) {
  uint32_t capacity = 16;
  while (capacity < 2 * options.max_flows) capacity <<= 1;
  mask_ = capacity - 1;
  slots_.resize(capacity);
  ring_index_.assign(capacity, kNoRing);
  rings_.assign(static_cast<size_t>(options.max_flows) * options.window_bins, 0);
}

void FlowCounter::OnBurst(std::span<const PacketView> burst) {
  for (const PacketView& packet : burst) Count(packet);
}

void FlowCounter::Count(const PacketView& packet) {
  ++stats_.packets;
  const RoceInfo info = ParseRoce(packet.data, packet.captured_len, packet.wire_len);
  ++stats_.by_kind[static_cast<int>(info.kind)];
  if (info.kind == PacketKind::kRoce) {
    ++stats_.by_opcode_class[static_cast<int>(ClassOf(info.opcode))];
    if (!Add(info.key, packet.timestamp_us, info.frame_bytes)) return;
    stats_.roce_bytes += info.frame_bytes;
    if (info.snapped) ++stats_.snapped;
  } else if (options_.tcp_udp && info.l4_flow) {
    if (!Add(info.key, packet.timestamp_us, info.frame_bytes)) return;
    stats_.tcp_udp_bytes += info.frame_bytes;
    if (info.snapped) ++stats_.snapped;
  }
}

bool FlowCounter::Add(const FlowKey& key, int64_t timestamp_us, uint32_t bytes) {
  if (!have_origin_) {
    origin_us_ = FloorDiv(timestamp_us, options_.bin_us) * options_.bin_us;
    have_origin_ = true;
  }
  const int64_t bin = FloorDiv(timestamp_us - origin_us_, options_.bin_us);
  const int64_t window = options_.window_bins;
  if (bin < 0 || bin <= newest_bin_ - window) {
    ++stats_.late;
    return false;
  }
  // Find the flow's slot (linear probing).
  uint32_t i = static_cast<uint32_t>(HashKey(key)) & mask_;
  while (slots_[i].used && !(slots_[i].key == key)) i = (i + 1) & mask_;
  Slot& slot = slots_[i];
  if (!slot.used) {
    if (flows_ == options_.max_flows) {
      ++stats_.table_full;
      return false;
    }
    slot.used = true;
    slot.key = key;
    ring_index_[i] = flows_++;
  }
  uint64_t* ring = rings_.data() + static_cast<size_t>(ring_index_[i]) * options_.window_bins;
  if (bin > slot.last_bin) {
    // Zero the bins this flow skipped (they may hold data one window old).
    const int64_t from = std::max(slot.last_bin + 1, bin - window + 1);
    for (int64_t b = from; b <= bin; ++b) ring[b % window] = 0;
    slot.last_bin = bin;
  } else if (bin <= slot.last_bin - window) {
    ++stats_.late;
    return false;
  }
  ring[bin % window] += bytes;
  if (bin > newest_bin_) newest_bin_ = bin;
  return true;
}

std::vector<FlowSeries> FlowCounter::Snapshot() const {
  std::vector<FlowSeries> out;
  if (newest_bin_ < 0) return out;
  const int64_t window = options_.window_bins;
  const int64_t first = std::max<int64_t>(0, newest_bin_ - window + 1);
  for (uint32_t i = 0; i <= mask_; ++i) {
    const Slot& slot = slots_[i];
    if (!slot.used) continue;
    const uint64_t* ring =
        rings_.data() + static_cast<size_t>(ring_index_[i]) * options_.window_bins;
    FlowSeries series;
    series.key = slot.key;
    series.bin_us = options_.bin_us;
    series.t0_epoch_us = origin_us_ + first * options_.bin_us;
    series.bytes.assign(newest_bin_ - first + 1, 0.0);
    for (int64_t b = std::max(first, slot.last_bin - window + 1); b <= slot.last_bin; ++b) {
      series.bytes[b - first] = static_cast<double>(ring[b % window]);
    }
    out.push_back(std::move(series));
  }
  return out;
}

std::vector<FlowSeries> FlowCounter::Merge(const std::vector<std::vector<FlowSeries>>& parts) {
  struct KeyLess {
    bool operator()(const FlowKey& a, const FlowKey& b) const {
      if (a.src != b.src) return a.src < b.src;
      if (a.dst != b.dst) return a.dst < b.dst;
      if (a.transport != b.transport) return a.transport < b.transport;
      if (a.src_port != b.src_port) return a.src_port < b.src_port;
      if (a.dst_port != b.dst_port) return a.dst_port < b.dst_port;
      return a.dest_qp < b.dest_qp;
    }
  };
  bool any = false;
  int64_t begin = 0, end = 0;
  uint32_t bin_us = 0;
  for (const auto& part : parts) {
    for (const FlowSeries& s : part) {
      const int64_t s_end = s.t0_epoch_us + static_cast<int64_t>(s.bytes.size()) * s.bin_us;
      if (!any) {
        begin = s.t0_epoch_us;
        end = s_end;
        bin_us = s.bin_us;
        any = true;
      }
      begin = std::min(begin, s.t0_epoch_us);
      end = std::max(end, s_end);
    }
  }
  std::map<FlowKey, FlowSeries, KeyLess> merged;
  if (!any) return {};
  const size_t bins = static_cast<size_t>((end - begin) / bin_us);
  for (const auto& part : parts) {
    for (const FlowSeries& s : part) {
      auto [it, inserted] = merged.try_emplace(s.key);
      if (inserted) {
        it->second.key = s.key;
        it->second.t0_epoch_us = begin;
        it->second.bin_us = bin_us;
        it->second.bytes.assign(bins, 0.0);
      }
      const size_t shift = static_cast<size_t>((s.t0_epoch_us - begin) / bin_us);
      for (size_t b = 0; b < s.bytes.size(); ++b) it->second.bytes[shift + b] += s.bytes[b];
    }
  }
  std::vector<FlowSeries> out;
  for (auto& [key, series] : merged) out.push_back(std::move(series));
  return out;
}

}  // namespace phasor::probe
