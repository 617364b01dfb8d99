// The gNMI source's command-line options, shared by `phasor profile --gnmi`
// (and `phasor diagnose --gnmi`) and `phasor-probe --gnmi`: one set of
// flags, one translation to probe::GnmiOptions.
#ifndef PHASOR_CMD_COMMON_GNMI_FLAGS_H_
#define PHASOR_CMD_COMMON_GNMI_FLAGS_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "probe/gnmi_source.h"

namespace phasor::cmd {

struct GnmiFlags {
  std::vector<std::string> targets;  // [NAME=]HOST:PORT
  std::vector<std::string> paths;    // empty: the source's default (the two octet leaves)
  double sample_ms = 100;
  std::string encoding = "proto";
  std::string prefix_target;
  bool insecure = false;
  std::string ca, cert, key, server_name;
  std::string user, password_file;
  double connect_timeout_s = 5;
  double stall_timeout_s = 0;

  bool any() const { return !targets.empty(); }
};

// Registers --gnmi and the --gnmi-* options on `cmd`; returns --gnmi.
CLI::Option* AddGnmiOptions(CLI::App* cmd, GnmiFlags& flags);

// The source's options: the targets parsed, the password read from
// --gnmi-password-file or the PHASOR_GNMI_PASSWORD environment variable.
// InvalidArgument naming the option (a bad target, a password without
// --gnmi-user, a sample interval out of range), NotFound for an unreadable
// password file.
absl::StatusOr<probe::GnmiOptions> GnmiOptionsFromFlags(const GnmiFlags& flags, double duration_s);

}  // namespace phasor::cmd

#endif  // PHASOR_CMD_COMMON_GNMI_FLAGS_H_
