// Helpers shared by the subcommands (declared in commands.h).
#include <fstream>
#include <iostream>
#include <sstream>

#include "cmd/phasor/commands.h"

namespace phasor::cmd {

void FailCommand(const std::string& command, int code, const std::string& message) {
  std::cerr << "phasor " << command << ": " << message << "\n";
  throw CLI::RuntimeError(code);
}

std::string ReadInputOrFail(const std::string& command, const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) FailCommand(command, kExitBadInput, "cannot read '" + path + "'");
  text << in.rdbuf();
  return text.str();
}

}  // namespace phasor::cmd
