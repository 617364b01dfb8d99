#include "integrations/slurm/job_request.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "topology/slurm_import.h"

namespace phasor::slurm {
namespace {

// job_desc fields that restrict nodes in ways phasor does not model.
const std::set<std::string>& UnsupportedHookFields() {
  static const std::set<std::string> kFields = {
      "array_inx",        "tres_per_job",     "tres_per_task",     "tres_per_socket",   "cpus_per_tres",
      "mem_per_tres",     "ntasks_per_tres",  "cores_per_socket",  "sockets_per_node",  "threads_per_core",
      "ntasks_per_socket", "ntasks_per_core", "ntasks_per_board",  "boards_per_node",   "sockets_per_board",
      "core_spec",        "clusters",         "batch_features",    "het_job_offset",    "req_switch",
      "contiguous"};
  return kFields;
}

absl::Status ParseCount(const std::map<std::string, std::string>& fields, const char* key, uint64_t& out) {
  auto it = fields.find(key);
  if (it == fields.end()) return absl::OkStatus();
  if (!absl::SimpleAtoi(it->second, &out)) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": '", it->second.substr(0, 32), "' is not a count"));
  }
  return absl::OkStatus();
}

uint32_t Clamp32(uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, std::numeric_limits<uint32_t>::max())); }

struct Gres {
  std::string name;
  std::string type;  // "" any
  uint64_t count = 1;
};

