// RoCEv2 packet parser: Ethernet (up to two 802.1Q/802.1ad tags), IPv4 or
// IPv6, UDP destination port 4791, InfiniBand Base Transport Header.
//
// ParseRoce() is a pure function on borrowed bytes: no allocation, no
// logging, thread-safe. Every packet gets exactly one PacketKind; only kRoce
// packets carry a flow key.
//
// Lengths: a RoCE packet's `frame_bytes` is the Ethernet frame length its own
// headers claim (L2 header + IP total length), never less than the wire
// length the capture reports. A capture that cut the packet after the BTH
// (a mirror port's snap length) still counts the packet's real size and sets
// `snapped`. A packet cut before the end of its BTH is kTruncated; headers
// that contradict each other (IPv4 IHL < 5, IP length shorter than the
// headers inside it, UDP length outside the IP payload) are kMalformed.
#ifndef PHASOR_PROBE_ROCE_PARSER_H_
#define PHASOR_PROBE_ROCE_PARSER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace phasor::probe {

inline constexpr uint16_t kRoceV2UdpPort = 4791;

enum class PacketKind : uint8_t {
  kRoce = 0,    // RoCEv2 packet with a complete BTH
  kNotIp,       // EtherType other than IPv4/IPv6 (ARP, LLDP, ...)
  kNotUdp,      // IP packet whose protocol / next header is not UDP
  kNotRoce,     // UDP packet to a port other than 4791
  kIpFragment,  // IPv4 fragment (RoCE is never fragmented)
  kTruncated,   // captured bytes end before the headers do
  kMalformed,   // header fields contradict each other
};
inline constexpr int kPacketKinds = 7;

// Name of a kind for counters and logs: "roce", "not_ip", ...
const char* PacketKindName(PacketKind kind);

// The BTH opcode's upper three bits: the transport class.
enum class OpcodeClass : uint8_t {
  kRc = 0,    // 0x00-0x1f reliable connection
  kUc = 1,    // 0x20-0x3f unreliable connection
  kRd = 2,    // 0x40-0x5f reliable datagram
  kUd = 3,    // 0x60-0x7f unreliable datagram
  kCnp = 4,   // 0x80-0x9f (0x81: RoCEv2 congestion notification packet)
  kXrc = 5,   // 0xa0-0xbf extended reliable connection
  kOther = 6  // 0xc0-0xff manufacturer specific
};
OpcodeClass ClassOf(uint8_t opcode);

// What carries a flow: RoCEv2 (keyed by queue pair) or plain TCP/UDP (keyed
// by ports). The values are the IP protocol numbers, RoCE aside.
enum class Transport : uint8_t { kRoce = 0, kTcp = 6, kUdp = 17 };

// A flow: IP addresses as 16 bytes (IPv4 as the IPv4-mapped IPv6 address
// ::ffff:a.b.c.d) and the 24-bit destination queue pair (RoCE), or the
// ports (TCP, UDP: the 5-tuple).
struct FlowKey {
  std::array<uint8_t, 16> src{};
  std::array<uint8_t, 16> dst{};
  uint32_t dest_qp = 0;  // RoCE only
  Transport transport = Transport::kRoce;
  uint16_t src_port = 0;  // TCP, UDP only
  uint16_t dst_port = 0;
  bool operator==(const FlowKey&) const = default;
};

// "10.0.0.1>10.0.0.2/qp=0x000011" (IPv6 in RFC 5952 form); TCP and UDP
// "10.0.0.1:40000>10.0.0.2:29500/tcp", "[fd00::1]:5000>[fd00::2]:6000/udp".
std::string FlowKeyString(const FlowKey& key);
// An IP address in FlowKey form as text.
std::string IpString(const std::array<uint8_t, 16>& ip);
// Parses "10.0.0.1" or an IPv6 address into FlowKey form; false when not an address.
bool ParseIp(const std::string& text, std::array<uint8_t, 16>* out);

struct RoceInfo {
  PacketKind kind = PacketKind::kMalformed;
  FlowKey key;               // set for kRoce
  uint8_t opcode = 0;        // BTH opcode
  uint32_t psn = 0;          // 24-bit packet sequence number
  uint32_t frame_bytes = 0;  // frame length (see the header comment)
  bool snapped = false;      // the capture holds fewer bytes than the frame
  uint8_t vlan_tags = 0;
  // A complete, unfragmented TCP or UDP (not RoCE) packet: key holds its
  // 5-tuple and frame_bytes / snapped are set as for RoCE.
  bool l4_flow = false;
};

// Parses one frame. `wire_len` is the frame length the capture reports
// (pass captured_len when unknown).
RoceInfo ParseRoce(const uint8_t* data, size_t captured_len, uint32_t wire_len);

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_ROCE_PARSER_H_
