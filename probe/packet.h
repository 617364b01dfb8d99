// Packets as the probe's fast path sees them, and the sink interface capture
// sources deliver them to.
//
// A PacketView borrows its bytes: they stay valid only for the duration of
// the PacketSink::OnBurst call that receives it.
#ifndef PHASOR_PROBE_PACKET_H_
#define PHASOR_PROBE_PACKET_H_

#include <cstdint>
#include <span>

namespace phasor::probe {

struct PacketView {
  const uint8_t* data = nullptr;  // first captured byte (the Ethernet header)
  uint32_t captured_len = 0;      // bytes available at `data`
  uint32_t wire_len = 0;          // length of the frame on the wire if known, else captured_len
  int64_t timestamp_us = 0;       // receive time, microseconds since the Unix epoch
};

// Receives packets in bursts. A sink is owned by one worker (core) and is
// never called concurrently with itself; different sinks may run in parallel.
class PacketSink {
 public:
  virtual ~PacketSink() = default;
  virtual void OnBurst(std::span<const PacketView> burst) = 0;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_PACKET_H_
