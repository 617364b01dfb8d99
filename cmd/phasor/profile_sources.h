// Measuring traffic profiles from the network, shared by `phasor profile`
// (which prints them) and `phasor diagnose --pcap/--counters/--switch-csv`
// (which diagnoses them): a pcap capture through DPDK, RDMA NIC counters
// (sysfs), or switch port counter CSV files. Each subject (job, flow or port)
// becomes one JSON line in the format of probe/profile_report.h.
#ifndef PHASOR_CMD_PHASOR_PROFILE_SOURCES_H_
#define PHASOR_CMD_PHASOR_PROFILE_SOURCES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"
#include "probe/profile_extractor.h"

namespace phasor::cmd {

struct ProfileSourceFlags {
  std::string pcap;
  std::string counters;
  std::vector<std::string> switch_csv;
  std::vector<std::string> eal;
  std::string flows;
  uint32_t bin_us = 0;  // 0: per source (pcap 1000, counters and CSV 100000)
  uint32_t window_bins = 65536;
  std::string direction = "both";
  double interval_ms = 10;
  double duration_s = 10;
  probe::ExtractorOptions extract;
  // Print the capture's counters (probe::StatsJson) on stderr after a pcap.
  bool print_stats = true;

  bool any() const { return !pcap.empty() || !counters.empty() || !switch_csv.empty(); }
};

// Registers --pcap, --counters, --switch-csv and their tuning options (and
// the EAL arguments after `--`) on `cmd`, storing into `flags`.
void AddProfileSourceOptions(CLI::App* cmd, ProfileSourceFlags& flags);

// Measures the profiles of the one source `flags` names. Everything is
// computed before anything is returned, so a failure leaves no partial
// output: it fails `command` (commands.h FailCommand) with kExitBadInput for
// bad input (an unreadable or malformed file, no RoCEv2 packets) and
// kExitFailure otherwise.
std::vector<nlohmann::json> MeasureProfiles(const std::string& command,
                                            const ProfileSourceFlags& flags);

}  // namespace phasor::cmd

#endif  // PHASOR_CMD_PHASOR_PROFILE_SOURCES_H_
