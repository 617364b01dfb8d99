#include "probe/flow_counter.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "probe/packet_builder.h"

namespace phasor::probe {
namespace flow_counter_test {
namespace {

struct Packets {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<PacketView> views;
  void Add(const FrameSpec& spec, int64_t ts, size_t cut = 0) {
    frames.push_back(BuildFrame(spec));
    const auto& f = frames.back();
    views.push_back(PacketView{nullptr, static_cast<uint32_t>(cut ? cut : f.size()),
                               static_cast<uint32_t>(cut ? cut : f.size()), ts});
  }
  std::span<const PacketView> Views() {
    for (size_t i = 0; i < views.size(); ++i) views[i].data = frames[i].data();
    return views;
  }
};

TEST(FlowCounterTest, BinsBytesPerFlow) {
  FlowCounterOptions opt;
  opt.bin_us = 1000;
  opt.window_bins = 16;
  auto c = FlowCounter::Create(opt);
  ASSERT_TRUE(c.ok());
  FrameSpec a, b;
  b.dest_qp = 99;
  Packets p;
  const int64_t t = 1700000000000500;  // origin rounds down to ...000000
  p.Add(a, t);
  p.Add(a, t + 100);
  p.Add(b, t + 2000);
  p.Add(a, t + 3000);
  FrameSpec udp = a;
  udp.udp_dst_port = 53;
  p.Add(udp, t + 3000);
  p.Add(a, t + 3000, 30);  // truncated
  (*c)->OnBurst(p.Views());
  const ProbeStats& s = (*c)->stats();
  EXPECT_EQ(s.packets, 6u);
  EXPECT_EQ(s.by_kind[static_cast<int>(PacketKind::kRoce)], 4u);
  EXPECT_EQ(s.by_kind[static_cast<int>(PacketKind::kNotRoce)], 1u);
  EXPECT_EQ(s.by_kind[static_cast<int>(PacketKind::kTruncated)], 1u);
  EXPECT_EQ(s.roce_bytes, 4u * 1078);
  auto snap = (*c)->Snapshot();
  ASSERT_EQ(snap.size(), 2u);
  const FlowSeries& fa = snap[0].key.dest_qp == 0x11 ? snap[0] : snap[1];
  const FlowSeries& fb = snap[0].key.dest_qp == 0x11 ? snap[1] : snap[0];
  EXPECT_EQ(fa.t0_epoch_us, 1700000000000000);
  EXPECT_EQ(fa.bytes, (std::vector<double>{2156, 0, 0, 1078}));
  EXPECT_EQ(fb.bytes, (std::vector<double>{0, 0, 1078, 0}));
}

TEST(FlowCounterTest, RingKeepsNewestWindowAndCountsLatePackets) {
  FlowCounterOptions opt;
  opt.bin_us = 10;
  opt.window_bins = 4;
  auto c = FlowCounter::Create(opt);
  ASSERT_TRUE(c.ok());
  Packets p;
  for (int i = 0; i < 10; ++i) p.Add(FrameSpec{}, i * 10);  // bins 0..9
  p.Add(FrameSpec{}, 20);                                   // bin 2 < newest 9 - 4 + 1: late
  p.Add(FrameSpec{}, 90);
  (*c)->OnBurst(p.Views());
  EXPECT_EQ((*c)->stats().late, 1u);
  auto snap = (*c)->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].t0_epoch_us, 60);
  EXPECT_EQ(snap[0].bytes, (std::vector<double>{1078, 1078, 1078, 2156}));
}

TEST(FlowCounterTest, FullTableCountsAndDrops) {
  FlowCounterOptions opt;
  opt.max_flows = 2;
  auto c = FlowCounter::Create(opt);
  ASSERT_TRUE(c.ok());
  Packets p;
  for (uint32_t qp = 1; qp <= 3; ++qp) {
    FrameSpec s;
    s.dest_qp = qp;
    p.Add(s, 0);
  }
  (*c)->OnBurst(p.Views());
  EXPECT_EQ((*c)->stats().table_full, 1u);
  EXPECT_EQ((*c)->Snapshot().size(), 2u);
}

TEST(FlowCounterTest, MergeAlignsWorkers) {
  FlowCounterOptions opt;
  opt.bin_us = 100;
  auto c1 = FlowCounter::Create(opt);
  auto c2 = FlowCounter::Create(opt);
  Packets p1, p2;
  p1.Add(FrameSpec{}, 1000);
  p2.Add(FrameSpec{}, 1250);
  (*c1)->OnBurst(p1.Views());
  (*c2)->OnBurst(p2.Views());
  auto merged = FlowCounter::Merge({(*c1)->Snapshot(), (*c2)->Snapshot()});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].t0_epoch_us, 1000);
  EXPECT_EQ(merged[0].bytes, (std::vector<double>{1078, 0, 1078}));
}

