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
// Exit status: 0 done, 2 bad input (options, pcap file, flow table), 1 other failures.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "integrations/client/profile_publisher.h"
#include "probe/dpdk_probe.h"
#include "probe/profile_report.h"

namespace {

std::atomic<bool> g_interrupted{false};

void OnSignal(int) { g_interrupted = true; }

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
  using phasor::client::LoadPublishKeys;
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
      "traffic profiles as JSON lines (and, with --publish, sends them to phasord).\n"
      "Usage: phasor-probe [options] -- <EAL arguments>"};
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
  app.add_option("--publish", publish.endpoint,
                 "also send every periodic job profile to phasord's profile_endpoint as a ProfileUpdate\n"
                 "(tcp://HOST:PORT or ipc://PATH; plain only for ipc:// and loopback, else CURVE keys)");
  app.add_option("--publish-server-key", publish_server_key, "phasord's CURVE public key file (with --publish-keys)");
  app.add_option("--publish-keys", publish_keys,
                 "this probe's CURVE key pair PREFIX.pub/PREFIX.secret from `phasor keygen --out PREFIX`");
  app.add_option("--publish-link", publish_link,
                 "also publish all captured RoCE traffic as the profile of this link id (a mirror port)");
  app.add_option("--publish-timeout-ms", publish.send_timeout_ms,
                 "longest wait of one send while phasord is reachable (none while it is not)")
      ->capture_default_str();
  app.add_option("--publish-queue", publish.queue, "profiles queued towards phasord at most")
      ->capture_default_str();
  try {
    app.parse(split, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
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
      std::cerr << "phasor-probe: --publish-link: '" << publish_link << "' is not a link id (no spaces or '#')\n";
      return 2;
    }
    link_table = *t;
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
  std::ostream* out = &std::cout;
  if (out_path != "-") {
    file.open(out_path);
    if (!file) {
      std::cerr << "phasor-probe: --out: cannot open '" << out_path << "'\n";
      return 2;
    }
    out = &file;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);

  const std::vector<std::string> files = PcapFilesInEalArgs(opt.eal_args);
  const std::string source =
      files.empty() ? "dpdk:port" + std::to_string(opt.capture.port) : "pcap:" + files.front();
  absl::Status bad_options;
  auto report = [&](const std::vector<FlowSeries>& flows, const ProbeStats& stats,
                    const CaptureStats& capture, bool final) {
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
