// phasord: the phasor placement daemon. Runs in the foreground, logging to
// stderr (journald under systemd); SIGTERM or SIGINT stops it cleanly.
//
//   phasord --config /etc/phasor/phasord.yaml [--ready-file PATH]
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "CLI/CLI.hpp"
#include "daemon/config.h"
#include "daemon/server.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnSignal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"phasord: the phasor placement daemon (ranking, offsets, profiles; see docs/phasord.md)"};
  std::string config_path;
  std::string ready_file;
  std::string log_level;
  app.add_option("--config,-c", config_path, "YAML config file (keys and defaults: docs/phasord.md)")->required();
  app.add_option("--ready-file", ready_file,
                 "once serving, write the bound endpoints as JSON here (for scripts and tests)");
  app.add_option("--log-level", log_level, "override the config's log_level");
  app.set_version_flag("--version", "phasord 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  absl::StatusOr<phasor::daemon::DaemonOptions> options = phasor::daemon::LoadDaemonConfig(config_path);
  if (!options.ok()) {
    std::cerr << "phasord: " << options.status().message() << "\n";
    return 2;
  }
  if (!log_level.empty()) options->log_level = log_level;
  if (absl::Status s = phasor::daemon::ValidateDaemonOptions(*options); !s.ok()) {
    std::cerr << "phasord: " << s.message() << "\n";
    return 2;
  }
  phasor::daemon::SetLogLevel(options->log_level);

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<std::unique_ptr<phasor::daemon::Daemon>> daemon = phasor::daemon::Daemon::Start(*options);
  if (!daemon.ok()) {
    std::cerr << "phasord: " << daemon.status().message() << "\n";
    return absl::IsInvalidArgument(daemon.status()) ? 2 : 1;
  }
  if (!ready_file.empty()) {
    const phasor::daemon::BoundEndpoints& e = (*daemon)->endpoints();
    const nlohmann::json ready = {{"request_endpoint", e.request},
                                  {"profile_endpoint", e.profile},
                                  {"offset_endpoint", e.offset},
                                  {"metrics_port", e.metrics_port},
                                  {"pid", static_cast<int64_t>(::getpid())}};
    // Written to a temporary name and renamed, so a reader never sees half a file.
    const std::string tmp = ready_file + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << ready.dump() << "\n";
    }
    if (std::rename(tmp.c_str(), ready_file.c_str()) != 0) {
      std::cerr << "phasord: cannot write --ready-file " << ready_file << "\n";
      return 1;
    }
  }
  (*daemon)->Run(g_stop);
  const bool lost = (*daemon)->lost_leadership();
  spdlog::info("phasord: stopping");
  daemon->reset();
  // Exit 3: this phasord led and lost the lead (state_store.backend etcd);
  // its supervisor restarts it as a standby.
  return lost ? 3 : 0;
}
