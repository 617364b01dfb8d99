#include "probe/dpdk_probe.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "probe/pcap_file.h"

namespace phasor::probe {

std::vector<std::string> PcapFilesInEalArgs(const std::vector<std::string>& eal_args) {
  std::vector<std::string> files;
  static constexpr std::string_view kKey = "rx_pcap=";
  for (const std::string& arg : eal_args) {
    for (size_t at = arg.find(kKey); at != std::string::npos; at = arg.find(kKey, at + 1)) {
      if (at > 0 && arg[at - 1] != ',') continue;
      const size_t begin = at + kKey.size();
      const size_t end = arg.find(',', begin);
      files.push_back(
          arg.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    }
  }
  return files;
}

absl::Status RunDpdkProbe(const DpdkProbeOptions& options, const std::atomic<bool>& interrupted,
                          const ProbeReport& report) {
  DpdkCaptureOptions capture = options.capture;
  const std::vector<std::string> files = PcapFilesInEalArgs(options.eal_args);
  if (!files.empty()) {
    uint64_t total = 0;
    for (const std::string& f : files) {
      auto n = CountPcapPackets(f);
      if (!n.ok()) return n.status();
      total += *n;
    }
    if (total == 0) return absl::InvalidArgumentError("the pcap input holds no packets");
    capture.stop_after_packets = total;
    // Safety net should the driver lose packets: stop when the file is quiet.
    if (capture.idle_stop_ms == 0) capture.idle_stop_ms = 2000;
  }
  if (auto check = FlowCounter::Create(options.counter); !check.ok()) return check.status();
  if (absl::Status s = InitEal(options.eal_args); !s.ok()) return s;
  absl::Status result;
  {
    auto source = DpdkCaptureSource::Create(capture);
    if (!source.ok()) {
      CleanupEal();
      return source.status();
    }
    std::vector<std::unique_ptr<FlowCounter>> counters;
    std::vector<PacketSink*> sinks;
    for (int i = 0; i < (*source)->workers(); ++i) {
      counters.push_back(*FlowCounter::Create(options.counter));
      sinks.push_back(counters.back().get());
    }
    // A timer ends each capture segment (report_s), the whole run
    // (duration_s), or relays `interrupted`.
    std::atomic<bool> segment_stop{false};
    std::atomic<bool> finished{false};
    std::atomic<bool> timed_out{false};
    std::mutex mu;
    std::condition_variable cv;
    const auto start = std::chrono::steady_clock::now();
    std::thread timer([&] {
      auto next_report = start + std::chrono::duration<double>(options.report_s);
      std::unique_lock<std::mutex> lock(mu);
      while (!finished) {
        cv.wait_for(lock, std::chrono::milliseconds(20));
        const auto now = std::chrono::steady_clock::now();
        if (interrupted.load()) segment_stop = true;
        if (options.duration_s > 0 &&
            now - start >= std::chrono::duration<double>(options.duration_s)) {
          timed_out = true;
          segment_stop = true;
        }
        if (options.report_s > 0 && now >= next_report) {
          segment_stop = true;
          next_report += std::chrono::duration<double>(options.report_s);
        }
      }
    });
    CaptureStats total_capture;
    while (true) {
      segment_stop = false;
      (*source)->set_stop_after_packets(capture.stop_after_packets);
      result = (*source)->Run(sinks, segment_stop);
      const CaptureStats seg = (*source)->stats();
      total_capture.packets += seg.packets;
      total_capture.bursts += seg.bursts;
      total_capture.dropped += seg.dropped;
      total_capture.elapsed_s += seg.elapsed_s;
      const bool input_ended = !segment_stop.load();
      const bool last =
          !result.ok() || input_ended || interrupted.load() || timed_out.load() ||
          (capture.stop_after_packets > 0 && total_capture.packets >= capture.stop_after_packets);
      std::vector<std::vector<FlowSeries>> parts;
      ProbeStats stats;
      for (const auto& c : counters) {
        parts.push_back(c->Snapshot());
        stats.Add(c->stats());
      }
      report(FlowCounter::Merge(parts), stats, total_capture, last);
      if (last) break;
      if (capture.stop_after_packets > 0) {
        capture.stop_after_packets -= std::min(capture.stop_after_packets, seg.packets);
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      finished = true;
    }
    cv.notify_all();
    timer.join();
  }
  CleanupEal();
  return result;
}

}  // namespace phasor::probe
