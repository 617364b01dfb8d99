// phasor: network-aware placement for GPU clusters. One executable, one
// subcommand per job (`phasor rank`, ...); `phasor --help` lists them.
#include <cstdlib>
#include <iostream>

#include "CLI/CLI.hpp"
#include "cmd/phasor/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "phasor: ranks candidate placements of distributed training jobs by how well their\n"
      "traffic bursts interleave on shared links, and computes the shifts that interleave them."};
  app.set_version_flag("--version", "phasor 0.1.0");
  app.require_subcommand(1);
  phasor::cmd::AddRankCommand(app);
  phasor::cmd::AddKeygenCommand(app);
  phasor::cmd::AddStatusCommand(app);
  phasor::cmd::AddTopologyCommand(app);
  phasor::cmd::AddSimulateCommand(app);
  phasor::cmd::AddProfileCommand(app);
  phasor::cmd::AddDiagnoseCommand(app);
  phasor::cmd::AddSlurmCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    // A subcommand finished with a non-zero status (it printed its own message).
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : phasor::cmd::kExitBadInput;
  }
  return 0;
}
