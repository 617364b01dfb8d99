// phasor-probe: captures RoCEv2 traffic through DPDK and writes each flow's
// or job's traffic profile as JSON lines (see probe/profile_report.h).
//
//   phasor-probe [options] -- <EAL arguments>
//
// Examples:
//   phasor-probe --bin-us 1000 -- --no-huge --no-shconf -m 256 --no-pci
//       --vdev=net_pcap0,rx_pcap=trace.pcap          (one command line)
//   phasor-probe --flows jobs.txt --report-s 10 -- -l 0-1 -a 0000:3b:00.0
//   phasor-probe --flows jobs.txt --publish ipc:///run/phasor/profiles -- ...
//       (also sends each job's periodic profile to phasord as a ProfileUpdate)
//   phasor-probe --placements-from ipc:///run/phasor/requests --servers servers.txt
//       --publish ipc:///run/phasor/profiles -- ...
//       (flows between the servers of a job phasord placed are that job's)
//   phasor-probe --gnmi leaf1=10.0.0.1:6030 --gnmi-user phasor --report-s 60
//       (no capture: a switch's interface counters streamed over gNMI; gnmi_mode.h)
// Exit status: 0 done, 2 bad input (options, pcap file, flow table), 1 other failures.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cmd/phasor-probe/gnmi_mode.h"
#include "integrations/client/placement_watcher.h"
#include "integrations/client/profile_publisher.h"
#include "probe/dpdk_probe.h"
#include "probe/profile_report.h"

