#include "integrations/slurm/slurm_state.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

// A count Slurm may leave out or give as null (unset): 0.
absl::StatusOr<uint64_t> CountField(const json& v, const std::string& field, const char* key) {
  if (!v.contains(key) || v[key].is_null()) return 0;
  if (!v[key].is_number_unsigned() && !(v[key].is_number_integer() && v[key].get<int64_t>() >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".", key, ": must be a non-negative integer"));
  }
  return v[key].get<uint64_t>();
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

// One `scontrol show ... --oneliner` record: Key=Value words.
std::map<std::string, std::string> OnelinerFields(std::string_view line) {
  std::map<std::string, std::string> out;
  for (absl::string_view word : absl::StrSplit(absl::string_view(line.data(), line.size()), ' ', absl::SkipEmpty())) {
    const size_t eq = word.find('=');
    if (eq == absl::string_view::npos || eq == 0) continue;
    out.emplace(std::string(word.substr(0, eq)), std::string(word.substr(eq + 1)));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> OnelinerNodes(const std::map<std::string, std::string>& fields,
                                                       const std::string& where) {
  auto it = fields.find("Nodes");
  if (it == fields.end() || it->second.empty() || it->second == "(null)") return std::vector<std::string>();
  absl::StatusOr<std::vector<std::string>> nodes = topology::ExpandHostList(it->second);
  if (!nodes.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": Nodes: ", nodes.status().message()));
  return nodes;
}

std::vector<std::string> Lines(std::string_view text) {
  return absl::StrSplit(absl::string_view(text.data(), text.size()), '\n', absl::SkipWhitespace());
}

}  // namespace

bool NodeIsFree(const SlurmNode& node) {
  // RESERVED and MAINTENANCE are not here: a reservation's nodes are free
  // for its jobs (job_request.h keeps the others off them).
  static const std::set<std::string> kBusy = {"DRAIN",        "DRAINING",   "DRAINED",          "NOT_RESPONDING",
                                              "POWERED_DOWN", "COMPLETING", "FAIL",             "POWERING_DOWN",
                                              "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERING_UP"};
  if (node.state != "idle") return false;
  return std::none_of(node.flags.begin(), node.flags.end(), [](const std::string& f) { return kBusy.contains(f); });
}

bool NodeHasFailed(const SlurmNode& node) {
  if (node.state == "down" || node.state == "fail") return true;
  return std::any_of(node.flags.begin(), node.flags.end(),
                     [](const std::string& f) { return f == "FAIL" || f == "NOT_RESPONDING"; });
}

bool JobIsRunning(const SlurmJob& job) { return job.state == "RUNNING" || job.state == "CONFIGURING"; }

bool JobHasEnded(const SlurmJob& job) {
  static const std::set<std::string> kEnded = {"COMPLETED", "CANCELLED", "FAILED",    "TIMEOUT",      "NODE_FAIL",
                                               "PREEMPTED", "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY", "REVOKED",
                                               "SPECIAL_EXIT"};
  return kEnded.contains(job.state);
}

