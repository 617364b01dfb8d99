// Measuring traffic profiles from the network, shared by `phasor profile`
// (which prints them with probe::ProfileJson) and `phasor diagnose
// --pcap/--counters/--switch-csv/--netdev` (which diagnoses them): a pcap
// capture through DPDK, RDMA NIC counters (sysfs), switch port counter CSV
// files, Linux interface counters, or interface counters streamed over gNMI. The counter sources
// are probe::CounterSource implementations measured by probe::Measure; this file only picks one
// from the flags.
#ifndef PHASOR_CMD_PHASOR_PROFILE_SOURCES_H_
#define PHASOR_CMD_PHASOR_PROFILE_SOURCES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "cmd/common/gnmi_flags.h"
#include "probe/measure.h"
#include "probe/profile_extractor.h"

namespace phasor::cmd {

struct ProfileSourceFlags {
  std::string pcap;
  std::string counters;
  std::vector<std::string> switch_csv;
  std::vector<std::string> netdev;  // interface names
  std::string netdev_root = "/sys/class/net";
  GnmiFlags gnmi;        // --gnmi targets and their options
  bool tcp_udp = false;  // pcap: also count TCP and UDP flows by 5-tuple
  std::vector<std::string> eal;
  std::string flows;
  uint32_t bin_us = 0;  // 0: per source (pcap 1000, counters and CSV 100000, netdev the interval)
  uint32_t window_bins = 65536;
  std::string direction = "both";
  double interval_ms = 10;
  double duration_s = 10;
  probe::ExtractorOptions extract;
  // Print the capture's counters (probe::StatsJson) on stderr after a pcap.
  bool print_stats = true;

  bool any() const {
    return !pcap.empty() || !counters.empty() || !switch_csv.empty() || !netdev.empty() ||
           gnmi.any();
  }
  // The file or tree measured, for messages.
  std::string name() const;
};

// Registers --pcap, --counters, --switch-csv, --netdev, --gnmi and their tuning
// options (and the EAL arguments after `--`) on `cmd`, storing into `flags`.
void AddProfileSourceOptions(CLI::App* cmd, ProfileSourceFlags& flags);

// Measures the profiles of the one source `flags` names. Everything is
// computed before anything is returned, so a failure leaves no partial
// output. InvalidArgument or NotFound for bad input (an unreadable or
// malformed file, no RoCEv2 packets, not exactly one source), other codes
// otherwise (Unavailable: no gNMI target delivered counters). The pcap capture's counters go to
// stderr when print_stats.
absl::StatusOr<probe::Measurement> MeasureProfiles(const ProfileSourceFlags& flags);

// kExitBadInput for InvalidArgument and NotFound, else kExitFailure.
int ExitCodeOf(const absl::Status& status);

}  // namespace phasor::cmd

#endif  // PHASOR_CMD_PHASOR_PROFILE_SOURCES_H_
