// `phasor simulate`: what-if runs of the fluid simulator (docs/simulator.md).
//   phasor simulate FILE [--topology T.yaml] [--table]      fixed placement
//   phasor simulate --trace CSV --scheduler S --plugin on|off ...   trace replay
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "cmd/phasor/commands.h"
#include "nlohmann/json.hpp"
#include "sim/model_catalog.h"
#include "sim/scenario.h"
#include "sim/topology_scenario.h"

namespace phasor::cmd {
namespace {

struct SimulateFlags {
  std::string input;
  std::string topology;
  std::string models = "data/models";
  bool table = false;
};

[[noreturn]] void Fail(int code, const std::string& message) {
  std::cerr << "phasor simulate: " << message << "\n";
  throw CLI::RuntimeError(code);
}

std::string ReadFile(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(kExitBadInput, "cannot read '" + path + "'");
  text << in.rdbuf();
  return text.str();
}

int CodeOf(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
                 status.code() == absl::StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

void RunFixed(const SimulateFlags& flags) {
  const std::string text = ReadFile(flags.input);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) Fail(kExitBadInput, flags.input + ": malformed JSON");
  // The model data is optional: only a job that names a model needs it.
  absl::StatusOr<sim::ModelCatalog> models = sim::ModelCatalog::Load(flags.models);
  absl::StatusOr<sim::Scenario> scenario =
      sim::ScenarioFromJson(doc, models.ok() ? &*models : nullptr);
  if (!scenario.ok()) Fail(CodeOf(scenario.status()), std::string(scenario.status().message()));
  if (!flags.topology.empty()) {
    absl::Status resolved = sim::ResolveServersFromFile(flags.topology, *scenario);
    if (!resolved.ok()) Fail(CodeOf(resolved), std::string(resolved.message()));
  }
  absl::StatusOr<sim::Comparison> comparison = sim::SimulateScenario(*scenario);
  if (!comparison.ok()) Fail(CodeOf(comparison.status()), std::string(comparison.status().message()));
  std::cout << sim::ComparisonToJson(*comparison).dump(2) << "\n";
  if (flags.table) std::cerr << sim::ComparisonTable(*comparison);
}

}  // namespace

void AddSimulateCommand(CLI::App& app) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Simulate jobs sharing links (fluid max-min model) with and without phasor's shifts.\n"
      "Fixed placement: phasor simulate FILE (JSON: links, jobs, seed; see docs/simulator.md).\n"
      "Trace replay: phasor simulate --trace CSV --scheduler themis|pollux|consolidate "
      "--plugin on|off.");
  cmd->add_option("file", flags->input, "Scenario JSON ('-' for stdin)");
  cmd->add_option("--topology", flags->topology,
                  "Topology YAML: jobs may give \"servers\" (routed, ring all-reduce)");
  cmd->add_option("--models", flags->models, "Model data folder")->capture_default_str();
  cmd->add_flag("--table", flags->table, "Print a readable table to stderr");
  cmd->callback([flags] {
    if (flags->input.empty()) Fail(kExitBadInput, "missing scenario FILE");
    RunFixed(*flags);
  });
}

}  // namespace phasor::cmd
