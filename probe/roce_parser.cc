#include "probe/roce_parser.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace phasor::probe {
namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinQ = 0x88a8;
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint8_t kIpProtoTcp = 6;
constexpr size_t kEthHeader = 14;
constexpr size_t kVlanTag = 4;
constexpr size_t kIpv4MinHeader = 20;
constexpr size_t kIpv6Header = 40;
constexpr size_t kUdpHeader = 8;
constexpr size_t kBth = 12;

inline uint16_t Load16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t Load24(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 16) | (static_cast<uint32_t>(p[1]) << 8) | p[2];
}

void SetAddresses(FlowKey& key, const uint8_t* src, const uint8_t* dst, size_t addr_len) {
  if (addr_len == 4) {
    key.src[10] = key.src[11] = 0xff;
    key.dst[10] = key.dst[11] = 0xff;
    std::memcpy(key.src.data() + 12, src, 4);
    std::memcpy(key.dst.data() + 12, dst, 4);
  } else {
    std::memcpy(key.src.data(), src, 16);
    std::memcpy(key.dst.data(), dst, 16);
  }
}

// The 5-tuple and length of a TCP or UDP packet whose L4 header starts at
// `l4`; nothing when the capture ends before the ports.
void FillL4(RoceInfo& info, const uint8_t* data, size_t len, uint32_t wire_len, size_t l2_len,
            size_t ip_total, size_t l4, const uint8_t* src, const uint8_t* dst, size_t addr_len,
            Transport transport) {
  if (len < l4 + 4) return;
  info.l4_flow = true;
  info.key.transport = transport;
  info.key.src_port = Load16(data + l4);
  info.key.dst_port = Load16(data + l4 + 2);
  SetAddresses(info.key, src, dst, addr_len);
  const size_t claimed = l2_len + ip_total;
  info.snapped = len < claimed;
  info.frame_bytes = static_cast<uint32_t>(claimed > wire_len ? claimed : wire_len);
}

}  // namespace

const char* PacketKindName(PacketKind kind) {
  switch (kind) {
    case PacketKind::kRoce:
      return "roce";
    case PacketKind::kNotIp:
      return "not_ip";
    case PacketKind::kNotUdp:
      return "not_udp";
    case PacketKind::kNotRoce:
      return "not_roce";
    case PacketKind::kIpFragment:
      return "ip_fragment";
    case PacketKind::kTruncated:
      return "truncated";
    case PacketKind::kMalformed:
      return "malformed";
  }
  return "unknown";
}

OpcodeClass ClassOf(uint8_t opcode) {
  const int cls = opcode >> 5;
  return cls <= 5 ? static_cast<OpcodeClass>(cls) : OpcodeClass::kOther;
}

std::string IpString(const std::array<uint8_t, 16>& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(ip.data(), kMapped, 12) == 0) {
    inet_ntop(AF_INET, ip.data() + 12, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, ip.data(), buf, sizeof(buf));
  }
  return buf;
}

bool ParseIp(const std::string& text, std::array<uint8_t, 16>* out) {
  std::array<uint8_t, 16> ip{};
  uint8_t v4[4];
  if (inet_pton(AF_INET, text.c_str(), v4) == 1) {
    ip[10] = ip[11] = 0xff;
    std::memcpy(ip.data() + 12, v4, 4);
  } else if (inet_pton(AF_INET6, text.c_str(), ip.data()) != 1) {
    return false;
  }
  *out = ip;
  return true;
}

std::string FlowKeyString(const FlowKey& key) {
  if (key.transport != Transport::kRoce) {
    const bool v6 = IpString(key.src).find(':') != std::string::npos;
    auto end = [&](const std::array<uint8_t, 16>& ip, uint16_t port) {
      return (v6 ? "[" + IpString(ip) + "]" : IpString(ip)) + ":" + std::to_string(port);
    };
    return end(key.src, key.src_port) + ">" + end(key.dst, key.dst_port) +
           (key.transport == Transport::kTcp ? "/tcp" : "/udp");
  }
  char qp[16];
  std::snprintf(qp, sizeof(qp), "%06x", key.dest_qp & 0xffffffu);
  return IpString(key.src) + ">" + IpString(key.dst) + "/qp=0x" + qp;
}