namespace {

std::atomic<bool> g_interrupted{false};

void OnSignal(int) { g_interrupted = true; }

// --out: stdout for "-", else the file (opened into `file`); nullptr (said
// on stderr) when it cannot be opened.
std::ostream* OpenOut(const std::string& path, std::ofstream& file) {
  if (path == "-") return &std::cout;
  file.open(path);
  if (!file) {
    std::cerr << "phasor-probe: --out: cannot open '" << path << "'\n";
    return nullptr;
  }
  return &file;
}

int ExitCode(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return 2;
    default:
      return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace phasor::probe;
  using phasor::client::LoadPlacementKeys;
  using phasor::client::LoadPublishKeys;
  using phasor::client::PlacementWatcher;
  using phasor::client::PlacementWatcherOptions;
  using phasor::client::ProfilePublisher;
  using phasor::client::PublisherOptions;
  using phasor::client::ToProfileUpdate;
  // Our options before `--`, the EAL's after it.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  }
  DpdkProbeOptions opt;
  for (int i = split + 1; i < argc; ++i) opt.eal_args.push_back(argv[i]);

  CLI::App app{
      "phasor-probe: captures RoCEv2 traffic through DPDK and writes per-job (or per-flow)\n"
      "traffic profiles as JSON lines (and, with --publish, sends them to phasord); with\n"
      "--gnmi, streams switch interface counters over gNMI instead (no EAL).\n"
      "Usage: phasor-probe [options] -- <EAL arguments>\n"
      "       phasor-probe --gnmi [NAME=]HOST:PORT[,...] [options]"};
  std::string flows_path, out_path = "-";
  ExtractorOptions extract;
  app.add_option("--bin-us", opt.counter.bin_us, "time bin width in microseconds")
      ->capture_default_str();
  app.add_option("--window-bins", opt.counter.window_bins, "bins kept per flow")
      ->capture_default_str();
  app.add_option("--max-flows", opt.counter.max_flows, "flow table capacity per worker")
      ->capture_default_str();
  app.add_flag("--tcp-udp", opt.counter.tcp_udp,
               "also count TCP and UDP flows by 5-tuple (NCCL sockets, gloo) beside RoCEv2");
  app.add_option("--flows", flows_path,
                 "flow -> job table: lines "
                 "'<job> <src_ip|*> <dst_ip|*> [<dest_qp>|tcp[:PORT]|udp[:PORT]|*]'");
  app.add_option("--out", out_path, "output file for the JSON lines ('-': stdout)")
      ->capture_default_str();
  app.add_option("--report-s", opt.report_s,
                 "report every N seconds while capturing (0: at the end)")
      ->capture_default_str();
  app.add_option("--duration-s", opt.duration_s, "stop after N seconds (0: end of input or signal)")
      ->capture_default_str();
  app.add_option("--port", opt.capture.port, "DPDK port id")->capture_default_str();
  app.add_option("--queues", opt.capture.queues, "RX queues = worker lcores")
      ->capture_default_str();
  app.add_option("--burst", opt.capture.burst, "packets per RX burst")->capture_default_str();
  app.add_option("--mbufs", opt.capture.mbufs, "mbuf pool size")->capture_default_str();
  app.add_option("--idle-stop-ms", opt.capture.idle_stop_ms,
                 "stop after this long without packets (0: never)")
      ->capture_default_str();
  app.add_option("--min-confidence", extract.min_confidence,
                 "below this a subject has no periodic pattern")
      ->capture_default_str();
  app.add_option("--min-cycles", extract.min_cycles, "periods the window must span")
      ->capture_default_str();
  PublisherOptions publish;
  std::string publish_server_key, publish_keys, publish_link;
  app.add_option(
      "--publish", publish.endpoint,
      "also send every periodic job profile to phasord's profile_endpoint as a ProfileUpdate\n"
      "(tcp://HOST:PORT or ipc://PATH; plain only for ipc:// and loopback, else CURVE keys)");
  app.add_option("--publish-server-key", publish_server_key,
                 "phasord's CURVE public key file (with --publish-keys)");
  app.add_option(
      "--publish-keys", publish_keys,
      "this probe's CURVE key pair PREFIX.pub/PREFIX.secret from `phasor keygen --out PREFIX`");
  app.add_option(
      "--publish-link", publish_link,
      "also publish all captured RoCE traffic as the profile of this link id (a mirror port)");
  app.add_option("--publish-timeout-ms", publish.send_timeout_ms,
                 "longest wait of one send while phasord is reachable (none while it is not)")
      ->capture_default_str();
  app.add_option("--publish-queue", publish.queue, "profiles queued towards phasord at most")
      ->capture_default_str();
  PlacementWatcherOptions placements;
  std::string servers_path, placements_server_key, placements_keys;
  app.add_option(
      "--placements-from", placements.endpoint,
      "phasord's request_endpoint: flows between the servers of a job it placed are that job's\n"
      "(asked at start and every --placements-poll-ms; after the --flows rules, which win)");
  app.add_option("--servers", servers_path,
                 "server -> address table for --placements-from: lines '<server> <ip> [<ip>...]'");
  app.add_option("--placements-poll-ms", placements.poll_ms,
                 "time between two polls of phasord's placement")
      ->capture_default_str();
  app.add_option("--placements-timeout-ms", placements.timeout_ms,
                 "longest wait for one answer of phasord")
      ->capture_default_str();
  app.add_option("--placements-server-key", placements_server_key,
                 "phasord's CURVE public key file (with --placements-keys)");
  app.add_option("--placements-keys", placements_keys,
                 "this probe's CURVE key pair PREFIX.pub/PREFIX.secret for --placements-from");
  phasor::cmd::GnmiProbeOptions gnmi;
  phasor::cmd::AddGnmiOptions(&app, gnmi.gnmi);
  std::string publish_subjects;
  app.add_option("--publish-subjects", publish_subjects,
                 "--gnmi: what each interface direction is to phasord: lines "
                 "'<target>/<interface>/<in|out> job|link <id>'");
  app.add_option("--window-s", gnmi.window_s,
                 "--gnmi: each report extracts the newest N s of readings")
      ->capture_default_str();
  try {
    app.parse(split, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  if (gnmi.gnmi.any()) {
    // No capture: the counters come from the switches.
    if (split != argc) {
      std::cerr << "phasor-probe: --gnmi takes no EAL arguments (nothing after '--')\n";
      return 2;
    }
    if (!flows_path.empty() || !placements.endpoint.empty() || !publish_link.empty() ||
        opt.counter.tcp_udp) {
      std::cerr << "phasor-probe: --flows, --placements-from, --publish-link and --tcp-udp are "
                   "for packet capture, not --gnmi\n";
      return 2;
    }
    gnmi.report_s = opt.report_s;
    gnmi.duration_s = opt.duration_s;
    gnmi.extract = extract;
    gnmi.publish = publish;
    gnmi.publish_server_key = publish_server_key;
    gnmi.publish_keys = publish_keys;
    gnmi.publish_subjects = publish_subjects;
    std::ofstream gnmi_file;
    std::ostream* gnmi_out = OpenOut(out_path, gnmi_file);
    if (gnmi_out == nullptr) return 2;
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    return phasor::cmd::RunGnmiProbe(gnmi, g_interrupted, *gnmi_out, std::cerr);
  }
  if (!publish_subjects.empty()) {
    std::cerr
        << "phasor-probe: --publish-subjects is for --gnmi (captured jobs come from --flows)\n";
    return 2;
  }
  FlowJobTable table;
  if (!flows_path.empty()) {
    auto t = FlowJobTable::Load(flows_path);
    if (!t.ok()) {
      std::cerr << "phasor-probe: " << t.status().message() << "\n";
      return 2;
    }
    table = *t;
  }
  FlowJobTable link_table;
  if (!publish_link.empty()) {
    if (publish.endpoint.empty()) {
      std::cerr << "phasor-probe: --publish-link needs --publish\n";
      return 2;
    }
    auto t = FlowJobTable::Parse(publish_link + " * *\n", "--publish-link");
    if (!t.ok()) {
      std::cerr << "phasor-probe: --publish-link: '" << publish_link
                << "' is not a link id (no spaces or '#')\n";
      return 2;
    }
    link_table = *t;
  }
  std::unique_ptr<PlacementWatcher> watcher;
  if (!placements.endpoint.empty()) {
    if (servers_path.empty()) {
      std::cerr << "phasor-probe: --placements-from needs --servers (the servers' addresses)\n";
      return 2;
    }
    std::ifstream in(servers_path);
    if (!in) {
      std::cerr << "phasor-probe: --servers: cannot open '" << servers_path << "'\n";
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto addresses = ServerAddresses::Parse(text.str(), servers_path);
    if (!addresses.ok()) {
      std::cerr << "phasor-probe: " << addresses.status().message() << "\n";
      return 2;
    }
    if (!placements_server_key.empty() || !placements_keys.empty()) {
      auto keys = LoadPlacementKeys(placements_server_key, placements_keys);
      if (!keys.ok()) {
        std::cerr << "phasor-probe: " << keys.status().message() << "\n";
        return 2;
      }
      placements.curve = *keys;
    }
    auto w = PlacementWatcher::Create(placements, *std::move(addresses), std::cerr);
    if (!w.ok()) {
      std::cerr << "phasor-probe: " << w.status().message() << "\n";
      return 2;
    }
    watcher = *std::move(w);
  } else if (!servers_path.empty() || !placements_server_key.empty() || !placements_keys.empty()) {
    std::cerr << "phasor-probe: --servers, --placements-server-key and --placements-keys need "
                 "--placements-from\n";
    return 2;
  }
  std::unique_ptr<ProfilePublisher> publisher;
  if (!publish.endpoint.empty()) {
    if (!publish_server_key.empty() || !publish_keys.empty()) {
      auto keys = LoadPublishKeys(publish_server_key, publish_keys);
      if (!keys.ok()) {
        std::cerr << "phasor-probe: " << keys.status().message() << "\n";
        return 2;
      }
      publish.curve = *keys;
    }
    auto p = ProfilePublisher::Create(publish, std::cerr);
    if (!p.ok()) {
      std::cerr << "phasor-probe: " << p.status().message() << "\n";
      return 2;
    }
    publisher = *std::move(p);
  } else if (!publish_server_key.empty() || !publish_keys.empty()) {
    std::cerr << "phasor-probe: --publish-server-key and --publish-keys need --publish\n";
    return 2;
  }
  std::ofstream file;
  std::ostream* out = OpenOut(out_path, file);
  if (out == nullptr) return 2;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  if (watcher != nullptr) {
    // The placement before the first packet (a pcap may be read faster than
    // the first poll); phasord down costs at most --placements-timeout-ms.
    (void)watcher->Poll();
    watcher->Start();
  }

  const std::vector<std::string> files = PcapFilesInEalArgs(opt.eal_args);
  const std::string source =
      files.empty() ? "dpdk:port" + std::to_string(opt.capture.port) : "pcap:" + files.front();
  absl::Status bad_options;
  const FlowJobTable static_table = table;
  auto report = [&](const std::vector<FlowSeries>& flows, const ProbeStats& stats,
                    const CaptureStats& capture, bool final) {
    // The --flows rules first, then the current placement's.
    if (watcher != nullptr) table = FlowJobTable::Concat(static_table, *watcher->table());
    std::set<std::string> jobs;  // subjects that are jobs (not unmapped flows)
    for (const FlowSeries& f : flows) {
      if (std::string job = table.JobOf(f.key); !job.empty()) jobs.insert(job);
    }
    for (const SubjectSeries& s : GroupBySubject(flows, table)) {
      auto p = ExtractProfile(s.series, extract);
      if (!p.ok()) {
        bad_options = p.status();
        return;
      }
      *out << ProfileJson(s.subject, source, *p).dump() << "\n";
      if (publisher == nullptr) continue;
      if (!jobs.contains(s.subject)) {
        publisher->Skip("unmapped_flow");
      } else if (!p->periodic) {
        publisher->Skip("not_periodic");
      } else {
        publisher->Publish(ToProfileUpdate(s.subject, phasor::v1::ProfileUpdate::JOB, source, *p));
      }
    }
    out->flush();
    if (publisher != nullptr && !publish_link.empty()) {
      for (const SubjectSeries& s : GroupBySubject(flows, link_table)) {
        auto p = ExtractProfile(s.series, extract);
        if (!p.ok() || !p->periodic) {
          publisher->Skip("not_periodic");
          continue;
        }
        publisher->Publish(ToProfileUpdate(s.subject, phasor::v1::ProfileUpdate::LINK, source, *p));
      }
    }
    std::cerr << StatsJson(stats, capture, final).dump() << "\n";
  };
  const absl::Status status = RunDpdkProbe(opt, g_interrupted, report);
  if (publisher != nullptr) std::cerr << publisher->SummaryJson().dump() << "\n";
  if (watcher != nullptr) std::cerr << watcher->SummaryJson().dump() << "\n";
  if (!status.ok()) {
    std::cerr << "phasor-probe: " << status.message() << "\n";
    return ExitCode(status);
  }
  if (!bad_options.ok()) {
    std::cerr << "phasor-probe: " << bad_options.message() << "\n";
    return 2;
  }
  return 0;
}
