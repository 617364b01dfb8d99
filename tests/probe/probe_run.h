// Test helper for the phasor-probe subprocess tests (one DPDK EAL per
// process): the EAL arguments for a pcap vdev, running the probe and reading
// its stdout JSON lines and stderr summary lines. The including test target
// defines PHASOR_PROBE_BIN.
#ifndef PHASOR_TESTS_PROBE_PROBE_RUN_H_
#define PHASOR_TESTS_PROBE_PROBE_RUN_H_

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/testing/subprocess.h"

#ifndef PHASOR_PROBE_BIN
#error "tests/probe/probe_run.h needs PHASOR_PROBE_BIN (the phasor-probe executable)"
#endif

namespace phasor::probe::testing {

// EAL arguments without hugepages, PCI or telemetry; append the vdev.
inline constexpr char kEal[] = " -- --no-huge --no-shconf -m 256 --no-pci --no-telemetry --log-level=error";

struct ProbeRun {
  phasor::testing::CommandResult r;
  std::map<std::string, nlohmann::json> by_subject;  // stdout's JSON lines
  double seconds = 0;
};

inline ProbeRun RunProbe(const std::string& args) {
  ProbeRun run;
  const auto start = std::chrono::steady_clock::now();
  run.r = phasor::testing::RunCommand(std::string(PHASOR_PROBE_BIN) + " " + args);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::istringstream lines(run.r.out);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << line;
    if (!j.is_discarded() && j.contains("subject")) run.by_subject[j["subject"]] = j;
  }
  return run;
}

// The stderr line that starts with {"<key>" (the publisher's and the
// watcher's summaries), as the object under `key`; null when absent.
inline nlohmann::json Summary(const std::string& err, const std::string& key) {
  const size_t at = err.find("{\"" + key + "\"");
  if (at == std::string::npos) return nullptr;
  return nlohmann::json::parse(err.substr(at, err.find('\n', at) - at), nullptr, false)[key];
}

inline int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace phasor::probe::testing

#endif  // PHASOR_TESTS_PROBE_PROBE_RUN_H_
