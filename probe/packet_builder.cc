#include "probe/packet_builder.h"

#include "probe/roce_parser.h"

namespace phasor::probe {
namespace {

void Put16(std::vector<uint8_t>& f, size_t at, uint16_t v) {
  f[at] = static_cast<uint8_t>(v >> 8);
  f[at + 1] = static_cast<uint8_t>(v);
}
void Put24(std::vector<uint8_t>& f, size_t at, uint32_t v) {
  f[at] = static_cast<uint8_t>(v >> 16);
  f[at + 1] = static_cast<uint8_t>(v >> 8);
  f[at + 2] = static_cast<uint8_t>(v);
}

}  // namespace

std::vector<uint8_t> BuildFrame(const FrameSpec& spec) {
  std::array<uint8_t, 16> src{}, dst{};
  ParseIp(spec.src_ip, &src);
  ParseIp(spec.dst_ip, &dst);
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  const bool v4 = std::equal(kMapped, kMapped + 12, src.begin());
  const size_t l2 = 14 + 4 * spec.vlans.size();
  const size_t ip_hdr = v4 ? 20 : 40;
  const bool tcp = spec.ip_proto == 6;
  const size_t udp_len = tcp ? 20 + spec.payload_bytes : 8 + 12 + spec.payload_bytes;
  std::vector<uint8_t> f(l2 + ip_hdr + udp_len, 0);
  for (int i = 0; i < 6; ++i) {
    f[i] = static_cast<uint8_t>(0x02 + i);      // destination MAC
    f[6 + i] = static_cast<uint8_t>(0x12 + i);  // source MAC
  }
  size_t off = 12;
  for (uint16_t vlan : spec.vlans) {
    Put16(f, off, 0x8100);
    Put16(f, off + 2, vlan & 0x0fff);
    off += 4;
  }
  Put16(f, off, v4 ? 0x0800 : 0x86dd);
  off += 2;
  if (v4) {
    f[off] = 0x45;
    Put16(f, off + 2, static_cast<uint16_t>(ip_hdr + udp_len));
    Put16(f, off + 6, 0x4000);  // don't fragment
    f[off + 8] = 64;
    f[off + 9] = spec.ip_proto;
    std::copy(src.begin() + 12, src.end(), f.begin() + off + 12);
    std::copy(dst.begin() + 12, dst.end(), f.begin() + off + 16);
  } else {
    f[off] = 0x60;
    Put16(f, off + 4, static_cast<uint16_t>(udp_len));
    f[off + 6] = spec.ip_proto;
    f[off + 7] = 64;
    std::copy(src.begin(), src.end(), f.begin() + off + 8);
    std::copy(dst.begin(), dst.end(), f.begin() + off + 24);
  }
  off += ip_hdr;
  if (tcp) {
    Put16(f, off, spec.src_port);
    Put16(f, off + 2, spec.udp_dst_port);
    f[off + 12] = 0x50;  // data offset: 5 words
    f[off + 13] = 0x18;  // PSH, ACK
    return f;
  }
  Put16(f, off, spec.src_port);
  Put16(f, off + 2, spec.udp_dst_port);
  Put16(f, off + 4, static_cast<uint16_t>(udp_len));
  off += 8;
  f[off] = spec.opcode;
  f[off + 1] = 0x40;          // migration state
  Put16(f, off + 2, 0xffff);  // default partition key
  Put24(f, off + 5, spec.dest_qp);
  Put24(f, off + 9, spec.psn);
  return f;
}

}  // namespace phasor::probe
