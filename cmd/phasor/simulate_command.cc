// `phasor simulate`: what-if runs of the fluid simulator (docs/simulator.md).
//   phasor simulate FILE [--topology T.yaml] [--table]      fixed placement
//   phasor simulate --trace CSV --scheduler S --plugin on|off|cassini ...   trace replay
//   phasor simulate --workload cassini --compare ...   generated jobs, three modes
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "cmd/phasor/commands.h"
#include "nlohmann/json.hpp"
#include "models/model_catalog.h"
#include "sim/poisson_workload.h"
#include "sim/scenario.h"
#include "sim/topology_scenario.h"
#include "sim/trace_replay.h"

namespace phasor::cmd {
namespace {

struct SimulateFlags {
  std::string input;
  std::string topology;
  std::string models = "data/models";
  bool table = false;
  std::string trace;
  std::string scheduler = "themis";
  std::string plugin = "on";
  std::string fabric = "leaf-spine:24";
  double hours = 0;
  uint32_t max_jobs = 0;
  uint32_t top_k = 4;
  uint64_t seed = 1;
  std::string mode = "once";
  std::string series;
  double median_duration_s = 600;
  double record_at_s = -1;
  bool progress = true;
  double min_gain = 0.05;
  double min_headroom = 0.1;
  uint64_t random_seed = 0;
  double duration_jitter = 0;
  uint64_t jitter_seed = 0;
  std::vector<std::string> duration_factors;
  double start_delay_min_gain = sim::TraceReplayOptions{}.start_delay_min_gain;
  std::string keep_packing = placer::RankingPolicyOptions{}.keep_packing ? "on" : "off";
  std::string ring_order = placer::RingOrderModeName(sim::TraceReplayOptions{}.ring_order);
  uint32_t own_candidates = sim::TraceReplayOptions{}.own_candidates;
  std::string shifts = sim::TraceReplayOptions{}.shifts ? "on" : "off";
  std::string less_at_risk = placer::RankingPolicyOptions{}.prefer_less_at_risk ? "on" : "off";
  std::string pin_running = sim::TraceReplayOptions{}.pin_running ? "on" : "off";
  std::string running_profiles = sim::TraceReplayOptions{}.measured_running_profiles ? "measured" : "isolated";
  std::string trust_choice_gains = "off";
  double shift_confidence = placer::RankingPolicyOptions{}.shift_confidence;
  std::string realign = "off";
  std::string realign_regrid = sim::TraceReplayOptions{}.realign_regrid ? "on" : "off";
  double realign_min_interval_s = sim::TraceReplayOptions{}.realign_min_interval_s;
  std::string reslot = "on";
  std::string workload;
  uint32_t jobs = 40;
  double load = 0.9;
  std::vector<uint32_t> job_gpus = {2, 4, 6, 8};
  bool compare = false;
  double arrival_scale = 1;
  double duration_scale = 1;
  uint32_t min_gpus = 0, max_gpus = 0;
};

[[noreturn]] void FailSimulate(int code, const std::string& message) {
  FailCommand("simulate", code, message);
}

std::string ReadFile(const std::string& path) { return ReadInputOrFail("simulate", path); }

int CodeOf(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
                 status.code() == absl::StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

void RunFixed(const SimulateFlags& flags) {
  const std::string text = ReadFile(flags.input);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) FailSimulate(kExitBadInput, flags.input + ": malformed JSON");
  // The model data is optional: only a job that names a model needs it.
  absl::StatusOr<sim::ModelCatalog> models = sim::ModelCatalog::Load(flags.models);
  absl::StatusOr<sim::Scenario> scenario =
      sim::ScenarioFromJson(doc, models.ok() ? &*models : nullptr);
  if (!scenario.ok()) FailSimulate(CodeOf(scenario.status()), std::string(scenario.status().message()));
  if (!flags.topology.empty()) {
    absl::Status resolved = sim::ResolveServersFromFile(flags.topology, *scenario);
    if (!resolved.ok()) FailSimulate(CodeOf(resolved), std::string(resolved.message()));
  }
  absl::StatusOr<sim::Comparison> comparison = sim::SimulateScenario(*scenario);
  if (!comparison.ok()) FailSimulate(CodeOf(comparison.status()), std::string(comparison.status().message()));
  std::cout << sim::ComparisonToJson(*comparison).dump(2) << "\n";
  if (flags.table) std::cerr << sim::ComparisonTable(*comparison);
}

void RunTrace(const SimulateFlags& flags) {
  sim::TraceReplayOptions options;
  options.trace_path = flags.trace;
  options.models_dir = flags.models;
  options.scheduler = flags.scheduler;
  if (flags.plugin != "on" && flags.plugin != "off" && flags.plugin != "random" &&
      flags.plugin != "cassini") {
    FailSimulate(kExitBadInput, "--plugin: must be on, off, random or cassini");
  }
  options.plugin = flags.plugin == "on";
  options.random_start = flags.plugin == "random";
  options.random_start_seed = flags.random_seed;
  options.duration_jitter = flags.duration_jitter;
  options.duration_jitter_seed = flags.jitter_seed;
  options.start_delay_min_gain = flags.start_delay_min_gain;
  if (flags.keep_packing != "on" && flags.keep_packing != "off") FailSimulate(kExitBadInput, "--keep-packing: must be on or off");
  options.ranking_policy.keep_packing = flags.keep_packing == "on";
  absl::StatusOr<placer::RingOrderMode> ring_order = placer::ParseRingOrderMode(flags.ring_order, "--ring-order");
  if (!ring_order.ok()) FailSimulate(kExitBadInput, std::string(ring_order.status().message()));
  options.ring_order = *ring_order;
  if (flags.own_candidates > placer::kMaxOwnCandidates) {
    FailSimulate(kExitBadInput, "--own-candidates: must be at most " + std::to_string(placer::kMaxOwnCandidates));
  }
  options.own_candidates = flags.own_candidates;
  if (flags.shifts != "on" && flags.shifts != "off") FailSimulate(kExitBadInput, "--shifts: must be on or off");
  options.shifts = flags.shifts == "on";
  if (flags.less_at_risk != "on" && flags.less_at_risk != "off") {
    FailSimulate(kExitBadInput, "--less-at-risk: must be on or off");
  }
  options.ranking_policy.prefer_less_at_risk = flags.less_at_risk == "on";
  if (flags.pin_running != "on" && flags.pin_running != "off") FailSimulate(kExitBadInput, "--pin-running: must be on or off");
  options.pin_running = flags.pin_running == "on";
  if (flags.running_profiles != "isolated" && flags.running_profiles != "measured") {
    FailSimulate(kExitBadInput, "--running-profiles: must be isolated or measured");
  }
  options.measured_running_profiles = flags.running_profiles == "measured";
  for (const std::string& entry : flags.duration_factors) {
    const size_t eq = entry.rfind('=');
    double factor = 0;
    if (eq == std::string::npos || eq == 0 || !absl::SimpleAtod(entry.substr(eq + 1), &factor)) {
      FailSimulate(kExitBadInput, "--duration-factor: '" + entry + "' is not ID=FACTOR");
    }
    options.duration_factors[entry.substr(0, eq)] = factor;
  }
  options.fabric = flags.fabric;
  options.topology_path = flags.topology;
  options.hours = flags.hours;
  options.max_jobs = flags.max_jobs;
  options.top_k = flags.top_k;
  options.seed = flags.seed;
  if (flags.mode != "once" && flags.mode != "pace") FailSimulate(kExitBadInput, "--mode: must be once or pace");
  options.pace = flags.mode == "pace";
  options.workload_median_duration_s = flags.median_duration_s;
  options.record_at_s = flags.record_at_s;
  options.progress = flags.progress ? &std::cerr : nullptr;
  options.ranking_policy.min_gain = flags.min_gain;
  options.ranking_policy.min_headroom = flags.min_headroom;
  options.ranking_policy.shift_confidence = flags.shift_confidence;
  if (flags.trust_choice_gains != "on" && flags.trust_choice_gains != "off") {
    FailSimulate(kExitBadInput, "--trust-choice-gains: must be on or off");
  }
  options.ranking_policy.trust_choice_gains = flags.trust_choice_gains == "on";
  if (flags.realign != "on" && flags.realign != "off") FailSimulate(kExitBadInput, "--realign: must be on or off");
  if (flags.reslot != "on" && flags.reslot != "off") FailSimulate(kExitBadInput, "--reslot: must be on or off");
  options.realign = flags.realign == "on";
  if (flags.realign_regrid != "on" && flags.realign_regrid != "off") {
    FailSimulate(kExitBadInput, "--realign-regrid: must be on or off");
  }
  options.realign_regrid = flags.realign_regrid == "on";
  options.realign_min_interval_s = flags.realign_min_interval_s;
  options.pace_reslot = flags.reslot == "on";
  options.arrival_scale = flags.arrival_scale;
  options.duration_scale = flags.duration_scale;
  options.min_gpus = flags.min_gpus;
  options.max_gpus = flags.max_gpus;
  if (!flags.workload.empty()) {
    if (flags.workload != "cassini") FailSimulate(kExitBadInput, "--workload: must be cassini");
    absl::StatusOr<sim::ModelCatalog> models = sim::ModelCatalog::Load(flags.models);
    if (!models.ok()) FailSimulate(CodeOf(models.status()), std::string(models.status().message()));
    sim::PoissonWorkloadOptions workload;
    workload.seed = flags.seed;
    workload.jobs = flags.jobs;
    workload.load = flags.load;
    workload.median_duration_s = flags.median_duration_s;
    workload.gpus = flags.job_gpus;
    // The load is offered to the fabric's GPUs (the generated fabric's N x GPUS).
    absl::StatusOr<uint32_t> gpus = sim::FabricGpus(options);
    if (!gpus.ok()) FailSimulate(CodeOf(gpus.status()), std::string(gpus.status().message()));
    workload.cluster_gpus = *gpus;
    absl::StatusOr<std::vector<sim::TraceJob>> jobs = sim::GeneratePoissonWorkload(workload, *models);
    if (!jobs.ok()) FailSimulate(CodeOf(jobs.status()), std::string(jobs.status().message()));
    options.jobs = *std::move(jobs);
  }
  if (flags.compare) {
    absl::StatusOr<sim::ModeComparison> comparison = sim::CompareModes(options);
    if (!comparison.ok()) FailSimulate(CodeOf(comparison.status()), std::string(comparison.status().message()));
    std::cout << sim::ModeComparisonToJson(*comparison).dump(2) << "\n";
    if (flags.table) std::cerr << sim::ModeComparisonTable(*comparison);
    if (!flags.series.empty()) {
      std::ofstream out(flags.series);
      if (!out) FailSimulate(kExitFailure, "cannot write '" + flags.series + "'");
      nlohmann::ordered_json series = {{"off", sim::TraceSeriesToJson(comparison->off)},
                                       {"cassini", sim::TraceSeriesToJson(comparison->cassini)},
                                       {"phasor", sim::TraceSeriesToJson(comparison->phasor)}};
      out << series.dump() << "\n";
    }
    return;
  }
  if (flags.plugin == "cassini") options = sim::CassiniMode(std::move(options));
  absl::StatusOr<sim::TraceReport> report = sim::ReplayTrace(options);
  if (!report.ok()) FailSimulate(CodeOf(report.status()), std::string(report.status().message()));
  std::cout << sim::TraceReportToJson(*report).dump(2) << "\n";
  if (flags.table) std::cerr << sim::TraceReportTable(*report);
  if (!flags.series.empty()) {
    std::ofstream out(flags.series);
    if (!out) FailSimulate(kExitFailure, "cannot write '" + flags.series + "'");
    out << sim::TraceSeriesToJson(*report).dump() << "\n";
  }
}

}  // namespace

void AddSimulateCommand(CLI::App& app) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Simulate jobs sharing links (fluid max-min model) with and without phasor's shifts.\n"
      "Fixed placement: phasor simulate FILE (JSON: links, jobs, seed; see docs/simulator.md).\n"
      "Trace replay: phasor simulate --trace CSV --scheduler themis|pollux|consolidate|kube|slurm-tree|volcano "
      "--plugin on|off.");
  cmd->add_option("file", flags->input, "Scenario JSON ('-' for stdin)");
  cmd->add_option("--topology", flags->topology,
                  "Topology YAML: jobs may give \"servers\" (routed, ring all-reduce)");
  cmd->add_option("--models", flags->models, "Model data folder")->capture_default_str();
  cmd->add_flag("--table", flags->table, "Print a readable table to stderr");
  cmd->add_option("--trace", flags->trace,
                  "Replay a job trace (Philly CSV or a Pollux workload CSV)");
  cmd->add_option("--scheduler", flags->scheduler,
                  "themis, pollux, consolidate (engines), kube, slurm-tree or volcano (cluster managers)")
      ->capture_default_str();
  cmd->add_option("--plugin", flags->plugin, "on: phasor ranks the top-K and sets shifts; random: off, each multi-server job starts "
                  "after a random delay under its period (the noise control); cassini: the paper's algorithm "
                  "(loop candidates discarded, once, no pins, no re-alignment, score order)")
      ->capture_default_str();
  cmd->add_option("--fabric", flags->fabric,
                  "Generated fabric when no --topology: leaf-spine:N[:OVERSUB[:PER_LEAF[:GPUS]]] "
                  "(default 8 servers per leaf, 4 GPUs per server; 50G NICs)")
      ->capture_default_str();
  cmd->add_option("--hours", flags->hours, "Replay only this many hours of arrivals (0: all)");
  cmd->add_option("--max-jobs", flags->max_jobs, "Replay at most this many jobs (0: all)");
  cmd->add_option("--top-k", flags->top_k, "Candidates per scheduling round")->capture_default_str();
  cmd->add_option("--seed", flags->seed, "Seed (phases, model assignment)")->capture_default_str();
  cmd->add_option("--mode", flags->mode, "Shift enforcement: once or pace")->capture_default_str();
  cmd->add_option("--series", flags->series,
                  "Trace replay: write iteration times and link load series (JSON) here");
  cmd->add_option("--median-duration", flags->median_duration_s,
                  "Pollux workloads: median isolated run time of a job, s")
      ->capture_default_str();
  cmd->add_option("--record-at", flags->record_at_s,
                  "Trace replay: start of the 2 s load-series window, s (default: median arrival)");
  cmd->add_flag("!--no-progress", flags->progress, "No progress bar on stderr");
  cmd->add_option("--workload", flags->workload,
                  "Replay generated jobs instead of --trace: cassini (Poisson arrivals of VGG-, ResNet-, "
                  "BERT-, GPT-2-, DLRM-like data-parallel jobs)");
  cmd->add_option("--jobs", flags->jobs, "--workload: jobs to generate")->capture_default_str();
  cmd->add_option("--load", flags->load, "--workload: offered GPU-time / cluster GPU-time")
      ->capture_default_str();
  cmd->add_option("--job-gpus", flags->job_gpus, "--workload: job sizes in GPUs, drawn uniformly")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--compare", flags->compare,
                "Trace replay: run plugin off, cassini and phasor (on) on the same jobs and print the "
                "three-mode comparison (--series writes the three series)");
  cmd->add_option("--arrival-scale", flags->arrival_scale,
                  "Trace files: divide arrival times by this (2 = twice the arrival rate)")
      ->capture_default_str();
  cmd->add_option("--duration-scale", flags->duration_scale,
                  "Trace files: multiply isolated run times by this (with --arrival-scale 1/x: the same "
                  "load, compressed in time)")
      ->capture_default_str();
  cmd->add_option("--min-gpus", flags->min_gpus, "Trace files: drop jobs of fewer GPUs (0: keep)");
  cmd->add_option("--max-gpus", flags->max_gpus, "Trace files: drop jobs of more GPUs (0: keep)");
  cmd->add_option("--min-gain", flags->min_gain,
                  "Trace replay: predicted score gain another candidate needs to overtake the host's "
                  "first (< 0: rank by score alone)")
      ->capture_default_str();
  cmd->add_option("--min-headroom", flags->min_headroom,
                  "Trace replay: free capacity-time a contended link needs for a trusted prediction")
      ->capture_default_str();
  cmd->add_option("--shift-confidence", flags->shift_confidence,
                  "Trace replay: share of a candidate's predicted gain from its shifts (its score above "
                  "its links' random-phase score) that counts, 0..1")
      ->capture_default_str();
  cmd->add_option("--trust-choice-gains", flags->trust_choice_gains,
                  "Trace replay: a gain in the random-phase score alone overtakes without the headroom and "
                  "loop tests, on|off")
      ->capture_default_str();
  cmd->add_option("--random-seed", flags->random_seed,
                  "--plugin random: seed of the start delays (0: --seed), for replicates of the noise control")
      ->capture_default_str();
  cmd->add_option("--duration-jitter", flags->duration_jitter,
                  "Trace replay: multiply each job's run time by a seeded factor in [1-F, 1+F], F in [0, 0.5] "
                  "(the same jobs in every mode: a noise control)")
      ->capture_default_str();
  cmd->add_option("--jitter-seed", flags->jitter_seed,
                  "--duration-jitter: seed of the factors (0: --seed), for replicates of the control")
      ->capture_default_str();
  cmd->add_option("--duration-factor", flags->duration_factors,
                  "Trace replay: ID=FACTOR[,ID=FACTOR...], those jobs' run times times FACTOR in (0, 10] "
                  "(a targeted noise control)")
      ->delimiter(',');
  cmd->add_option("--start-delay-min-gain", flags->start_delay_min_gain,
                  "Trace replay: a new job waits for its slot only when its shifts gain more than this over "
                  "random phases on one of its links (< 0: always wait)")
      ->capture_default_str();
  cmd->add_option("--ring-order", flags->ring_order,
                  "Plugin on: whose rank order a new job's ring follows: phasor (racks together, off the\n"
                  "running jobs' links) or host (as proposed); default phasor")
      ->capture_default_str();
  cmd->add_option("--own-candidates", flags->own_candidates,
                  "Plugin on: candidates phasor adds of its own from the wholly free servers (0: none)")
      ->capture_default_str();
  cmd->add_option("--shifts", flags->shifts,
                  "Plugin on: new jobs start at their slots (on) or at once (off: placement alone)")
      ->capture_default_str();
  cmd->add_option("--less-at-risk", flags->less_at_risk,
                  "Plugin on: between equal predictions, the candidate with less at risk goes first")
      ->capture_default_str();
  cmd->add_option("--keep-packing", flags->keep_packing,
                  "Trace replay: candidates that leave fewer whole free servers or whole free racks than the "
                  "host's first are not ranked, on|off")
      ->capture_default_str();
  cmd->add_option("--pin-running", flags->pin_running,
                  "Trace replay: running jobs keep their phase and only new jobs are shifted, on|off (off: "
                  "every job of the affinity graph may be shifted, once, at the end of its iteration)")
      ->capture_default_str();
  cmd->add_option("--running-profiles", flags->running_profiles,
                  "Trace replay, once mode: rank running jobs with their isolated profiles or as measured on "
                  "their links (their recent iterations), isolated|measured")
      ->capture_default_str();
  cmd->add_option("--realign", flags->realign, "Trace replay, once mode: closed-loop re-alignment on|off")
      ->capture_default_str();
  cmd->add_option("--realign-regrid", flags->realign_regrid,
                  "Trace replay, with --realign on: each ranked round re-anchors running jobs' grids at their "
                  "phase and measured period, as phasord's commit does, on|off")
      ->capture_default_str();
  cmd->add_option("--realign-min-interval-s", flags->realign_min_interval_s,
                  "Trace replay, with --realign on: at most one correction per job in this many seconds")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--reslot", flags->reslot, "Trace replay, pace mode: re-slot after an overrun on|off")
      ->capture_default_str();
  cmd->callback([flags] {
    if (!flags->trace.empty() && !flags->workload.empty()) {
      FailSimulate(kExitBadInput, "give --trace or --workload, not both");
    }
    if (!flags->trace.empty() || !flags->workload.empty()) {
      if (!flags->input.empty()) FailSimulate(kExitBadInput, "give a scenario FILE or --trace/--workload, not both");
      RunTrace(*flags);
      return;
    }
    if (flags->input.empty()) FailSimulate(kExitBadInput, "missing scenario FILE (or --trace)");
    RunFixed(*flags);
  });
}

}  // namespace phasor::cmd
