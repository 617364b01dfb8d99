#include "cmd/common/gnmi_flags.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace phasor::cmd {

CLI::Option* AddGnmiOptions(CLI::App* cmd, GnmiFlags& flags) {
  CLI::Option* gnmi =
      cmd->add_option(
             "--gnmi", flags.targets,
             "gNMI targets [NAME=]HOST:PORT[,...] (a switch's gNMI server: EOS 6030, SONiC "
             "8080, Cumulus 9339): subscribe to interface octet counters (STREAM, SAMPLE "
             "every --gnmi-sample-ms) for --duration-s")
          ->delimiter(',');
  cmd->add_option("--gnmi-path", flags.paths,
                  "gNMI subscription path (repeatable; default the in-octets and out-octets "
                  "leaves of /interfaces/interface[name=*]/state/counters)");
  cmd->add_option("--gnmi-sample-ms", flags.sample_ms,
                  "gNMI SAMPLE interval in ms (at least 10 samples per iteration)")
      ->capture_default_str();
  cmd->add_option("--gnmi-encoding", flags.encoding, "gNMI encoding")
      ->check(CLI::IsMember({"proto", "json", "json_ietf", "ascii"}))
      ->capture_default_str();
  cmd->add_option("--gnmi-prefix-target", flags.prefix_target,
                  "gNMI prefix target (SONiC: OC-YANG for OpenConfig paths, COUNTERS_DB for "
                  "COUNTERS/Ethernet*)");
  cmd->add_flag("--gnmi-insecure", flags.insecure,
                "gNMI over plaintext HTTP/2 (EOS's default transport, labs); default TLS");
  cmd->add_option("--gnmi-ca", flags.ca,
                  "PEM file of the CA that signed the targets' certificates (default: system "
                  "roots)");
  cmd->add_option("--gnmi-cert", flags.cert,
                  "PEM client certificate (mutual TLS, with --gnmi-key)");
  cmd->add_option("--gnmi-key", flags.key, "PEM client private key");
  cmd->add_option("--gnmi-server-name", flags.server_name,
                  "the name to check in the targets' certificates (default: the host)");
  cmd->add_option("--gnmi-user", flags.user, "gNMI username (sent as RPC metadata)");
  cmd->add_option("--gnmi-password-file", flags.password_file,
                  "file whose first line is the gNMI password (or set PHASOR_GNMI_PASSWORD)");
  cmd->add_option("--gnmi-connect-timeout-s", flags.connect_timeout_s,
                  "longest wait for one connection to a target")
      ->capture_default_str();
  cmd->add_option("--gnmi-stall-timeout-s", flags.stall_timeout_s,
                  "restart a stream silent this long (0: max(5 s, 20 sample intervals))")
      ->capture_default_str();
  return gnmi;
}

absl::StatusOr<probe::GnmiOptions> GnmiOptionsFromFlags(const GnmiFlags& f, double duration_s) {
  probe::GnmiOptions o;
  for (const std::string& text : f.targets) {
    auto t = probe::ParseGnmiTarget(text);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("--gnmi: ", t.status().message()));
    o.targets.push_back(*t);
  }
  if (o.targets.empty()) return absl::InvalidArgumentError("--gnmi: no target given");
  if (!f.paths.empty()) o.paths = f.paths;
  if (!(f.sample_ms >= 1 && f.sample_ms <= 3600000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gnmi-sample-ms: ", f.sample_ms, " is outside 1 .. 3600000"));
  }
  o.sample_interval_us = std::llround(f.sample_ms * 1000);
  o.encoding = f.encoding;
  o.prefix_target = f.prefix_target;
  o.insecure = f.insecure;
  o.ca_file = f.ca;
  o.cert_file = f.cert;
  o.key_file = f.key;
  o.tls_server_name = f.server_name;
  if (f.insecure &&
      (!f.ca.empty() || !f.cert.empty() || !f.key.empty() || !f.server_name.empty())) {
    return absl::InvalidArgumentError(
        "--gnmi-insecure: --gnmi-ca, --gnmi-cert, --gnmi-key and --gnmi-server-name need TLS");
  }
  if (f.cert.empty() != f.key.empty()) {
    return absl::InvalidArgumentError("--gnmi-cert and --gnmi-key: give both or neither");
  }
  o.username = f.user;
  if (!f.password_file.empty()) {
    std::ifstream in(f.password_file);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("--gnmi-password-file: cannot read '", f.password_file, "'"));
    }
    std::getline(in, o.password);
  } else if (const char* env = std::getenv("PHASOR_GNMI_PASSWORD"); env != nullptr) {
    o.password = env;
  }
  if (!o.password.empty() && o.username.empty()) {
    return absl::InvalidArgumentError(
        "--gnmi-user: a password (--gnmi-password-file or PHASOR_GNMI_PASSWORD) needs a username");
  }
  if (!(f.connect_timeout_s > 0) || !(f.stall_timeout_s >= 0)) {
    return absl::InvalidArgumentError(
        "--gnmi-connect-timeout-s and --gnmi-stall-timeout-s: must be positive (stall: or 0)");
  }
  o.connect_timeout_us = std::llround(f.connect_timeout_s * 1e6);
  o.stall_timeout_us = std::llround(f.stall_timeout_s * 1e6);
  o.duration_us = std::llround(duration_s * 1e6);
  return o;
}

}  // namespace phasor::cmd
