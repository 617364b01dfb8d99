// The tests' gNMI target (tests/probe/gnmi_target.py) as a process: started
// with a JSON config in its own temp dir, on an ephemeral port of 127.0.0.1
// (the target binds port 0 and writes the port it got), stopped by its pid.
// Its log (what it sent, each Subscribe call) is read back by the tests.
#ifndef PHASOR_TESTS_PROBE_GNMI_TARGET_PROCESS_H_
#define PHASOR_TESTS_PROBE_GNMI_TARGET_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"

namespace phasor::probe::testing {

// A temp dir removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "phasor-gnmi-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class GnmiTargetProcess {
 public:
  // Starts the target with `config` (port_file and log are filled in).
  // error() says what went wrong when port() is 0.
  explicit GnmiTargetProcess(nlohmann::json config) {
    if (dir_.path().empty()) {
      error_ = "no temp dir";
      return;
    }
    const std::string python = PHASOR_GNMI_PYTHON;
    if (python.empty()) {
      error_ =
          "no python3 with grpc and google.protobuf was found when configuring (Debian's "
          "python3-grpcio, python3-protobuf: scripts/install-deps.sh)";
      return;
    }
    config["port_file"] = dir_.File("port");
    config["log"] = dir_.File("log.jsonl");
    std::ofstream(dir_.File("config.json")) << config.dump();
    const std::string script = PHASOR_GNMI_TARGET_SCRIPT;
    const std::string pythonpath = PHASOR_GNMI_PYTHONPATH;
    const std::string config_path = dir_.File("config.json");
    const std::string stderr_path = dir_.File("stderr");
    // posix_spawn, not fork: the test process runs gRPC's threads.
    std::vector<std::string> env_strings = {"PYTHONPATH=" + pythonpath};
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("PYTHONPATH=", 0) != 0) env_strings.push_back(*e);
    }
    std::vector<char*> env;
    for (std::string& e : env_strings) env.push_back(e.data());
    env.push_back(nullptr);
    std::vector<std::string> arg_strings = {python, script, config_path};
    std::vector<char*> argv;
    for (std::string& a : arg_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    const int rc = ::posix_spawn(&pid_, python.c_str(), &actions, nullptr, argv.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      error_ = "cannot start " + python + ": " + std::strerror(rc);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(dir_.File("port"));
      if (in >> port_ && port_ > 0) return;
      port_ = 0;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        error_ = "the gNMI target exited: " + Stderr();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    error_ = "the gNMI target did not listen within 20 s: " + Stderr();
  }

  ~GnmiTargetProcess() { Stop(); }
  GnmiTargetProcess(const GnmiTargetProcess&) = delete;
  GnmiTargetProcess& operator=(const GnmiTargetProcess&) = delete;

  // Stops the target by its pid (SIGTERM, then SIGKILL after 5 s).
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
  }

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& error() const { return error_; }
  const TempDir& dir() const { return dir_; }

  // The log's records, in order.
  std::vector<nlohmann::json> Log() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir_.File("log.jsonl"));
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) out.push_back(std::move(j));
    }
    return out;
  }

  std::string Stderr() const {
    std::ifstream in(dir_.File("stderr"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string error_;
};

}  // namespace phasor::probe::testing

#endif  // PHASOR_TESTS_PROBE_GNMI_TARGET_PROCESS_H_
