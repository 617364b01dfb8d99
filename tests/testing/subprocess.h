// Test helper: runs a command line through /bin/sh with given stdin and
// captures its exit status, stdout and stderr. For tests of the executables.
#ifndef PHASOR_TESTS_TESTING_SUBPROCESS_H_
#define PHASOR_TESTS_TESTING_SUBPROCESS_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace phasor::testing {

struct CommandResult {
  int exit_code = -1;  // the process's exit status, or 128 + signal
  std::string out;
  std::string err;
};

inline std::string ReadFileOrEmpty(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `command` (a shell command line) with `input` on its stdin.
inline CommandResult RunCommand(const std::string& command, const std::string& input = "") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("phasor-run-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "in", std::ios::binary) << input;
  const std::string line = "(" + command + ") < '" + (dir / "in").string() + "' > '" +
                           (dir / "out").string() + "' 2> '" + (dir / "err").string() + "'";
  const int status = std::system(line.c_str());
  CommandResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  r.out = ReadFileOrEmpty(dir / "out");
  r.err = ReadFileOrEmpty(dir / "err");
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace phasor::testing

#endif  // PHASOR_TESTS_TESTING_SUBPROCESS_H_
