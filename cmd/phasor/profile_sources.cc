#include "cmd/phasor/profile_sources.h"

#include <atomic>
#include <cmath>
#include <iostream>
#include <memory>

#include "cmd/phasor/commands.h"
#include "probe/counter_series.h"
#include "probe/dpdk_probe.h"
#include "probe/gnmi_source.h"
#include "probe/netdev_counters.h"
#include "probe/profile_report.h"
#include "probe/rdma_counters.h"
#include "probe/switch_csv.h"

namespace phasor::cmd {
namespace {

// EAL arguments that work on a machine without hugepages or NICs.
const std::vector<std::string> kDefaultEal = {
    "--no-huge", "--no-shconf", "-m", "256", "--no-pci", "--no-telemetry", "--log-level=error"};

absl::Status Bad(const std::string& message) { return absl::InvalidArgumentError(message); }

absl::StatusOr<probe::Measurement> FromPcap(const ProfileSourceFlags& f) {
  if (f.pcap.find(',') != std::string::npos) {
    return Bad("--pcap: the DPDK vdev syntax cannot carry a ',' in the file name");
  }
  probe::FlowJobTable table;
  if (!f.flows.empty()) {
    auto t = probe::FlowJobTable::Load(f.flows);
    if (!t.ok()) return t.status();
    table = *t;
  }
  probe::DpdkProbeOptions o;
  o.eal_args = f.eal.empty() ? kDefaultEal : f.eal;
  bool has_vdev = false;
  for (const std::string& a : o.eal_args) has_vdev |= a.starts_with("--vdev");
  if (!has_vdev) o.eal_args.push_back("--vdev=net_pcap0,rx_pcap=" + f.pcap);
  o.counter.bin_us = f.bin_us ? f.bin_us : 1000;
  o.counter.window_bins = f.window_bins;
  o.counter.tcp_udp = f.tcp_udp;
  probe::Measurement out;
  absl::Status extract_status;
  std::atomic<bool> never{false};
  const std::string source = "pcap:" + f.pcap;
  const absl::Status s = probe::RunDpdkProbe(
      o, never,
      [&](const std::vector<probe::FlowSeries>& flows, const probe::ProbeStats& stats,
          const probe::CaptureStats& capture, bool final) {
        if (!final) return;
        for (const probe::SubjectSeries& sub : probe::GroupBySubject(flows, table)) {
          auto p = probe::MeasureBinned(sub.subject, source, sub.series, f.extract);
          if (!p.ok()) {
            extract_status = p.status();
            return;
          }
          out.profiles.push_back(*std::move(p));
        }
        if (f.print_stats) std::cerr << probe::StatsJson(stats, capture, final).dump() << "\n";
      });
  if (!s.ok()) return s;
  if (!extract_status.ok()) return extract_status;
  if (out.profiles.empty()) {
    return Bad("'" + f.pcap +
               (f.tcp_udp ? "': no RoCEv2, TCP or UDP packets" : "': no RoCEv2 packets"));
  }
  return out;
}

// The counter source the flags name.
absl::StatusOr<std::unique_ptr<probe::CounterSource>> CounterSourceOf(const ProfileSourceFlags& f) {
  if (f.gnmi.any()) {
    if (!(f.duration_s > 0)) return Bad("--duration-s: must be positive");
    auto options = GnmiOptionsFromFlags(f.gnmi, f.duration_s);
    if (!options.ok()) return options.status();
    return std::unique_ptr<probe::CounterSource>(std::make_unique<probe::GnmiSource>(*options));
  }
  if (!f.switch_csv.empty()) {
    probe::SwitchCsvOptions o;
    o.in = f.direction != "out";
    o.out = f.direction != "in";
    return std::make_unique<probe::SwitchCsvSource>(f.switch_csv, o);
  }
  const bool live = !f.netdev.empty() || !probe::IsSnapshotSeries(f.counters);
  if (live && (!(f.interval_ms > 0) || !(f.duration_s > 0))) {
    return Bad("--interval-ms and --duration-s: must be positive");
  }
  if (!f.netdev.empty()) {
    probe::NetdevOptions o;
    o.sysfs_root = f.netdev_root;
    o.interfaces = f.netdev;
    o.interval_us = std::llround(f.interval_ms * 1000);
    o.duration_us = std::llround(f.duration_s * 1e6);
    auto source = probe::NetdevSource::Create(o);
    if (!source.ok()) {
      return absl::Status(source.status().code(),
                          "--netdev: " + std::string(source.status().message()));
    }
    return std::unique_ptr<probe::CounterSource>(*std::move(source));
  }
  probe::RdmaSourceOptions o;
  o.path = f.counters;
  o.interval_us = static_cast<int64_t>(f.interval_ms * 1000);
  o.duration_us = static_cast<int64_t>(f.duration_s * 1e6);
  return std::make_unique<probe::RdmaSysfsSource>(o);
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
  auto* netdev =
      cmd->add_option("--netdev", flags.netdev,
                      "Linux interfaces IF[,IF...]: poll <root>/IF/statistics/{tx,rx}_bytes "
                      "every --interval-ms (down to 1) for --duration-s")
          ->delimiter(',');
  cmd->add_option("--netdev-root", flags.netdev_root, "--netdev: the sysfs root")
      ->capture_default_str();
  auto* gnmi = AddGnmiOptions(cmd, flags.gnmi);
  pcap->excludes(counters, csv, netdev, gnmi);
  counters->excludes(csv, netdev, gnmi);
  csv->excludes(netdev, gnmi);
  netdev->excludes(gnmi);
  cmd->add_flag("--tcp-udp", flags.tcp_udp,
                "pcap: also count TCP and UDP flows by 5-tuple (NCCL sockets, gloo) beside RoCEv2");
  cmd->add_option("--flows", flags.flows,
                  "pcap: flow -> job table, lines "
                  "'<job> <src_ip|*> <dst_ip|*> [<dest_qp>|tcp[:PORT]|udp[:PORT]|*]'");
  cmd->add_option("--bin-us", flags.bin_us,
                  "time bin width (default: 1000 for --pcap, 100000 for counters, the "
                  "polling interval for --netdev)");
  cmd->add_option("--window-bins", flags.window_bins, "pcap: bins kept per flow")
      ->capture_default_str();
  cmd->add_option("--direction", flags.direction, "switch CSV: in, out or both")
      ->check(CLI::IsMember({"in", "out", "both"}))
      ->capture_default_str();
  cmd->add_option("--interval-ms", flags.interval_ms, "live counters: polling interval")
      ->capture_default_str();
  cmd->add_option("--duration-s", flags.duration_s, "live counters and gNMI: how long to measure")
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

std::string ProfileSourceFlags::name() const {
  if (!pcap.empty()) return pcap;
  if (!counters.empty()) return counters;
  if (!switch_csv.empty()) return switch_csv.front();
  if (!gnmi.targets.empty()) return gnmi.targets.front();
  return netdev.empty() ? std::string() : netdev_root + "/" + netdev.front();
}

int ExitCodeOf(const absl::Status& s) {
  return s.code() == absl::StatusCode::kInvalidArgument || s.code() == absl::StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

absl::StatusOr<probe::Measurement> MeasureProfiles(const ProfileSourceFlags& f) {
  const int sources = !f.pcap.empty() + !f.counters.empty() + !f.switch_csv.empty() +
                      !f.netdev.empty() + f.gnmi.any();
  if (sources != 1) {
    return Bad("give exactly one of --pcap, --counters, --switch-csv, --netdev, --gnmi");
  }
  if (!f.pcap.empty()) return FromPcap(f);
  absl::StatusOr<std::unique_ptr<probe::CounterSource>> source = CounterSourceOf(f);
  if (!source.ok()) return source.status();
  probe::MeasureOptions o;
  o.bin_us = f.bin_us;
  o.extract = f.extract;
  return probe::Measure(**source, o);
}

}  // namespace phasor::cmd
