// Synthetic RoCEv2 captures for the probe's end-to-end tests.
#ifndef PHASOR_TESTS_PROBE_SYNTHETIC_PCAP_H_
#define PHASOR_TESTS_PROBE_SYNTHETIC_PCAP_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "probe/packet_builder.h"
#include "probe/pcap_file.h"

namespace phasor::probe::testing {

inline constexpr int64_t kStartUs = 1'700'000'000'000'000;

// Two jobs over `duration_ms` starting at kStartUs:
//  job-a: 10.0.0.1 -> 10.0.0.2 qp 0x11, period 50 ms, Up 40% (from t = 0),
//  job-b: fd00::1 -> fd00::2 qp 0x22 (VLAN 7), period 80 ms, Up 25% (from t = 10 ms),
// each sending `per_ms` 1078-byte frames per millisecond while Up, plus per
// millisecond one DNS packet and every 10 ms one truncated RoCE frame.
inline absl::Status WriteTwoJobPcap(const std::string& path, int duration_ms, int per_ms = 4) {
  auto w = PcapWriter::Create(path);
  if (!w.ok()) return w.status();
  FrameSpec a;
  a.dest_qp = 0x11;
  FrameSpec b;
  b.src_ip = "fd00::1";
  b.dst_ip = "fd00::2";
  b.dest_qp = 0x22;
  b.vlans = {7};
  b.payload_bytes = 1024 - 24;  // same frame size as job-a: 18 + 40 + 8 + 12 + 1000 = 1078
  FrameSpec dns;
  dns.udp_dst_port = 53;
  dns.payload_bytes = 40;
  const auto fa = BuildFrame(a), fb = BuildFrame(b), fd = BuildFrame(dns);
  for (int ms = 0; ms < duration_ms; ++ms) {
    const int64_t t = kStartUs + int64_t{ms} * 1000;
    const bool a_up = (ms % 50) < 20;
    const bool b_up = ((ms - 10 + 80) % 80) < 20;
    for (int k = 0; k < per_ms; ++k) {
      const int64_t tk = t + k * (1000 / per_ms);
      if (a_up) {
        if (auto s = (*w)->Write(tk, fa); !s.ok()) return s;
      }
      if (b_up) {
        if (auto s = (*w)->Write(tk + 1, fb); !s.ok()) return s;
      }
    }
    if (auto s = (*w)->Write(t + 500, fd); !s.ok()) return s;
    if (ms % 10 == 0) {
      if (auto s = (*w)->Write(t + 700, std::span(fa.data(), 40)); !s.ok()) return s;
    }
  }
  return (*w)->Close();
}

// A job over TCP (NCCL's socket transport, gloo) beside a RoCE job, over
// `duration_ms` from kStartUs:
//  job-t: 10.0.1.1:40000 -> 10.0.1.2:29500 TCP, period 60 ms, Up 25%,
//  job-a: as in WriteTwoJobPcap (RoCE, 50 ms, Up 40%),
// each sending 4 frames of 1078 bytes per millisecond while Up, plus one DNS
// packet (UDP 53) per millisecond.
inline absl::Status WriteTcpJobPcap(const std::string& path, int duration_ms) {
  auto w = PcapWriter::Create(path);
  if (!w.ok()) return w.status();
  FrameSpec a;
  FrameSpec t;
  t.src_ip = "10.0.1.1";
  t.dst_ip = "10.0.1.2";
  t.ip_proto = 6;
  t.src_port = 40000;
  t.udp_dst_port = 29500;
  t.payload_bytes = 1078 - 54;
  FrameSpec dns;
  dns.udp_dst_port = 53;
  dns.payload_bytes = 40;
  const auto fa = BuildFrame(a), ft = BuildFrame(t), fd = BuildFrame(dns);
  for (int ms = 0; ms < duration_ms; ++ms) {
    const int64_t at = kStartUs + int64_t{ms} * 1000;
    for (int k = 0; k < 4; ++k) {
      if (ms % 50 < 20) {
        if (auto s = (*w)->Write(at + k * 250, fa); !s.ok()) return s;
      }
      if (ms % 60 < 15) {
        if (auto s = (*w)->Write(at + k * 250 + 1, ft); !s.ok()) return s;
      }
    }
    if (auto s = (*w)->Write(at + 500, fd); !s.ok()) return s;
  }
  return (*w)->Close();
}

}  // namespace phasor::probe::testing

#endif  // PHASOR_TESTS_PROBE_SYNTHETIC_PCAP_H_
