// Fixed-placement what-if runs (`phasor simulate FILE`): the same jobs on the
// same links simulated twice, once as a baseline (every job starts at a
// random, seeded phase and runs free) and once with phasor (the placer ranks
// the placement and each job starts at its shift; SPEC section 7's modes
// `once` and `pace`), and the comparison of the two.
//
// The traffic profile phasor ranks for a job comes from the same job
// description the simulator runs: compute_us of Down, then comm_bytes at
// nic_gbps (a square wave), so placer and simulator agree on what a job is.
//
// Pure functions of their inputs (randomness comes from the scenario's seed);
// thread-safe.
#ifndef PHASOR_SIM_SCENARIO_H_
#define PHASOR_SIM_SCENARIO_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "placer/traffic_profile.h"
#include "sim/fluid_network.h"
#include "models/model_catalog.h"

namespace phasor::sim {

// The model catalogue is its own module (models/); the simulator reads it
// under these names.
using models::CanonicalPlacement;
using models::JobProfile;
using models::kMeasuredNicGbps;
using models::ModelCatalog;
using models::ModelTiming;

// How phasor's shifts are enforced (SPEC section 7).
enum class ShiftMode {
  kOnce,  // delay the first iteration to the job's slot, then run free
  kPace,  // wait for the next slot every iteration (period rounded up to the quantum)
};

struct ScenarioJob {
  std::string id;
  double compute_us = 0;
  double comm_bytes = 0;
  double nic_gbps = 0;
  std::map<std::string, double> links;  // link form
  std::vector<std::string> servers;     // server form (needs a topology)
  uint64_t iterations = 100;
  // The baseline run's start phase (us); unset: random in [0, period) from
  // the scenario's seed (the phasor run always starts the job at its shift).
  std::optional<double> start_us;
};

struct Scenario {
  std::vector<SimLink> links;
  std::vector<ScenarioJob> jobs;
  uint64_t seed = 1;
  ShiftMode mode = ShiftMode::kOnce;
  uint32_t quantum_us = 1000;  // the placer's quantum
  // Report links no job loads (true for the link form; a topology has many).
  bool report_idle_links = true;
};

// Parses the scenario document:
//   {"links": [{"id", "capacity_gbps"}],
//    "jobs": [{"id", "compute_us", "comm_bytes", "nic_gbps", "links": {link: share},
//              "servers": [...], "iterations",
//              "model", "placement", "local_bsz"}],
//    "seed", "mode": "once"|"pace", "quantum_us"}
// A job names either raw numbers (compute_us, comm_bytes, nic_gbps) or a
// measured model ("model" and "placement", optional "local_bsz" and
// "nic_gbps"), looked up in `models` (may be null: then "model" is an error).
// Ranges: one iteration (compute_us + comm_bytes at nic_gbps) at most
// placer::kMaxPeriodUs (an hour), iterations 1..kMaxScenarioIterations,
// quantum_us 1..1000000, every number finite.
// Errors: InvalidArgument whose message starts with the field's path
// ("jobs[0].nic_gbps: must be > 0").
inline constexpr uint64_t kMaxScenarioIterations = 10'000'000;
absl::StatusOr<Scenario> ScenarioFromJson(const nlohmann::json& doc, const ModelCatalog* models);


struct IterationSummary {
  double mean = 0, p50 = 0, p99 = 0;
};

// Percentiles by the nearest-rank method (p in (0, 100]); 0 for no values.
double Percentile(std::vector<double> values, double p);
IterationSummary Summarize(const std::vector<double>& values);

struct JobRun {
  std::string id;
  IterationSummary iteration_us;
  double start_us = 0;
  double finish_us = 0;
  uint32_t shift_us = 0;  // phasor runs
  std::vector<double> iterations;  // every iteration time (for plots)
};

struct LinkRun {
  std::string id;
  double utilisation = 0;        // bytes carried / (capacity x run length)
  double overload_fraction = 0;  // time demand exceeded capacity / run length
  double excess_bytes = 0;       // bytes carried while it did (ECN-mark proxy)
};

struct RunResult {
  std::vector<JobRun> jobs;
  std::vector<LinkRun> links;
  double mean_iteration_us = 0;  // mean of the jobs' mean iteration times
  double p99_iteration_us = 0;   // p99 over every iteration of every job
  double excess_bytes = 0;       // sum over links
  double length_us = 0;          // 0 .. the last job's end
  double score = 1;              // phasor runs: the placement's score from the placer
  std::map<std::string, std::vector<LoadPoint>> load;  // recorded links
};

struct Comparison {
  RunResult baseline;
  RunResult phasor;
  double speedup_mean = 1;  // baseline / phasor
  double speedup_p99 = 1;
};

struct SimulateOptions {
  // Links whose load over one period (of the first job crossing them, after
  // `record_after_periods` of its periods) is recorded in both runs.
  std::vector<std::string> record_links;
  double record_after_periods = 5;
};

// Runs both modes. The scenario must be in link form (servers resolved).
// Errors: InvalidArgument for a bad scenario (named field), or when the
// placer rejects the placement (its reason).
absl::StatusOr<Comparison> SimulateScenario(const Scenario& scenario,
                                            const SimulateOptions& options = {});

// The output contract of `phasor simulate`.
nlohmann::ordered_json ComparisonToJson(const Comparison& comparison);
// A readable table of both runs and the speedups.
std::string ComparisonTable(const Comparison& comparison);

}  // namespace phasor::sim

#endif  // PHASOR_SIM_SCENARIO_H_