// "gres:gpu:tesla:2", "gres/gpu:2", "gpu", "gpu:4(S:0-1)". InvalidArgument
// for a count that is not a plain number.
absl::StatusOr<std::vector<Gres>> ParseGres(absl::string_view text) {
  std::vector<Gres> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    if (size_t paren = item.find('('); paren != absl::string_view::npos) item = item.substr(0, paren);
    if (!absl::ConsumePrefix(&item, "gres:")) absl::ConsumePrefix(&item, "gres/");
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    if (parts.empty() || parts[0].empty()) return absl::InvalidArgumentError(absl::StrCat("gres '", item, "'"));
    Gres g;
    g.name = parts[0];
    if (parts.size() > 3) return absl::InvalidArgumentError(absl::StrCat("gres '", item, "'"));
    if (parts.size() >= 2) {
      if (!absl::SimpleAtoi(parts.back(), &g.count)) {
        if (parts.size() == 3) return absl::InvalidArgumentError(absl::StrCat("gres '", item, "': count"));
        g.type = parts[1];  // name:type, count 1
      } else if (parts.size() == 3) {
        g.type = parts[1];
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

bool HasGres(const std::vector<Gres>& node, const Gres& want) {
  uint64_t have = 0;
  for (const Gres& g : node) {
    if (g.name == want.name && (want.type.empty() || g.type == want.type)) have += g.count;
  }
  return have >= want.count;
}

// A constraint phasor models: all of `features` (all_of) or any of them.
struct Constraint {
  std::vector<std::string> features;
  bool all_of = true;
};

absl::StatusOr<Constraint> ParseConstraint(absl::string_view text) {
  Constraint c;
  if (text.empty()) return c;
  if (text.find_first_of("[]()*!") != absl::string_view::npos) {
    return absl::FailedPreconditionError(absl::StrCat("constraint '", text, "' has brackets or counts"));
  }
  const bool has_and = text.find_first_of("&,") != absl::string_view::npos;
  const bool has_or = text.find('|') != absl::string_view::npos;
  if (has_and && has_or) return absl::FailedPreconditionError(absl::StrCat("constraint '", text, "' mixes & and |"));
  c.all_of = !has_or;
  for (absl::string_view f : absl::StrSplit(text, absl::ByAnyChar("&,|"))) {
    if (f.empty()) return absl::FailedPreconditionError(absl::StrCat("constraint '", text, "' has an empty feature"));
    c.features.emplace_back(f);
  }
  return c;
}

bool Satisfies(const SlurmNode& node, const Constraint& c) {
  if (c.features.empty()) return true;
  auto has = [&](const std::string& f) { return node.features.contains(f); };
  return c.all_of ? std::all_of(c.features.begin(), c.features.end(), has)
                  : std::any_of(c.features.begin(), c.features.end(), has);
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

const std::set<std::string>& ModelledHookFields() {
  static const std::set<std::string> kFields = {
      "partition",     "features",       "reservation",     "exc_nodes",        "req_nodes",       "tres_per_node",
      "dependency",    "min_nodes",      "max_nodes",       "num_tasks",        "ntasks_per_node", "cpus_per_task",
      "pn_min_cpus",   "min_mem_per_node", "min_mem_per_cpu", "pn_min_tmp_disk", "priority",        "begin_time",
      "shared"};
  return kFields;
}

}  // namespace

bool IsKnownHookField(const std::string& name) {
  return ModelledHookFields().contains(name) || UnsupportedHookFields().contains(name);
}

absl::StatusOr<JobRequest> JobRequestFromHook(const std::map<std::string, std::string>& fields, int64_t now_s) {
  JobRequest r;
  for (const auto& [key, value] : fields) {
    if (UnsupportedHookFields().contains(key)) {
      if (value == "0") continue;  // a count or flag not given (contiguous=0, boards_per_node=0, ...)
      r.unsupported.push_back(key);
    } else if (!ModelledHookFields().contains(key)) {
      r.unsupported.push_back(key);  // a field this controller does not know
    }
  }
  auto str = [&](const char* key) {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  };
  r.partition = str("partition");
  r.features = str("features");
  r.reservation = str("reservation");
  r.exc_nodes = str("exc_nodes");
  r.req_nodes = str("req_nodes");
  r.gres_per_node = str("tres_per_node");
  uint64_t min_nodes = 0, max_nodes = 0, tasks = 0, tpn = 0, cpt = 0, mincpus = 0, mem_node = 0, mem_cpu = 0, tmp = 0;
  uint64_t priority = 1, begin = 0, shared = 0;
  for (auto [key, slot] : {std::pair{"min_nodes", &min_nodes},
                           {"max_nodes", &max_nodes},
                           {"num_tasks", &tasks},
                           {"ntasks_per_node", &tpn},
                           {"cpus_per_task", &cpt},
                           {"pn_min_cpus", &mincpus},
                           {"min_mem_per_node", &mem_node},
                           {"min_mem_per_cpu", &mem_cpu},
                           {"pn_min_tmp_disk", &tmp},
                           {"priority", &priority},
                           {"begin_time", &begin},
                           {"shared", &shared}}) {
    if (absl::Status s = ParseCount(fields, key, *slot); !s.ok()) return s;
  }
  r.min_nodes = Clamp32(min_nodes);
  r.max_nodes = Clamp32(max_nodes);
  r.num_tasks = Clamp32(tasks);
  r.ntasks_per_node = Clamp32(tpn);
  r.cpus_per_task = Clamp32(cpt);
  r.pn_min_cpus = Clamp32(mincpus);
  r.mem_per_node_mb = mem_node;
  r.mem_per_cpu_mb = mem_cpu;
  r.tmp_disk_mb = tmp;
  r.held = fields.contains("priority") && priority == 0;
  r.deferred = !str("dependency").empty() || (begin > 0 && static_cast<int64_t>(begin) > now_s);
  return r;
}

JobRequest JobRequestFromSqueue(const SlurmJob& job) {
  JobRequest r;
  r.partition = job.partition;
  r.features = job.features;
  r.reservation = job.reservation;
  r.exc_nodes = job.excluded_nodes;
  r.req_nodes = job.required_nodes;
  r.min_nodes = std::max<uint32_t>(1, job.node_count);
  r.max_nodes = job.max_nodes;
  r.gres_per_node = job.tres_per_node;
  for (auto [name, value] : {std::pair{"tres_per_job", &job.tres_per_job},
                             {"tres_per_task", &job.tres_per_task},
                             {"tres_per_socket", &job.tres_per_socket}}) {
    if (!value->empty()) r.unsupported.push_back(name);
  }
  r.held = job.priority == 0 || absl::StartsWith(job.state_reason, "JobHeld");
  r.deferred = job.state_reason == "Dependency" || job.state_reason == "BeginTime" ||
               job.state_reason == "DependencyNeverSatisfied";
  return r;
}

absl::StatusOr<NodeDemand> ResolveDemand(const JobRequest& r, const ClusterState& cluster) {
  if (!r.unsupported.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("unsupported: ", absl::StrJoin(r.unsupported, ", ")));
  }
  if (!r.req_nodes.empty()) return absl::FailedPreconditionError("the job names its nodes (--nodelist)");
  if (r.min_nodes > 0 && r.max_nodes > 0 && r.max_nodes != r.min_nodes) {
    return absl::FailedPreconditionError(absl::StrCat("a node range (", r.min_nodes, "-", r.max_nodes, ")"));
  }
  NodeDemand d;
  // The partition.
  const SlurmPartition* partition = nullptr;
  if (r.partition.empty()) {
    for (const SlurmPartition& p : cluster.partitions) {
      if (p.is_default) partition = &p;
    }
    if (partition == nullptr) return absl::FailedPreconditionError("no partition given and none is the default");
  } else {
    if (r.partition.find(',') != std::string::npos) {
      return absl::FailedPreconditionError(absl::StrCat("several partitions ('", r.partition, "')"));
    }
    for (const SlurmPartition& p : cluster.partitions) {
      if (p.name == r.partition) partition = &p;
    }
    if (partition == nullptr) return absl::FailedPreconditionError(absl::StrCat("partition '", r.partition, "' is unknown"));
  }
  d.partition = partition->name;
  d.startable = partition->up && !r.held && !r.deferred;

  absl::StatusOr<Constraint> constraint = ParseConstraint(r.features);
  if (!constraint.ok()) return constraint.status();
  absl::StatusOr<std::vector<Gres>> gres = ParseGres(r.gres_per_node);
  if (!gres.ok()) return absl::FailedPreconditionError(absl::StrCat("tres_per_node: ", gres.status().message()));

  // Reservations: a job in one gets only its nodes; every other job none of
  // an active reservation's.
  std::set<std::string> reserved;
  const SlurmReservation* own = nullptr;
  for (const SlurmReservation& res : cluster.reservations) {
    if (res.name == r.reservation) own = &res;
    if (res.active) reserved.insert(res.nodes.begin(), res.nodes.end());
  }
  if (!r.reservation.empty()) {
    if (r.reservation.find(',') != std::string::npos) {
      return absl::FailedPreconditionError(absl::StrCat("several reservations ('", r.reservation, "')"));
    }
    if (own == nullptr) return absl::FailedPreconditionError(absl::StrCat("reservation '", r.reservation, "' is unknown"));
    if (!own->active) d.startable = false;
  }
  std::set<std::string> excluded;
  if (!r.exc_nodes.empty()) {
    absl::StatusOr<std::vector<std::string>> exc = topology::ExpandHostList(r.exc_nodes);
    if (!exc.ok()) return absl::FailedPreconditionError(absl::StrCat("exc_nodes: ", exc.status().message()));
    excluded.insert(exc->begin(), exc->end());
  }

  const uint64_t cpt = std::max<uint32_t>(1, r.cpus_per_task);
  const uint64_t node_cpus = std::max<uint64_t>(r.pn_min_cpus, r.ntasks_per_node > 0 ? r.ntasks_per_node * cpt : cpt);
  const absl::flat_hash_set<std::string_view> in_partition(partition->nodes.begin(), partition->nodes.end());
  std::vector<const SlurmNode*> eligible;
  for (const SlurmNode& n : cluster.nodes) {
    if (!in_partition.contains(n.name) || excluded.contains(n.name)) continue;
    if (own != nullptr && std::find(own->nodes.begin(), own->nodes.end(), n.name) == own->nodes.end()) continue;
    if (!Satisfies(n, *constraint) || n.cpus < node_cpus) continue;
    if (r.mem_per_node_mb > n.real_memory_mb || r.tmp_disk_mb > n.tmp_disk_mb) continue;
    if (!gres->empty()) {
      absl::StatusOr<std::vector<Gres>> have = ParseGres(n.gres);
      if (!have.ok() || !std::all_of(gres->begin(), gres->end(), [&](const Gres& g) { return HasGres(*have, g); })) continue;
    }
    eligible.push_back(&n);
  }
  if (eligible.empty()) return absl::FailedPreconditionError("no node satisfies the job's restrictions");

  // How many nodes: the count given, or what the tasks need on the smallest eligible node.
  uint32_t min_cpus = std::numeric_limits<uint32_t>::max();
  for (const SlurmNode* n : eligible) min_cpus = std::min(min_cpus, n->cpus);
  uint64_t count = 1;
  if (r.min_nodes > 0) {
    count = r.min_nodes;
  } else if (r.num_tasks > 0) {
    const uint64_t per_node = r.ntasks_per_node > 0 ? r.ntasks_per_node : min_cpus / cpt;
    if (per_node == 0) return absl::FailedPreconditionError("a task needs more CPUs than an eligible node has");
    count = CeilDiv(r.num_tasks, per_node);
  }
  if (r.num_tasks > 0) {
    if (count > r.num_tasks) {
      return absl::FailedPreconditionError(absl::StrCat(count, " nodes for ", r.num_tasks, " tasks"));
    }
    if (r.num_tasks * cpt > count * min_cpus) {
      return absl::FailedPreconditionError(absl::StrCat(r.num_tasks, " tasks do not fit on ", count, " nodes"));
    }
  }
  // Memory per CPU: the most CPUs one node runs.
  const uint64_t tasks_per_node = r.num_tasks > 0 ? CeilDiv(r.num_tasks, count) : std::max<uint32_t>(1, r.ntasks_per_node);
  const uint64_t cpus_used = std::max<uint64_t>(r.pn_min_cpus, tasks_per_node * cpt);
  size_t ever = 0;  // nodes the job could get once other reservations end
  for (const SlurmNode* n : eligible) {
    if (r.mem_per_cpu_mb != 0 && r.mem_per_cpu_mb * cpus_used > n->real_memory_mb) continue;
    ++ever;
    // At the end first: Slurm lists its nodes by name, so each insertion is
    // constant time (10,000 nodes per submission).
    if (own != nullptr || !reserved.contains(n->name)) d.eligible.insert(d.eligible.end(), n->name);
  }
  if (ever < count) {
    return absl::FailedPreconditionError(absl::StrCat(ever, " nodes satisfy the job's restrictions, it needs ", count));
  }
  d.count = static_cast<uint32_t>(count);
  return d;
}

}  // namespace phasor::slurm