RoceInfo ParseRoce(const uint8_t* data, size_t len, uint32_t wire_len) {
  RoceInfo info;
  if (len < kEthHeader) {
    info.kind = PacketKind::kTruncated;
    return info;
  }
  size_t off = 12;
  uint16_t ether_type = Load16(data + off);
  while ((ether_type == kEtherVlan || ether_type == kEtherQinQ) && info.vlan_tags < 2) {
    off += kVlanTag;
    if (len < off + 2) {
      info.kind = PacketKind::kTruncated;
      return info;
    }
    ether_type = Load16(data + off);
    ++info.vlan_tags;
  }
  off += 2;  // past the EtherType: start of the IP header
  const size_t l2_len = off;
  size_t ip_total = 0;  // the IP packet length its header claims
  const uint8_t* src = nullptr;
  const uint8_t* dst = nullptr;
  size_t addr_len = 0;
  if (ether_type == kEtherIpv4) {
    if (len < off + kIpv4MinHeader) {
      info.kind = PacketKind::kTruncated;
      return info;
    }
    const uint8_t* ip = data + off;
    const size_t ihl = static_cast<size_t>(ip[0] & 0x0f) * 4;
    if ((ip[0] >> 4) != 4 || ihl < kIpv4MinHeader) {
      info.kind = PacketKind::kMalformed;
      return info;
    }
    ip_total = Load16(ip + 2);
    if (ip[9] != kIpProtoUdp) {
      info.kind = PacketKind::kNotUdp;
      if (ip[9] == kIpProtoTcp && (Load16(ip + 6) & 0x3fff) == 0 && ip_total >= ihl + 20) {
        FillL4(info, data, len, wire_len, l2_len, ip_total, off + ihl, ip + 12, ip + 16, 4,
               Transport::kTcp);
      }
      return info;
    }
    if ((Load16(ip + 6) & 0x3fff) != 0) {  // MF flag or a fragment offset
      info.kind = PacketKind::kIpFragment;
      return info;
    }
    if (ip_total < ihl + kUdpHeader) {
      info.kind = PacketKind::kMalformed;
      return info;
    }
    src = ip + 12;
    dst = ip + 16;
    addr_len = 4;
    off += ihl;
  } else if (ether_type == kEtherIpv6) {
    if (len < off + kIpv6Header) {
      info.kind = PacketKind::kTruncated;
      return info;
    }
    const uint8_t* ip = data + off;
    if ((ip[0] >> 4) != 6) {
      info.kind = PacketKind::kMalformed;
      return info;
    }
    ip_total = kIpv6Header + Load16(ip + 4);
    if (ip[6] != kIpProtoUdp) {  // extension headers are not used by RoCEv2
      info.kind = PacketKind::kNotUdp;
      if (ip[6] == kIpProtoTcp && ip_total >= kIpv6Header + 20) {
        FillL4(info, data, len, wire_len, l2_len, ip_total, off + kIpv6Header, ip + 8, ip + 24, 16,
               Transport::kTcp);
      }
      return info;
    }
    if (ip_total < kIpv6Header + kUdpHeader) {
      info.kind = PacketKind::kMalformed;
      return info;
    }
    src = ip + 8;
    dst = ip + 24;
    addr_len = 16;
    off += kIpv6Header;
  } else {
    info.kind = PacketKind::kNotIp;
    return info;
  }
  const size_t ip_header_len = off - l2_len;
  if (len < off + kUdpHeader) {
    info.kind = PacketKind::kTruncated;
    return info;
  }
  const uint8_t* udp = data + off;
  if (Load16(udp + 2) != kRoceV2UdpPort) {
    info.kind = PacketKind::kNotRoce;
    if (ip_total >= ip_header_len + kUdpHeader) {
      FillL4(info, data, len, wire_len, l2_len, ip_total, off, src, dst, addr_len,
             Transport::kUdp);
    }
    return info;
  }
  const size_t udp_len = Load16(udp + 4);
  if (udp_len < kUdpHeader + kBth || udp_len > ip_total - ip_header_len) {
    info.kind = PacketKind::kMalformed;
    return info;
  }
  off += kUdpHeader;
  if (len < off + kBth) {
    info.kind = PacketKind::kTruncated;
    return info;
  }
  const uint8_t* bth = data + off;
  info.kind = PacketKind::kRoce;
  info.opcode = bth[0];
  info.key.dest_qp = Load24(bth + 5);
  info.psn = Load24(bth + 9);
  SetAddresses(info.key, src, dst, addr_len);
  const size_t claimed = l2_len + ip_total;
  info.snapped = len < claimed;
  info.frame_bytes = static_cast<uint32_t>(claimed > wire_len ? claimed : wire_len);
  return info;
}

}  // namespace phasor::probe
