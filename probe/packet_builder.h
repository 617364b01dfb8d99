// Builds Ethernet frames carrying RoCEv2 (or other) packets: for tests,
// fuzz seeds, benchmarks and synthetic pcap files. Not used on the capture
// path. Pure functions, thread-safe.
#ifndef PHASOR_PROBE_PACKET_BUILDER_H_
#define PHASOR_PROBE_PACKET_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace phasor::probe {

struct FrameSpec {
  std::string src_ip = "10.0.0.1";  // IPv4 or IPv6 (both must be the same family)
  std::string dst_ip = "10.0.0.2";
  std::vector<uint16_t> vlans;   // 802.1Q tags, outermost first
  uint8_t ip_proto = 17;         // UDP; 6 builds a TCP segment (20-byte header + payload)
  uint16_t udp_dst_port = 4791;  // destination port (UDP or TCP); 4791 is RoCEv2
  uint16_t src_port = 49152;     // source port (UDP or TCP)
  uint8_t opcode = 0x0a;         // RC RDMA WRITE ONLY
  uint32_t dest_qp = 0x11;
  uint32_t psn = 0;
  uint32_t payload_bytes = 1024;  // after the BTH (ICRC included), or the TCP header
};

// The complete frame (no FCS). Invalid addresses build an all-zero address.
std::vector<uint8_t> BuildFrame(const FrameSpec& spec);

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_PACKET_BUILDER_H_
