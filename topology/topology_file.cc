#include "topology/topology_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "topology/absl_compat.h"
#include "topology/topology_yaml.h"

namespace phasor::topology {

TopologyFormat DetectTopologyFormat(std::string_view path, std::string_view text) {
  const absl::string_view name = AsAbsl(path);
  if (absl::EndsWithIgnoreCase(name, ".yaml") || absl::EndsWithIgnoreCase(name, ".yml")) return TopologyFormat::kYaml;
  if (absl::EndsWithIgnoreCase(name, ".conf")) return TopologyFormat::kSlurm;
  for (absl::string_view line : absl::StrSplit(AsAbsl(text), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    return absl::StartsWithIgnoreCase(line, "SwitchName=") ? TopologyFormat::kSlurm : TopologyFormat::kYaml;
  }
  return TopologyFormat::kYaml;
}

absl::StatusOr<Topology> LoadTopologyFile(const std::string& path, const SlurmImportOptions& slurm) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the file"));
  std::ostringstream text;
  text << in.rdbuf();
  if (DetectTopologyFormat(path, text.str()) == TopologyFormat::kSlurm) {
    return ParseSlurmTopology(text.str(), slurm, path);
  }
  return ParseTopologyYaml(text.str(), path);
}

}  // namespace phasor::topology
