#include "probe/roce_parser.h"

#include <gtest/gtest.h>

#include "probe/packet_builder.h"

namespace phasor::probe {
namespace roce_parser_test {
namespace {

RoceInfo Parse(const std::vector<uint8_t>& f) {
  return ParseRoce(f.data(), f.size(), static_cast<uint32_t>(f.size()));
}

TEST(RoceParserTest, Ipv4RcWrite) {
  FrameSpec spec;
  spec.dest_qp = 0xabcdef;
  spec.psn = 0x123456;
  const auto f = BuildFrame(spec);
  ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + 1024);
  const RoceInfo info = Parse(f);
  EXPECT_EQ(info.kind, PacketKind::kRoce);
  EXPECT_EQ(info.opcode, 0x0a);
  EXPECT_EQ(info.key.dest_qp, 0xabcdefu);
  EXPECT_EQ(info.psn, 0x123456u);
  EXPECT_EQ(info.frame_bytes, f.size());
  EXPECT_FALSE(info.snapped);
  EXPECT_EQ(FlowKeyString(info.key), "10.0.0.1>10.0.0.2/qp=0xabcdef");
}

TEST(RoceParserTest, EveryOpcodeClass) {
  const std::vector<std::pair<uint8_t, OpcodeClass>> cases = {
      {0x04, OpcodeClass::kRc},   {0x0a, OpcodeClass::kRc},  {0x11, OpcodeClass::kRc},
      {0x24, OpcodeClass::kUc},   {0x2a, OpcodeClass::kUc},  {0x44, OpcodeClass::kRd},
      {0x64, OpcodeClass::kUd},   {0x81, OpcodeClass::kCnp}, {0xa4, OpcodeClass::kXrc},
      {0xc0, OpcodeClass::kOther}};
  for (const auto& [opcode, cls] : cases) {
    FrameSpec spec;
    spec.opcode = opcode;
    const RoceInfo info = Parse(BuildFrame(spec));
    ASSERT_EQ(info.kind, PacketKind::kRoce) << int(opcode);
    EXPECT_EQ(info.opcode, opcode);
    EXPECT_EQ(ClassOf(info.opcode), cls) << int(opcode);
  }
}

TEST(RoceParserTest, Ipv6) {
  FrameSpec spec;
  spec.src_ip = "fd00::1";
  spec.dst_ip = "fd00::2:3";
  spec.dest_qp = 7;
  const auto f = BuildFrame(spec);
  const RoceInfo info = Parse(f);
  ASSERT_EQ(info.kind, PacketKind::kRoce);
  EXPECT_EQ(info.frame_bytes, 14u + 40 + 8 + 12 + 1024);
  EXPECT_EQ(FlowKeyString(info.key), "fd00::1>fd00::2:3/qp=0x000007");
}

TEST(RoceParserTest, OneAndTwoVlanTags) {
  FrameSpec spec;
  spec.vlans = {100};
  RoceInfo info = Parse(BuildFrame(spec));
  ASSERT_EQ(info.kind, PacketKind::kRoce);
  EXPECT_EQ(info.vlan_tags, 1);
  EXPECT_EQ(info.frame_bytes, 18u + 20 + 8 + 12 + 1024);
  spec.vlans = {100, 200};
  info = Parse(BuildFrame(spec));
  ASSERT_EQ(info.kind, PacketKind::kRoce);
  EXPECT_EQ(info.vlan_tags, 2);
  EXPECT_EQ(FlowKeyString(info.key), "10.0.0.1>10.0.0.2/qp=0x000011");
}

TEST(RoceParserTest, NonRoceUdpAndNonUdp) {
  FrameSpec spec;
  spec.udp_dst_port = 4789;  // VXLAN
  EXPECT_EQ(Parse(BuildFrame(spec)).kind, PacketKind::kNotRoce);
  spec.udp_dst_port = 4791;
  spec.ip_proto = 6;  // TCP
  EXPECT_EQ(Parse(BuildFrame(spec)).kind, PacketKind::kNotUdp);
  spec.src_ip = "fd00::1";
  spec.dst_ip = "fd00::2";
  EXPECT_EQ(Parse(BuildFrame(spec)).kind, PacketKind::kNotUdp);
  auto arp = BuildFrame(FrameSpec{});
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(Parse(arp).kind, PacketKind::kNotIp);
}

TEST(RoceParserTest, TruncatedAtEveryHeader) {
  FrameSpec spec;
  spec.vlans = {5};
  const auto f = BuildFrame(spec);
  const size_t bth_end = 18 + 20 + 8 + 12;
  for (size_t len = 0; len < bth_end; ++len) {
    EXPECT_EQ(ParseRoce(f.data(), len, static_cast<uint32_t>(len)).kind, PacketKind::kTruncated)
        << len;
  }
  // Cut after the BTH (a mirror port's snap length): still counted, at full size.
  const RoceInfo info = ParseRoce(f.data(), bth_end, static_cast<uint32_t>(bth_end));
  EXPECT_EQ(info.kind, PacketKind::kRoce);
  EXPECT_TRUE(info.snapped);
  EXPECT_EQ(info.frame_bytes, f.size());
  spec.src_ip = "fd00::1";
  spec.dst_ip = "fd00::2";
  const auto f6 = BuildFrame(spec);
  EXPECT_EQ(ParseRoce(f6.data(), 18 + 39, 57).kind, PacketKind::kTruncated);
}

TEST(RoceParserTest, HeadersThatContradictEachOther) {
  auto f = BuildFrame(FrameSpec{});
  auto bad = f;
  bad[14] = 0x44;  // IHL 4 words < 5
  EXPECT_EQ(Parse(bad).kind, PacketKind::kMalformed);
  bad = f;
  bad[14 + 2] = 0;
  bad[14 + 3] = 24;  // IP total length 24 < IP + UDP headers
  EXPECT_EQ(Parse(bad).kind, PacketKind::kMalformed);
  bad = f;
  bad[14 + 20 + 4] = 0;
  bad[14 + 20 + 5] = 10;  // UDP length 10 < UDP + BTH
  EXPECT_EQ(Parse(bad).kind, PacketKind::kMalformed);
  bad = f;
  bad[14 + 20 + 4] = 0xff;  // UDP length beyond the IP payload
  EXPECT_EQ(Parse(bad).kind, PacketKind::kMalformed);
  bad = f;
  bad[14 + 6] = 0x20;  // more fragments
  EXPECT_EQ(Parse(bad).kind, PacketKind::kIpFragment);
}

TEST(RoceParserTest, WireLengthWinsWhenLarger) {
  FrameSpec spec;
  spec.payload_bytes = 0;
  const auto f = BuildFrame(spec);  // 54 bytes; Ethernet pads to 60
  const RoceInfo info = ParseRoce(f.data(), f.size(), 60);
  EXPECT_EQ(info.frame_bytes, 60u);
}

TEST(RoceParserTest, IpText) {
  std::array<uint8_t, 16> ip;
  ASSERT_TRUE(ParseIp("192.168.1.7", &ip));
  EXPECT_EQ(IpString(ip), "192.168.1.7");
  ASSERT_TRUE(ParseIp("fe80::1", &ip));
  EXPECT_EQ(IpString(ip), "fe80::1");
  EXPECT_FALSE(ParseIp("10.0.0", &ip));
}

TEST(RoceParserTest, TcpAndUdpFlowsByFiveTuple) {
  FrameSpec tcp;
  tcp.ip_proto = 6;
  tcp.src_port = 40000;
  tcp.udp_dst_port = 29500;
  tcp.payload_bytes = 1000;
  const auto f = BuildFrame(tcp);
  ASSERT_EQ(f.size(), 14u + 20 + 20 + 1000);
  RoceInfo info = Parse(f);
  EXPECT_EQ(info.kind, PacketKind::kNotUdp);  // the kinds stay RoCE-centred
  ASSERT_TRUE(info.l4_flow);
  EXPECT_EQ(info.key.transport, Transport::kTcp);
  EXPECT_EQ(info.key.src_port, 40000);
  EXPECT_EQ(info.key.dst_port, 29500);
  EXPECT_EQ(info.frame_bytes, f.size());
  EXPECT_FALSE(info.snapped);
  EXPECT_EQ(FlowKeyString(info.key), "10.0.0.1:40000>10.0.0.2:29500/tcp");

  FrameSpec tcp6 = tcp;
  tcp6.src_ip = "fd00::1";
  tcp6.dst_ip = "fd00::2";
  tcp6.vlans = {5};
  info = Parse(BuildFrame(tcp6));
  ASSERT_TRUE(info.l4_flow);
  EXPECT_EQ(FlowKeyString(info.key), "[fd00::1]:40000>[fd00::2]:29500/tcp");

  FrameSpec udp;
  udp.udp_dst_port = 53;
  udp.src_port = 5353;
  udp.payload_bytes = 40;
  const auto fu = BuildFrame(udp);
  info = Parse(fu);
  EXPECT_EQ(info.kind, PacketKind::kNotRoce);
  ASSERT_TRUE(info.l4_flow);
  EXPECT_EQ(FlowKeyString(info.key), "10.0.0.1:5353>10.0.0.2:53/udp");
  EXPECT_EQ(info.frame_bytes, fu.size());

  // A mirror port's snap length keeps the real size.
  info = ParseRoce(f.data(), 64, 64);
  ASSERT_TRUE(info.l4_flow);
  EXPECT_TRUE(info.snapped);
  EXPECT_EQ(info.frame_bytes, f.size());
  // Cut before the ports, or a fragment: not a flow.
  EXPECT_FALSE(ParseRoce(f.data(), 14 + 20 + 3, 14 + 20 + 3).l4_flow);
  auto frag = f;
  frag[14 + 6] = 0x20;  // MF
  EXPECT_FALSE(Parse(frag).l4_flow);
  // RoCE packets are not l4 flows; their key has no ports.
  info = Parse(BuildFrame(FrameSpec{}));
  EXPECT_FALSE(info.l4_flow);
  EXPECT_EQ(info.key.transport, Transport::kRoce);
  EXPECT_EQ(info.key.src_port, 0);
}

}  // namespace
}  // namespace roce_parser_test
}  // namespace phasor::probe
