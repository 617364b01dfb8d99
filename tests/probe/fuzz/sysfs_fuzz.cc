// libFuzzer target: the probe's sysfs readers on arbitrary file contents,
// end to end through Measure() (resampling and profile extraction).
//
// Input: byte 0 picks the reader, the rest is records separated by 0x00,
// fields inside a record by 0x01.
//   - even: RDMA snapshot series (rdma_counters.h). Record = snapshot
//     directory name, port_xmit_data, port_rcv_data,
//     hw_counters/np_ecn_marked_roce_packets; each becomes
//     <dir>/<name>/mlx5_0/ports/1/... and the series is read with
//     RdmaSysfsSource as `phasor profile --rdma-sysfs DIR` does.
//   - odd: Linux interface counters (netdev_counters.h) polled live with an
//     injected clock. Record = read delay in microseconds (decimal),
//     tx_bytes, rx_bytes: before read i the files take record i's contents
//     and the clock runs on by the delay, so lateness and bad values reach
//     the poller as on a loaded host.
// Checked: OK or a client error (InvalidArgument, NotFound, Unavailable),
// never a crash; a periodic result has a positive period, finite
// non-negative rates and a confidence in [0, 1].
#include <stdlib.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "probe/measure.h"
#include "probe/netdev_counters.h"
#include "probe/rdma_counters.h"

namespace {

namespace fs = std::filesystem;
using phasor::probe::Measurement;

constexpr size_t kMaxRecords = 64;

std::vector<std::vector<std::string>> Records(const uint8_t* data, size_t size) {
  std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
  for (size_t i = 0; i < size && records.size() <= kMaxRecords; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0') {
      records.emplace_back(1);
    } else if (c == '\1') {
      records.back().emplace_back();
    } else {
      records.back().back() += c;
    }
  }
  if (records.size() > kMaxRecords) records.resize(kMaxRecords);
  return records;
}

std::string Field(const std::vector<std::string>& record, size_t i) {
  return i < record.size() ? record[i] : std::string();
}

void Write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

const fs::path& Root() {
  static const fs::path* root = [] {
    char tmpl[] = "/dev/shm/phasor-sysfs-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    std::atexit([] { std::error_code ec; fs::remove_all(Root(), ec); });
    return new fs::path(tmpl);
  }();
  return *root;
}

void CheckStatus(const absl::Status& s) {
  if (s.ok() || absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsUnavailable(s)) return;
  std::fprintf(stderr, "sysfs_fuzz: unexpected status %s\n", s.ToString().c_str());
  std::abort();
}

void CheckMeasurement(const Measurement& m) {
  for (const auto& p : m.profiles) {
    const auto& e = p.extracted;
    if (!e.periodic) continue;
    if (e.period_us == 0 || e.bin_us == 0 || !(e.confidence >= 0 && e.confidence <= 1) || e.gbps.empty()) {
      std::fprintf(stderr, "sysfs_fuzz: %s: bad periodic profile\n", p.subject.c_str());
      std::abort();
    }
    for (double g : e.gbps) {
      if (!std::isfinite(g) || g < 0) std::abort();
    }
  }
}

void RdmaSnapshots(const std::vector<std::vector<std::string>>& records) {
  const fs::path dir = Root() / "rdma";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (size_t i = 0; i < records.size(); ++i) {
    std::string name = Field(records[i], 0).substr(0, 40);
    // Names the filesystem cannot take stay fuzzed in content, not in path.
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
      name = std::to_string(i);
    }
    const fs::path port = dir / name / "mlx5_0" / "ports" / "1";
    std::error_code ec;
    fs::create_directories(port / "counters", ec);
    fs::create_directories(port / "hw_counters", ec);
    if (ec) continue;
    Write(port / "counters" / "port_xmit_data", Field(records[i], 1));
    Write(port / "counters" / "port_rcv_data", Field(records[i], 2));
    if (records[i].size() > 3) Write(port / "hw_counters" / "np_ecn_marked_roce_packets", Field(records[i], 3));
  }
  phasor::probe::RdmaSourceOptions options;
  options.path = dir.string();
  phasor::probe::RdmaSysfsSource source(options);
  absl::StatusOr<Measurement> m = phasor::probe::Measure(source, {});
  CheckStatus(m.status());
  if (m.ok()) CheckMeasurement(*m);
}

void NetdevPoll(const std::vector<std::vector<std::string>>& records) {
  const fs::path stats = Root() / "net" / "eth0" / "statistics";
  fs::create_directories(stats);
  Write(stats / "tx_bytes", "0\n");
  Write(stats / "rx_bytes", "0\n");
  phasor::probe::NetdevOptions options;
  options.sysfs_root = (Root() / "net").string();
  options.interfaces = {"eth0"};
  options.interval_us = 10000;
  options.duration_us = static_cast<int64_t>(records.size()) * options.interval_us;
  int64_t now = 1'700'000'000'000'000;
  size_t next = 0;
  options.clock.now_us = [&] { return now; };
  options.clock.sleep_until_us = [&](int64_t t) {
    if (t > now) now = t;
    if (next < records.size()) {
      const std::vector<std::string>& r = records[next++];
      Write(stats / "tx_bytes", Field(r, 1));
      Write(stats / "rx_bytes", Field(r, 2));
      uint32_t delay = 0;
      if (absl::SimpleAtoi(Field(r, 0), &delay)) now += delay % 1'000'000;
    }
  };
  absl::StatusOr<std::unique_ptr<phasor::probe::NetdevSource>> source = phasor::probe::NetdevSource::Create(options);
  CheckStatus(source.status());
  if (!source.ok()) return;
  absl::StatusOr<Measurement> m = phasor::probe::Measure(**source, {});
  CheckStatus(m.status());
  if (m.ok()) CheckMeasurement(*m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<std::vector<std::string>> records = Records(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    RdmaSnapshots(records);
  } else {
    NetdevPoll(records);
  }
  return 0;
}
