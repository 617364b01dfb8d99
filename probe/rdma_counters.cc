#include "probe/rdma_counters.h"

#include <infiniband/verbs.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace phasor::probe {
namespace {

namespace fs = std::filesystem;

bool ReadU64(const fs::path& path, uint64_t* value) {
  std::ifstream in(path);
  std::string text;
  if (!in || !(in >> text)) return false;
  return absl::SimpleAtoi(text, value);
}

std::vector<std::string> SubdirNames(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> IbverbsDeviceNames() {
  std::vector<std::string> names;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return names;  // no RDMA subsystem (errno says why)
  for (int i = 0; i < n; ++i) {
    if (const char* name = ibv_get_device_name(list[i]); name != nullptr) names.push_back(name);
  }
  ibv_free_device_list(list);
  return names;
}

absl::StatusOr<RdmaCounterReader> RdmaCounterReader::Create(const RdmaCounterOptions& options) {
  RdmaCounterReader reader;
  reader.root_ = options.sysfs_root;
  std::error_code ec;
  if (!fs::is_directory(options.sysfs_root, ec)) {
    return absl::NotFoundError(absl::StrCat("sysfs root '", options.sysfs_root,
                                            "': no such directory (no RDMA devices?)"));
  }
  std::vector<std::string> devices = options.devices;
  if (devices.empty() && options.sysfs_root == kDefaultSysfsRoot) {
    devices = IbverbsDeviceNames();
    reader.by_ibverbs_ = !devices.empty();
  }
  if (devices.empty()) devices = SubdirNames(options.sysfs_root);
  for (const std::string& d : devices) {
    for (const std::string& p : SubdirNames(fs::path(options.sysfs_root) / d / "ports")) {
      reader.ports_.push_back(d + "/" + p);
    }
  }
  if (reader.ports_.empty()) {
    return absl::NotFoundError(
        absl::StrCat("sysfs root '", options.sysfs_root, "': no device with ports"));
  }
  return reader;
}

CounterSnapshot RdmaCounterReader::Read(int64_t time_us) const {
  CounterSnapshot snap;
  snap.time_us = time_us;
  for (const std::string& dp : ports_) {
    const size_t slash = dp.find('/');
    const fs::path port_dir =
        fs::path(root_) / dp.substr(0, slash) / "ports" / dp.substr(slash + 1);
    for (const char* name : {"port_xmit_data", "port_rcv_data"}) {
      uint64_t v = 0;
      if (ReadU64(port_dir / "counters" / name, &v)) {
        snap.values[absl::StrCat(dp, "/", name)] = v;
      } else {
        ++snap.unreadable;
      }
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(port_dir / "hw_counters", ec)) {
      uint64_t v = 0;
      if (ReadU64(e.path(), &v)) {
        snap.values[absl::StrCat(dp, "/hw_counters/", e.path().filename().string())] = v;
      } else {
        ++snap.unreadable;
      }
    }
  }
  return snap;
}

std::vector<CounterSeries> RdmaSeries(const std::vector<CounterSnapshot>& snapshots,
                                      const std::string& source, uint64_t* wraps,
                                      uint64_t* resets) {
  std::map<std::string, std::vector<CounterReading>> readings;
  for (const CounterSnapshot& s : snapshots) {
    for (const auto& [key, value] : s.values) {
      if (key.ends_with("/port_xmit_data") || key.ends_with("/port_rcv_data")) {
        readings[key].push_back({s.time_us, value});
      }
    }
  }
  std::vector<CounterSeries> out;
  for (const auto& [key, r] : readings) {
    CounterSeries series;
    const bool tx = key.ends_with("/port_xmit_data");
    series.subject = key.substr(0, key.rfind('/')) + (tx ? "/tx" : "/rx");
    series.source = source;
    series.intervals = DeltasFromReadings(r, 32, 4.0, wraps, resets);
    if (!series.intervals.empty()) out.push_back(std::move(series));
  }
  return out;
}

bool IsSnapshotSeries(const std::string& dir) {
  const auto names = SubdirNames(dir);
  if (names.empty()) return false;
  for (const std::string& n : names) {
    int64_t t;
    if (!absl::SimpleAtoi(n, &t)) return false;
  }
  return true;
}

absl::StatusOr<std::vector<CounterSnapshot>> ReadSnapshotSeries(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("counters directory '", dir, "': not found"));
  }
  std::vector<std::pair<int64_t, std::string>> times;
  for (const std::string& n : SubdirNames(dir)) {
    int64_t t;
    if (!absl::SimpleAtoi(n, &t) || t < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "counters directory '", dir, "': subdirectory '", n,
          "' is not a time in epoch microseconds (want one snapshot per subdirectory)"));
    }
    times.emplace_back(t, n);
  }
  if (times.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "counters directory '", dir, "': needs at least two snapshots, has ", times.size()));
  }
  std::sort(times.begin(), times.end());
  std::vector<CounterSnapshot> out;
  for (const auto& [t, name] : times) {
    RdmaCounterOptions o;
    o.sysfs_root = (fs::path(dir) / name).string();
    auto reader = RdmaCounterReader::Create(o);
    if (!reader.ok()) return reader.status();
    out.push_back(reader->Read(t));
  }
  return out;
}

PollClock SystemPollClock() {
  PollClock c;
  c.now_us = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  c.sleep_until_us = [now = c.now_us](int64_t t) {
    const int64_t d = t - now();
    if (d > 0) std::this_thread::sleep_for(std::chrono::microseconds(d));
  };
  return c;
}

std::vector<CounterSnapshot> PollCounters(const RdmaCounterReader& reader, int count,
                                          int64_t interval_us, const PollClock& clock) {
  std::vector<CounterSnapshot> out;
  const int64_t start = clock.now_us();
  for (int i = 0; i < count; ++i) {
    if (i > 0) clock.sleep_until_us(start + i * interval_us);
    out.push_back(reader.Read(clock.now_us()));
  }
  return out;
}

absl::StatusOr<CounterCollection> RdmaSysfsSource::Collect() {
  std::vector<CounterSnapshot> snaps;
  if (IsSnapshotSeries(options_.path)) {
    absl::StatusOr<std::vector<CounterSnapshot>> s = ReadSnapshotSeries(options_.path);
    if (!s.ok()) return s.status();
    snaps = *std::move(s);
  } else {
    RdmaCounterOptions o;
    o.sysfs_root = options_.path;
    absl::StatusOr<RdmaCounterReader> reader = RdmaCounterReader::Create(o);
    if (!reader.ok()) return reader.status();
    if (options_.interval_us <= 0 || options_.duration_us <= 0) {
      return absl::InvalidArgumentError("interval_us and duration_us: must be positive");
    }
    const PollClock clock =
        options_.clock.now_us && options_.clock.sleep_until_us ? options_.clock : SystemPollClock();
    const int count = static_cast<int>(options_.duration_us / options_.interval_us) + 1;
    snaps = PollCounters(*reader, count, options_.interval_us, clock);
  }
  CounterCollection out;
  uint64_t wraps = 0, resets = 0;
  out.series = RdmaSeries(snaps, "rdma-sysfs:" + options_.path, &wraps, &resets);
  if (out.series.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", options_.path, "': no port_xmit_data/port_rcv_data readings"));
  }
  if (resets > 0) out.notes.push_back(absl::StrCat(resets, " counter resets skipped"));
  return out;
}

}  // namespace phasor::probe
