// `phasor profile`: traffic profiles (SPEC section 2) measured from the
// network, one JSON object per line and subject (flow/job, NIC port, switch
// port), in the format of probe/profile_report.h. Each periodic subject's
// "profile" member can be pasted into `jobs[].profile` of `phasor rank`.
// The measuring is shared with `phasor diagnose` (profile_sources.h).
//
//   phasor profile --pcap FILE [--flows TABLE] [-- <EAL arguments>]
//   phasor profile --counters DIR
//   phasor profile --switch-csv FILE...
#include <iostream>
#include <memory>

#include "cmd/phasor/commands.h"
#include "cmd/phasor/profile_sources.h"

namespace phasor::cmd {

void AddProfileCommand(CLI::App& app) {
  auto flags = std::make_shared<ProfileSourceFlags>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Measure traffic profiles (period, per-phase Gbit/s, confidence) from a pcap capture\n"
      "(through DPDK), RDMA NIC counters (sysfs), or switch port counter CSV files. Prints one\n"
      "JSON object per subject and line; its \"profile\" fits `phasor rank` jobs[].profile.");
  AddProfileSourceOptions(cmd, *flags);
  cmd->callback([flags] {
    for (const nlohmann::json& j : MeasureProfiles("profile", *flags))
      std::cout << j.dump() << "\n";
  });
}

}  // namespace phasor::cmd
