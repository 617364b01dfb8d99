#include "integrations/slurm/slurm_state.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "topology/slurm_import.h"

namespace phasor::slurm {
namespace {

using nlohmann::json;

absl::StatusOr<json> ParseDocument(std::string_view text, const char* array, const char* tool) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(tool, " --json: output is not JSON"));
  if (!doc.is_object() || !doc.contains(array) || !doc[array].is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(array, ": missing or not an array"));
  }
  return doc;
}

absl::StatusOr<std::string> StringField(const json& v, const std::string& field, const char* key, bool required) {
  if (!v.contains(key) || v[key].is_null()) {
    if (required) return absl::InvalidArgumentError(absl::StrCat(field, ".", key, ": missing"));
    return std::string();
  }
  if (!v[key].is_string()) return absl::InvalidArgumentError(absl::StrCat(field, ".", key, ": must be a string"));
  return v[key].get<std::string>();
}

// Slurm 22.05 gives states as strings; later versions as arrays of strings.
absl::StatusOr<std::vector<std::string>> StateList(const json& v, const std::string& field, const char* key) {
  std::vector<std::string> out;
  if (!v.contains(key) || v[key].is_null()) return absl::InvalidArgumentError(absl::StrCat(field, ".", key, ": missing"));
  if (v[key].is_string()) {
    out.push_back(v[key].get<std::string>());
    return out;
  }
  if (!v[key].is_array()) return absl::InvalidArgumentError(absl::StrCat(field, ".", key, ": must be a string or an array"));
  for (const json& s : v[key]) {
    if (!s.is_string()) return absl::InvalidArgumentError(absl::StrCat(field, ".", key, ": entries must be strings"));
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

bool NodeIsFree(const SlurmNode& node) {
  static const std::set<std::string> kBusy = {"DRAIN",    "DRAINING",     "DRAINED",    "NOT_RESPONDING", "MAINTENANCE",
                                              "RESERVED", "POWERED_DOWN", "COMPLETING", "FAIL",           "POWERING_DOWN"};
  if (node.state != "idle") return false;
  return std::none_of(node.flags.begin(), node.flags.end(), [](const std::string& f) { return kBusy.contains(f); });
}

bool NodeHasFailed(const SlurmNode& node) {
  if (node.state == "down" || node.state == "fail") return true;
  return std::any_of(node.flags.begin(), node.flags.end(),
                     [](const std::string& f) { return f == "FAIL" || f == "NOT_RESPONDING"; });
}

bool JobIsRunning(const SlurmJob& job) { return job.state == "RUNNING" || job.state == "CONFIGURING"; }

absl::StatusOr<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text) {
  absl::StatusOr<json> doc = ParseDocument(text, "nodes", "sinfo");
  if (!doc.ok()) return doc.status();
  std::vector<SlurmNode> out;
  for (size_t i = 0; i < (*doc)["nodes"].size(); ++i) {
    const json& n = (*doc)["nodes"][i];
    const std::string field = absl::StrCat("nodes[", i, "]");
    if (!n.is_object()) return absl::InvalidArgumentError(absl::StrCat(field, ": must be an object"));
    SlurmNode node;
    absl::StatusOr<std::string> name = StringField(n, field, "name", true);
    if (!name.ok()) return name.status();
    node.name = *name;
    absl::StatusOr<std::vector<std::string>> states = StateList(n, field, "state");
    if (!states.ok()) return states.status();
    // Later Slurm: ["IDLE", "DRAIN"]: the first is the base state.
    node.state = states->empty() ? "" : absl::AsciiStrToLower((*states)[0]);
    for (size_t s = 1; s < states->size(); ++s) node.flags.push_back(absl::AsciiStrToUpper((*states)[s]));
    if (n.contains("state_flags") && n["state_flags"].is_array()) {
      for (const json& f : n["state_flags"]) {
        if (f.is_string()) node.flags.push_back(absl::AsciiStrToUpper(f.get<std::string>()));
      }
    }
    out.push_back(std::move(node));
  }
  return out;
}

absl::StatusOr<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text) {
  absl::StatusOr<json> doc = ParseDocument(text, "jobs", "squeue");
  if (!doc.ok()) return doc.status();
  std::vector<SlurmJob> out;
  for (size_t i = 0; i < (*doc)["jobs"].size(); ++i) {
    const json& j = (*doc)["jobs"][i];
    const std::string field = absl::StrCat("jobs[", i, "]");
    if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(field, ": must be an object"));
    SlurmJob job;
    if (!j.contains("job_id") || !j["job_id"].is_number_unsigned()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".job_id: missing or not a non-negative integer"));
    }
    job.id = std::to_string(j["job_id"].get<uint64_t>());
    absl::StatusOr<std::vector<std::string>> states = StateList(j, field, "job_state");
    if (!states.ok()) return states.status();
    job.state = states->empty() ? "" : absl::AsciiStrToUpper((*states)[0]);
    absl::StatusOr<std::string> nodes = StringField(j, field, "nodes", false);
    if (!nodes.ok()) return nodes.status();
    if (!nodes->empty()) {
      absl::StatusOr<std::vector<std::string>> expanded = topology::ExpandHostList(*nodes);
      if (!expanded.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ".nodes: ", expanded.status().message()));
      job.nodes = *std::move(expanded);
    }
    absl::StatusOr<std::string> comment = StringField(j, field, "comment", false);
    if (!comment.ok()) return comment.status();
    job.comment = *comment;
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace phasor::slurm
