#include "cmd/phasor/profile_sources.h"

#include <atomic>
#include <iostream>
#include <memory>

#include "cmd/phasor/commands.h"
#include "probe/counter_series.h"
#include "probe/dpdk_probe.h"
#include "probe/profile_report.h"
#include "probe/rdma_counters.h"
#include "probe/switch_csv.h"

namespace phasor::cmd {
namespace {

// EAL arguments that work on a machine without hugepages or NICs.
const std::vector<std::string> kDefaultEal = {
    "--no-huge", "--no-shconf", "-m", "256", "--no-pci", "--no-telemetry", "--log-level=error"};

[[noreturn]] void Fail(const std::string& command, int code, const std::string& message) {
  FailCommand(command, code, message);
}

int CodeOf(const absl::Status& s) {
  return s.code() == absl::StatusCode::kInvalidArgument || s.code() == absl::StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

// Profiles of counter series; everything is computed before anything is
// printed so that an error leaves no partial output.
std::vector<nlohmann::json> CounterProfiles(const std::string& command,
                                            const std::vector<probe::CounterSeries>& all,
                                            const ProfileSourceFlags& f, uint32_t bin_us) {
  std::vector<nlohmann::json> lines;
  probe::ResampleOptions ro;
  ro.bin_us = bin_us;
  ro.max_interval_us = std::max<int64_t>(ro.max_interval_us, 4 * int64_t{bin_us});
  for (const probe::CounterSeries& s : all) {
    auto binned = probe::Resample(s.intervals, ro);
    if (!binned.ok())
      Fail(command, CodeOf(binned.status()),
           s.subject + ": " + std::string(binned.status().message()));
    auto p = probe::ExtractProfile(*binned, f.extract);
    if (!p.ok()) Fail(command, kExitBadInput, std::string(p.status().message()));
    lines.push_back(probe::ProfileJson(s.subject, s.source, *p));
  }
  return lines;
}

std::vector<nlohmann::json> FromSwitchCsv(const std::string& command, const ProfileSourceFlags& f) {
  probe::SwitchCsvOptions o;
  o.in = f.direction != "out";
  o.out = f.direction != "in";
  std::vector<probe::CounterSeries> all;
  for (const std::string& path : f.switch_csv) {
    auto r = probe::ReadSwitchCsv(path, o);
    if (!r.ok()) Fail(command, CodeOf(r.status()), std::string(r.status().message()));
    if (r->bad_rows > 0) {
      std::cerr << "phasor " << command << ": " << path << ": skipped " << r->bad_rows
                << " bad rows (first: " << r->first_error << ")\n";
    }
    for (auto& s : r->series) all.push_back(std::move(s));
  }
  return CounterProfiles(command, all, f, f.bin_us ? f.bin_us : 100000);
}

std::vector<nlohmann::json> FromCounters(const std::string& command, const ProfileSourceFlags& f) {
  std::vector<probe::CounterSnapshot> snaps;
  if (probe::IsSnapshotSeries(f.counters)) {
    auto s = probe::ReadSnapshotSeries(f.counters);
    if (!s.ok()) Fail(command, CodeOf(s.status()), std::string(s.status().message()));
    snaps = std::move(*s);
  } else {
    probe::RdmaCounterOptions o;
    o.sysfs_root = f.counters;
    auto reader = probe::RdmaCounterReader::Create(o);
    if (!reader.ok())
      Fail(command, CodeOf(reader.status()), std::string(reader.status().message()));
    if (!(f.interval_ms > 0) || !(f.duration_s > 0)) {
      Fail(command, kExitBadInput, "--interval-ms and --duration-s: must be positive");
    }
    const int count = static_cast<int>(f.duration_s * 1000 / f.interval_ms) + 1;
    snaps = probe::PollCounters(*reader, count, static_cast<int64_t>(f.interval_ms * 1000),
                                probe::SystemPollClock());
  }
  uint64_t wraps = 0, resets = 0;
  auto series = probe::RdmaSeries(snaps, "rdma-sysfs:" + f.counters, &wraps, &resets);
  if (series.empty())
    Fail(command, kExitBadInput, "'" + f.counters + "': no port_xmit_data/port_rcv_data readings");
  if (resets > 0)
    std::cerr << "phasor " << command << ": " << resets << " counter resets skipped\n";
  return CounterProfiles(command, series, f, f.bin_us ? f.bin_us : 100000);
}

std::vector<nlohmann::json> FromPcap(const std::string& command, const ProfileSourceFlags& f) {
  if (f.pcap.find(',') != std::string::npos) {
    Fail(command, kExitBadInput,
         "--pcap: the DPDK vdev syntax cannot carry a ',' in the file name");
  }
  probe::FlowJobTable table;
  if (!f.flows.empty()) {
    auto t = probe::FlowJobTable::Load(f.flows);
    if (!t.ok()) Fail(command, CodeOf(t.status()), std::string(t.status().message()));
    table = *t;
  }
  probe::DpdkProbeOptions o;
  o.eal_args = f.eal.empty() ? kDefaultEal : f.eal;
  bool has_vdev = false;
  for (const std::string& a : o.eal_args) has_vdev |= a.starts_with("--vdev");
  if (!has_vdev) o.eal_args.push_back("--vdev=net_pcap0,rx_pcap=" + f.pcap);
  o.counter.bin_us = f.bin_us ? f.bin_us : 1000;
  o.counter.window_bins = f.window_bins;
  std::vector<nlohmann::json> lines;
  absl::Status extract_status;
  std::atomic<bool> never{false};
  const std::string source = "pcap:" + f.pcap;
  const absl::Status s = probe::RunDpdkProbe(
      o, never,
      [&](const std::vector<probe::FlowSeries>& flows, const probe::ProbeStats& stats,
          const probe::CaptureStats& capture, bool final) {
        if (!final) return;
        for (const probe::SubjectSeries& sub : probe::GroupBySubject(flows, table)) {
          auto p = probe::ExtractProfile(sub.series, f.extract);
          if (!p.ok()) {
            extract_status = p.status();
            return;
          }
          lines.push_back(probe::ProfileJson(sub.subject, source, *p));
        }
        if (f.print_stats) std::cerr << probe::StatsJson(stats, capture, final).dump() << "\n";
      });
  if (!s.ok()) Fail(command, CodeOf(s), std::string(s.message()));
  if (!extract_status.ok()) Fail(command, kExitBadInput, std::string(extract_status.message()));
  if (lines.empty()) Fail(command, kExitBadInput, "'" + f.pcap + "': no RoCEv2 packets");
  return lines;
}

}  // namespace

void AddProfileSourceOptions(CLI::App* cmd, ProfileSourceFlags& flags) {
  auto* pcap = cmd->add_option("--pcap", flags.pcap,
                               "pcap file (Ethernet) read through DPDK's net_pcap driver");
  auto* counters = cmd->add_option(
      "--counters", flags.counters,
      "RDMA sysfs tree: a directory of snapshots named by epoch microseconds, or a live root "
      "(e.g. /sys/class/infiniband) polled every --interval-ms for --duration-s");
  auto* csv = cmd->add_option("--switch-csv", flags.switch_csv,
                              "switch port counter CSV files (Zhejiang layout, .gz or plain)");
  pcap->excludes(counters, csv);
  counters->excludes(csv);
  cmd->add_option("--flows", flags.flows,
                  "pcap: flow -> job table, lines '<job> <src_ip|*> <dst_ip|*> [<dest_qp>|*]'");
  cmd->add_option("--bin-us", flags.bin_us,
                  "time bin width (default: 1000 for --pcap, 100000 for counters)");
  cmd->add_option("--window-bins", flags.window_bins, "pcap: bins kept per flow")
      ->capture_default_str();
  cmd->add_option("--direction", flags.direction, "switch CSV: in, out or both")
      ->check(CLI::IsMember({"in", "out", "both"}))
      ->capture_default_str();
  cmd->add_option("--interval-ms", flags.interval_ms, "live counters: polling interval")
      ->capture_default_str();
  cmd->add_option("--duration-s", flags.duration_s, "live counters: polling duration")
      ->capture_default_str();
  cmd->add_option("--min-confidence", flags.extract.min_confidence,
                  "below this a subject has no periodic pattern")
      ->capture_default_str();
  cmd->add_option("--min-cycles", flags.extract.min_cycles, "periods the series must span")
      ->capture_default_str();
  cmd->add_option("--max-period-us", flags.extract.max_period_us,
                  "longest period considered (0: any)");
  cmd->add_option("eal", flags.eal,
                  "after --: EAL arguments replacing the defaults (--no-huge --no-shconf -m 256 "
                  "--no-pci --no-telemetry --log-level=error); the net_pcap vdev for --pcap is "
                  "added unless they name a --vdev");
}

std::vector<nlohmann::json> MeasureProfiles(const std::string& command,
                                            const ProfileSourceFlags& f) {
  const int sources = !f.pcap.empty() + !f.counters.empty() + !f.switch_csv.empty();
  if (sources != 1)
    Fail(command, kExitBadInput, "give exactly one of --pcap, --counters, --switch-csv");
  return !f.pcap.empty()       ? FromPcap(command, f)
         : !f.counters.empty() ? FromCounters(command, f)
                               : FromSwitchCsv(command, f);
}

}  // namespace phasor::cmd
