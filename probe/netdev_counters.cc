#include "probe/netdev_counters.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace phasor::probe {

absl::StatusOr<std::unique_ptr<NetdevSource>> NetdevSource::Create(const NetdevOptions& options) {
  if (options.interfaces.empty()) return absl::InvalidArgumentError("interfaces: none given");
  if (options.interval_us < 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("interval_us: ", options.interval_us, " is below 1000 (1 ms)"));
  }
  if (options.duration_us < 2 * options.interval_us) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration_us: ", options.duration_us, " is shorter than two intervals"));
  }
  if (options.max_late_us < 0 || options.max_late_us >= options.interval_us) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_late_us: ", options.max_late_us, " must be in [0, interval_us)"));
  }
  std::unique_ptr<NetdevSource> source(new NetdevSource(options));
  if (source->options_.max_late_us == 0) source->options_.max_late_us = options.interval_us / 2;
  if (!source->options_.clock.now_us || !source->options_.clock.sleep_until_us) {
    source->options_.clock = SystemPollClock();
  }
  for (const std::string& name : options.interfaces) {
    if (name.empty() || name.find('/') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("interfaces: '", name, "' is not an interface name"));
    }
    for (const char* counter : {"tx_bytes", "rx_bytes"}) {
      const std::string path = absl::StrCat(options.sysfs_root, "/", name, "/statistics/", counter);
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        return absl::NotFoundError(absl::StrCat("interface '", name, "': cannot open ", path));
      }
      source->fds_.push_back(fd);
    }
  }
  std::vector<uint64_t> values;
  if (!source->ReadOnce(values)) {
    return absl::InvalidArgumentError(absl::StrCat("interfaces: a statistics file under ",
                                                   options.sysfs_root, " does not hold a number"));
  }
  return source;
}

NetdevSource::~NetdevSource() {
  for (int fd : fds_) ::close(fd);
}

bool NetdevSource::ReadOnce(std::vector<uint64_t>& values) const {
  values.resize(fds_.size());
  char buf[32];
  for (size_t i = 0; i < fds_.size(); ++i) {
    const ssize_t n = ::pread(fds_[i], buf, sizeof(buf) - 1, 0);
    if (n <= 0) return false;
    absl::string_view text(buf, static_cast<size_t>(n));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    if (!absl::SimpleAtoi(text, &values[i])) return false;
  }
  return true;
}

absl::StatusOr<CounterCollection> NetdevSource::Collect() {
  const PollClock& clock = options_.clock;
  const int64_t interval = options_.interval_us;
  const int64_t slots = options_.duration_us / interval + 1;
  std::vector<std::vector<CounterReading>> readings(fds_.size());
  std::vector<double> lateness;
  uint64_t late = 0, unreadable = 0;
  std::vector<uint64_t> values;
  const int64_t start = clock.now_us();
  for (int64_t i = 0; i < slots; ++i) {
    const int64_t slot = start + i * interval;
    if (i > 0) clock.sleep_until_us(slot);
    const int64_t begin = clock.now_us();
    if (begin - slot > options_.max_late_us) {
      ++late;
      continue;
    }
    if (!ReadOnce(values)) {
      ++unreadable;
      continue;
    }
    const int64_t stamp = clock.now_us();
    for (size_t k = 0; k < fds_.size(); ++k) readings[k].push_back({stamp, values[k]});
    lateness.push_back(static_cast<double>(begin - slot));
  }
  if (lateness.size() < 2) {
    return absl::UnavailableError(absl::StrCat("netdev: only ", lateness.size(), " of ", slots,
                                               " reads kept (", late, " late)"));
  }
  SamplingReport report;
  report.interval_us = interval;
  report.reads = lateness.size();
  report.late = late;
  double sum = 0;
  for (double x : lateness) sum += x;
  report.jitter_mean_us = sum / lateness.size();
  std::vector<double> sorted = lateness;
  std::sort(sorted.begin(), sorted.end());
  report.jitter_p99_us =
      sorted[std::min(sorted.size() - 1, static_cast<size_t>(std::ceil(0.99 * sorted.size())) - 1)];
  report.jitter_max_us = sorted.back();

  CounterCollection out;
  out.bin_us = static_cast<uint32_t>(interval);
  const std::string source = "netdev:" + options_.sysfs_root;
  uint64_t resets = 0;
  for (size_t k = 0; k < fds_.size(); ++k) {
    CounterSeries s;
    s.subject = absl::StrCat(options_.interfaces[k / 2], k % 2 == 0 ? "/tx" : "/rx");
    s.source = source;
    s.intervals = DeltasFromReadings(readings[k], 64, 1.0, nullptr, &resets);
    s.sampling = report;
    if (!s.intervals.empty()) out.series.push_back(std::move(s));
  }
  if (unreadable > 0) out.notes.push_back(absl::StrCat(unreadable, " unreadable reads skipped"));
  if (resets > 0) out.notes.push_back(absl::StrCat(resets, " counter resets skipped"));
  if (out.series.empty()) return absl::UnavailableError("netdev: no counter advanced in time");
  return out;
}

}  // namespace phasor::probe