absl::StatusOr<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text) {
  absl::StatusOr<json> doc = ParseDocument(text, "nodes", "sinfo");
  if (!doc.ok()) return doc.status();
  std::vector<SlurmNode> out;
  std::map<std::string, size_t> index;
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
    if (n.contains("partitions") && n["partitions"].is_array()) {
      for (const json& p : n["partitions"]) {
        if (p.is_string()) node.partitions.push_back(p.get<std::string>());
      }
    }
    absl::StatusOr<std::string> features = StringField(n, field, "active_features", false);
    if (!features.ok()) return features.status();
    for (absl::string_view f : absl::StrSplit(*features, ',', absl::SkipEmpty())) node.features.insert(std::string(f));
    absl::StatusOr<uint64_t> cpus = CountField(n, field, "cpus");
    if (!cpus.ok()) return cpus.status();
    node.cpus = static_cast<uint32_t>(std::min<uint64_t>(*cpus, UINT32_MAX));
    absl::StatusOr<uint64_t> memory = CountField(n, field, "real_memory");
    if (!memory.ok()) return memory.status();
    node.real_memory_mb = *memory;
    absl::StatusOr<uint64_t> tmp = CountField(n, field, "temporary_disk");
    if (!tmp.ok()) return tmp.status();
    node.tmp_disk_mb = *tmp;
    absl::StatusOr<std::string> gres = StringField(n, field, "gres", false);
    if (!gres.ok()) return gres.status();
    node.gres = *gres;
    auto [it, added] = index.try_emplace(node.name, out.size());
    if (added) {
      out.push_back(std::move(node));
    } else {
      for (std::string& p : node.partitions) out[it->second].partitions.push_back(std::move(p));
    }
  }
  for (SlurmNode& n : out) {
    std::sort(n.partitions.begin(), n.partitions.end());
    n.partitions.erase(std::unique(n.partitions.begin(), n.partitions.end()), n.partitions.end());
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
    for (auto [key, slot] : {std::pair{"comment", &job.comment},
                             {"state_reason", &job.state_reason},
                             {"partition", &job.partition},
                             {"features", &job.features},
                             {"required_nodes", &job.required_nodes},
                             {"excluded_nodes", &job.excluded_nodes},
                             {"resv_name", &job.reservation},
                             {"shared", &job.shared},
                             {"tres_per_node", &job.tres_per_node},
                             {"tres_per_job", &job.tres_per_job},
                             {"tres_per_task", &job.tres_per_task},
                             {"tres_per_socket", &job.tres_per_socket}}) {
      absl::StatusOr<std::string> v = StringField(j, field, key, false);
      if (!v.ok()) return v.status();
      *slot = *std::move(v);
    }
    absl::StatusOr<uint64_t> priority = CountField(j, field, "priority");
    if (!priority.ok()) return priority.status();
    job.priority = *priority;
    absl::StatusOr<uint64_t> count = CountField(j, field, "node_count");
    if (!count.ok()) return count.status();
    job.node_count = static_cast<uint32_t>(std::min<uint64_t>(*count, UINT32_MAX));
    absl::StatusOr<uint64_t> max_nodes = CountField(j, field, "max_nodes");
    if (!max_nodes.ok()) return max_nodes.status();
    job.max_nodes = static_cast<uint32_t>(std::min<uint64_t>(*max_nodes, UINT32_MAX));
    out.push_back(std::move(job));
  }
  return out;
}

absl::StatusOr<std::vector<SlurmPartition>> ParseScontrolPartitions(std::string_view text) {
  std::vector<SlurmPartition> out;
  int line_no = 0;
  for (const std::string& line : Lines(text)) {
    ++line_no;
    std::map<std::string, std::string> f = OnelinerFields(line);
    const std::string where = absl::StrCat("scontrol show partition: line ", line_no);
    auto name = f.find("PartitionName");
    if (name == f.end() || name->second.empty()) return absl::InvalidArgumentError(where + ": no PartitionName");
    SlurmPartition p;
    p.name = name->second;
    absl::StatusOr<std::vector<std::string>> nodes = OnelinerNodes(f, where);
    if (!nodes.ok()) return nodes.status();
    p.nodes = *std::move(nodes);
    p.is_default = f["Default"] == "YES";
    p.up = f["State"] == "UP";
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<std::vector<SlurmReservation>> ParseScontrolReservations(std::string_view text) {
  std::vector<SlurmReservation> out;
  int line_no = 0;
  for (const std::string& line : Lines(text)) {
    ++line_no;
    if (absl::StartsWith(line, "No reservations")) continue;
    std::map<std::string, std::string> f = OnelinerFields(line);
    const std::string where = absl::StrCat("scontrol show reservation: line ", line_no);
    auto name = f.find("ReservationName");
    if (name == f.end() || name->second.empty()) return absl::InvalidArgumentError(where + ": no ReservationName");
    SlurmReservation r;
    r.name = name->second;
    absl::StatusOr<std::vector<std::string>> nodes = OnelinerNodes(f, where);
    if (!nodes.ok()) return nodes.status();
    r.nodes = *std::move(nodes);
    r.active = f["State"] == "ACTIVE";
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace phasor::slurm
