// libFuzzer target: the simulator's input files. Byte 0 picks the reader:
//   - even: a scenario JSON document (`phasor simulate FILE`) through
//     ScenarioFromJson with the bundled model catalogue, and, when it is
//     small (at most 6 jobs, 400 iterations in all, 64 links), through
//     SimulateScenario (placer and fluid network on fuzzed numbers);
//   - odd: a trace CSV (`phasor simulate --trace`) through LoadTrace, every
//     format the header selects.
// Checked: OK, InvalidArgument or ResourceExhausted (NotFound for an unreadable trace is a bug
// here: the file is written first), never a crash; a loaded trace's jobs
// have finite, non-negative arrivals in order, a positive GPU count and a
// positive duration.
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "sim/scenario.h"
#include "sim/trace_replay.h"

namespace {

namespace sim = phasor::sim;

void Check(const absl::Status& s) {
  // ResourceExhausted: the placer's limits (a scenario ranked over them).
  if (s.ok() || absl::IsInvalidArgument(s) || absl::IsResourceExhausted(s)) return;
  std::fprintf(stderr, "inputs_fuzz: unexpected status %s\n", s.ToString().c_str());
  std::abort();
}

const sim::ModelCatalog& Models() {
  static const sim::ModelCatalog* models = [] {
    absl::StatusOr<sim::ModelCatalog> m = sim::ModelCatalog::Load(PHASOR_FUZZ_MODELS);
    if (!m.ok()) {
      std::fprintf(stderr, "inputs_fuzz: %s\n", m.status().ToString().c_str());
      std::abort();
    }
    return new sim::ModelCatalog(*std::move(m));
  }();
  return *models;
}

void ScenarioText(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return;
  absl::StatusOr<sim::Scenario> scenario = sim::ScenarioFromJson(doc, &Models());
  Check(scenario.status());
  if (!scenario.ok()) return;
  uint64_t iterations = 0;
  for (const sim::ScenarioJob& j : scenario->jobs) iterations += j.iterations;
  if (scenario->jobs.size() > 6 || iterations > 400 || scenario->links.size() > 64) return;
  for (const sim::ScenarioJob& j : scenario->jobs) {
    if (!j.servers.empty()) return;  // server form needs a topology (SimulateTopology)
  }
  absl::StatusOr<sim::Comparison> c = sim::SimulateScenario(*scenario, {});
  Check(c.status());
  if (c.ok() && !(std::isfinite(c->phasor.mean_iteration_us) && std::isfinite(c->baseline.mean_iteration_us))) {
    std::fprintf(stderr, "inputs_fuzz: a simulated mean iteration time is not finite\n");
    std::abort();
  }
}

void TraceText(const std::string& text) {
  static const std::string path = [] {
    char tmpl[] = "/dev/shm/phasor-trace-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    static std::string dir = tmpl;
    std::atexit([] { std::remove((dir + "/trace.csv").c_str()); rmdir(dir.c_str()); });
    return dir + "/trace.csv";
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  sim::TraceLoadOptions options;
  options.models = {"resnet50", "bert"};
  options.max_jobs = 2000;
  absl::StatusOr<std::vector<sim::TraceJob>> jobs = sim::LoadTrace(path, options);
  Check(jobs.status());
  if (!jobs.ok()) return;
  double last = 0;
  for (const sim::TraceJob& j : *jobs) {
    if (!(std::isfinite(j.arrival_us) && j.arrival_us >= last) || j.gpus == 0 ||
        !(std::isfinite(j.duration_s) && j.duration_s > 0)) {
      std::fprintf(stderr, "inputs_fuzz: trace job '%s': arrival %g, gpus %u, duration %g\n", j.id.c_str(),
                   j.arrival_us, j.gpus, j.duration_s);
      std::abort();
    }
    last = j.arrival_us;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    ScenarioText(text);
  } else {
    TraceText(text);
  }
  return 0;
}