TEST(FlowCounterTest, BadOptions) {
  FlowCounterOptions opt;
  opt.bin_us = 0;
  EXPECT_EQ(FlowCounter::Create(opt).status().message(), "bin_us: must be positive");
  opt = {};
  opt.max_flows = 0;
  EXPECT_EQ(FlowCounter::Create(opt).status().message(), "max_flows: must be positive");
  opt = {};
  opt.window_bins = 1 << 20;
  opt.max_flows = 1 << 10;
  EXPECT_EQ(FlowCounter::Create(opt).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FlowCounterTest, TcpAndUdpFlowsBesideRoceWhenAsked) {
  FrameSpec roce, tcp, udp;
  tcp.ip_proto = 6;
  tcp.src_port = 40000;
  tcp.udp_dst_port = 29500;
  tcp.payload_bytes = 946;  // 14 + 20 + 20 + 946 = 1000-byte frames
  udp.udp_dst_port = 53;
  udp.payload_bytes = 40;
  for (bool tcp_udp : {false, true}) {
    FlowCounterOptions opt;
    opt.bin_us = 1000;
    opt.window_bins = 8;
    opt.tcp_udp = tcp_udp;
    auto c = FlowCounter::Create(opt);
    ASSERT_TRUE(c.ok());
    Packets p;
    const int64_t t = 1700000000000000;
    p.Add(roce, t);
    p.Add(tcp, t + 10);
    p.Add(tcp, t + 1010);
    p.Add(udp, t + 2000);
    (*c)->OnBurst(p.Views());
    const ProbeStats& s = (*c)->stats();
    EXPECT_EQ(s.by_kind[static_cast<int>(PacketKind::kNotUdp)], 2u);  // kinds unchanged
    EXPECT_EQ(s.roce_bytes, 1078u);
    auto snap = (*c)->Snapshot();
    if (!tcp_udp) {
      EXPECT_EQ(s.tcp_udp_bytes, 0u);
      ASSERT_EQ(snap.size(), 1u);
      continue;
    }
    EXPECT_EQ(s.tcp_udp_bytes, 2000u + 14 + 20 + 8 + 12 + 40);
    ASSERT_EQ(snap.size(), 3u);
    std::map<std::string, std::vector<double>> by;
    for (const FlowSeries& f : snap) by[FlowKeyString(f.key)] = f.bytes;
    EXPECT_EQ(by.at("10.0.0.1:40000>10.0.0.2:29500/tcp"), (std::vector<double>{1000, 1000, 0}));
    EXPECT_EQ(by.at("10.0.0.1:49152>10.0.0.2:53/udp"), (std::vector<double>{0, 0, 94}));
    EXPECT_EQ(by.at("10.0.0.1>10.0.0.2/qp=0x000011"), (std::vector<double>{1078, 0, 0}));
    // Merge keeps the flows apart.
    EXPECT_EQ(FlowCounter::Merge({snap, snap}).size(), 3u);
  }
}

}  // namespace
}  // namespace flow_counter_test
}  // namespace phasor::probe
