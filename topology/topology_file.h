// One loader for every topology file a command or phasord is given: phasor's
// YAML format (topology_yaml.h) or Slurm's topology.conf (slurm_import.h).
//
// The format is picked by the file name first: *.yaml / *.yml are YAML,
// *.conf is Slurm's. Any other name is decided by content: a file whose first
// line that is neither blank nor a '#' comment starts with "SwitchName="
// (case-insensitive, as Slurm reads it) is topology.conf, anything else YAML.
//
// Errors: NotFound when the file cannot be read; otherwise the chosen
// parser's own errors ("<file>:<line>: <what>").
#ifndef PHASOR_TOPOLOGY_TOPOLOGY_FILE_H_
#define PHASOR_TOPOLOGY_TOPOLOGY_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "topology/slurm_import.h"
#include "topology/topology.h"

namespace phasor::topology {

enum class TopologyFormat { kYaml, kSlurm };

// The format `path` is read in (by name, then by `text`, its content).
TopologyFormat DetectTopologyFormat(std::string_view path, std::string_view text);

// Reads `path` in its format; `slurm` sets the capacities and GPUs a
// topology.conf does not carry (ignored for YAML).
absl::StatusOr<Topology> LoadTopologyFile(const std::string& path, const SlurmImportOptions& slurm = {});

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_TOPOLOGY_FILE_H_
