// The subcommands of the `phasor` executable. Each Add*Command registers one
// subcommand (with its options and --help) on the top-level app; its callback
// runs the command; on failure it prints one line to stderr and throws
// CLI::RuntimeError(exit code), which main() turns into the process status.
#ifndef PHASOR_CMD_PHASOR_COMMANDS_H_
#define PHASOR_CMD_PHASOR_COMMANDS_H_

#include <string>

#include "CLI/CLI.hpp"

namespace phasor::cmd {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;  // the input (file, JSON, option) is malformed
inline constexpr int kExitFailure = 1;   // anything else

// Prints "phasor <command>: <message>" as one line on stderr and ends the
// command with `code` (throws CLI::RuntimeError).
[[noreturn]] void FailCommand(const std::string& command, int code, const std::string& message);

// The whole text of `path`, or of stdin when `path` is "-"; a file that cannot
// be read fails the command with kExitBadInput ("cannot read '<path>'").
std::string ReadInputOrFail(const std::string& command, const std::string& path);

void AddRankCommand(CLI::App& app);
void AddKeygenCommand(CLI::App& app);
void AddStatusCommand(CLI::App& app);
void AddTopologyCommand(CLI::App& app);
void AddSimulateCommand(CLI::App& app);
void AddProfileCommand(CLI::App& app);
void AddDiagnoseCommand(CLI::App& app);
// `phasor slurm ...` and `phasor offset`.
void AddSlurmCommand(CLI::App& app);

}  // namespace phasor::cmd

#endif  // PHASOR_CMD_PHASOR_COMMANDS_H_
