// `phasor topology ...`: the topology module (SPEC section 6) for network
// engineers and for making fabrics:
//   show      a summary of a fabric (or the model itself as YAML)
//   paths     the equal-cost paths between two servers, with their shares
//   load      which jobs of a placement cross each directed link, with shares
//   generate  leaf-spine, fat-tree or a Slurm topology.conf, as YAML
// Every command that reads a fabric takes a YAML FILE or --slurm CONF with the
// capacity options. docs/topology.md describes formats and outputs.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cmd/phasor/commands.h"
#include "integrations/kubernetes/topology_export.h"
#include "nlohmann/json.hpp"
#include "topology/generators.h"
#include "topology/router.h"
#include "topology/slurm_import.h"
#include "topology/topology.h"
#include "topology/topology_file.h"
#include "topology/topology_yaml.h"
#include "topology/traffic.h"

namespace phasor::cmd {
namespace {

using nlohmann::ordered_json;
namespace topo = phasor::topology;

[[noreturn]] void FailTopology(int code, absl::string_view message) {
  FailCommand("topology", code, std::string(message));
}

// Where a command reads its fabric from.
struct SourceFlags {
  std::string file;
  std::string slurm;
  topo::SlurmImportOptions slurm_options;
};

void AddSourceOptions(CLI::App* cmd, SourceFlags& f) {
  cmd->add_option("FILE", f.file, "topology YAML file (docs/topology.md)");
  cmd->add_option("--slurm", f.slurm, "read a Slurm topology.conf instead of a YAML FILE");
  cmd->add_option("--node-gbps", f.slurm_options.node_link_gbps,
                  "--slurm: capacity of server <-> switch links (and the server NIC)")
      ->capture_default_str();
  cmd->add_option("--switch-gbps", f.slurm_options.switch_link_gbps,
                  "--slurm: capacity of switch <-> switch links")
      ->capture_default_str();
  cmd->add_option("--gpus-per-node", f.slurm_options.gpus_per_node, "--slurm: GPUs per server")
      ->capture_default_str();
}

topo::Topology LoadOrFail(const SourceFlags& f) {
  if (f.file.empty() == f.slurm.empty()) {
    FailTopology(kExitBadInput, "give a topology FILE or --slurm CONF (exactly one)");
  }
  absl::StatusOr<topo::Topology> t = f.file.empty()
                                         ? topo::LoadSlurmTopology(f.slurm, f.slurm_options)
                                         : topo::LoadTopologyFile(f.file, f.slurm_options);
  if (!t.ok()) FailTopology(kExitBadInput, t.status().message());
  return *std::move(t);
}

topo::RouterOptions RouterOptionsOrFail(const std::string& ecmp, uint64_t seed) {
  absl::StatusOr<topo::EcmpMode> mode = topo::ParseEcmpMode(ecmp);
  if (!mode.ok()) FailTopology(kExitBadInput, absl::StrCat("--ecmp: ", mode.status().message()));
  topo::RouterOptions options;
  options.ecmp = *mode;
  options.hash_seed = seed;
  return options;
}

void WriteOutput(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text) || !out.flush()) FailTopology(kExitFailure, "cannot write '" + path + "'");
}

// ---- show ----

struct ShowFlags {
  SourceFlags source;
  std::string format = "text";
};

ordered_json SummaryJson(const topo::TopologySummary& s) {
  ordered_json j;
  j["servers"] = s.servers;
  j["gpus"] = s.gpus;
  j["switches"] = s.switches;
  j["links"] = s.links;
  j["capacity_gbps"] = {{"min", s.min_capacity_gbps}, {"max", s.max_capacity_gbps}};
  j["server_link_gbps"] = {{"min", s.server_link_gbps_min}, {"max", s.server_link_gbps_max}};
  j["tiers"] = ordered_json::array();
  for (const topo::TierSummary& t : s.tiers) {
    ordered_json tier;
    tier["tier"] = t.tier;
    tier["switches"] = t.switches;
    tier["oversubscription"] = {{"min", t.min_oversubscription}, {"max", t.max_oversubscription}};
    tier["uplink_gbps"] = {{"min", t.min_uplink_gbps}, {"max", t.max_uplink_gbps}};
    j["tiers"].push_back(std::move(tier));
  }
  j["unreachable_switches"] = s.unreachable_switches;
  return j;
}

std::string Range(double lo, double hi) {
  return lo == hi ? absl::StrFormat("%g", lo) : absl::StrFormat("%g..%g", lo, hi);
}

void RunShow(const ShowFlags& flags) {
  if (flags.format != "text" && flags.format != "json" && flags.format != "yaml") {
    FailTopology(kExitBadInput, "--format: must be text, json or yaml, got '" + flags.format + "'");
  }
  const topo::Topology t = LoadOrFail(flags.source);
  if (flags.format == "yaml") {
    std::cout << topo::ToYaml(t);
    return;
  }
  const topo::TopologySummary s = topo::Summarize(t);
  if (flags.format == "json") {
    std::cout << SummaryJson(s).dump(2) << "\n";
    return;
  }
  std::cout << absl::StrFormat("servers       %zu (%u GPUs)\n", s.servers, s.gpus);
  std::cout << absl::StrFormat("switches      %zu\n", s.switches);
  std::cout << absl::StrFormat("links         %zu directed, %s Gbit/s\n", s.links,
                               Range(s.min_capacity_gbps, s.max_capacity_gbps));
  if (s.servers > 0) {
    std::cout << absl::StrFormat("server links  %s Gbit/s\n",
                                 Range(s.server_link_gbps_min, s.server_link_gbps_max));
  }
  for (const topo::TierSummary& tier : s.tiers) {
    std::cout << absl::StrFormat("tier %-8u %u switches", tier.tier, tier.switches);
    if (tier.max_uplink_gbps > 0) {
      std::cout << absl::StrFormat(", uplinks %s Gbit/s, oversubscription %s:1",
                                   Range(tier.min_uplink_gbps, tier.max_uplink_gbps),
                                   Range(tier.min_oversubscription, tier.max_oversubscription));
    } else {
      std::cout << " (top)";
    }
    std::cout << "\n";
  }
  if (s.unreachable_switches > 0) {
    std::cout << absl::StrFormat("warning       %zu switches reach no server\n",
                                 s.unreachable_switches);
  }
}

// ---- paths ----

struct PathsFlags {
  SourceFlags source;
  std::string from, to;
  std::string ecmp = "even";
  std::string flow;
  uint64_t seed = 0;
  size_t max_paths = 1024;
};

void RunPaths(const PathsFlags& flags) {
  const topo::Topology t = LoadOrFail(flags.source);
  topo::RouterOptions options = RouterOptionsOrFail(flags.ecmp, flags.seed);
  options.max_listed_paths = flags.max_paths;
  const topo::Router router(t, options);
  absl::StatusOr<topo::PathSet> set = router.Paths(flags.from, flags.to, flags.flow);
  if (!set.ok()) FailTopology(kExitBadInput, set.status().message());
  ordered_json out;
  out["from"] = flags.from;
  out["to"] = flags.to;
  out["ecmp"] = flags.ecmp;
  if (options.ecmp == topo::EcmpMode::kFlowHash) out["flow"] = flags.flow;
  out["hops"] = set->hops;
  if (set->total_paths < 9007199254740992.0) {  // 2^53: exact as an integer
    out["total_paths"] = static_cast<uint64_t>(set->total_paths);
  } else {
    out["total_paths"] = set->total_paths;
  }
  out["paths"] = ordered_json::array();
  for (const topo::Path& p : set->paths) {
    ordered_json links = ordered_json::array();
    for (topo::LinkIndex l : p.links) links.push_back(t.link(l).id);
    out["paths"].push_back({{"links", std::move(links)}, {"share", p.share}});
  }
  out["truncated"] = static_cast<double>(set->paths.size()) < set->total_paths &&
                     options.ecmp == topo::EcmpMode::kEvenSplit;
  std::cout << out.dump(2) << "\n";
}

// ---- load ----

struct LoadFlags {
  SourceFlags source;
  std::string placement;
  std::string ecmp = "even";
  uint64_t seed = 0;
};

// {"job": ["s1", ...]} or {"servers": {"job": [...]}} (the rank candidate form).
topo::Placement ReadPlacementOrFail(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) FailTopology(kExitBadInput, "--placement: cannot read '" + path + "'");
    text << in.rdbuf();
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    FailTopology(kExitBadInput,
         absl::StrCat(path == "-" ? "<stdin>" : path, ": malformed JSON: ", e.what()));
  }
  const std::string label = path == "-" ? "<stdin>" : path;
  if (doc.is_object() && doc.contains("servers") && doc["servers"].is_object()) {
    doc = nlohmann::json(doc["servers"]);
  }
  if (!doc.is_object()) FailTopology(kExitBadInput, label + ": must be a JSON object: job -> [server]");
  topo::Placement placement;
  for (const auto& [job, list] : doc.items()) {
    if (!list.is_array()) {
      FailTopology(kExitBadInput, absl::StrCat(label, ": job '", job, "': must be a list of servers"));
    }
    std::vector<std::string>& servers = placement[job];
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) {
        FailTopology(kExitBadInput,
             absl::StrCat(label, ": job '", job, "'[", i, "]: must be a server id string"));
      }
      servers.push_back(list[i].get<std::string>());
    }
  }
  return placement;
}

void RunLoad(const LoadFlags& flags) {
  const topo::Topology t = LoadOrFail(flags.source);
  const topo::Placement placement = ReadPlacementOrFail(flags.placement);
  const topo::Router router(t, RouterOptionsOrFail(flags.ecmp, flags.seed));
  absl::StatusOr<topo::PlacementLinkShares> shares = topo::PlacementShares(router, placement);
  if (!shares.ok()) FailTopology(kExitBadInput, shares.status().message());
  const topo::LinkLoads loads = topo::ToLinkLoads(*shares);
  ordered_json out;
  out["links"] = ordered_json::array();
  // Links in the topology's order (servers' links and tiers as the file gave them).
  for (const topo::Link& link : t.links()) {
    auto it = loads.find(link.id);
    if (it == loads.end()) continue;
    ordered_json jobs = ordered_json::array();
    double total = 0;
    for (const topo::JobShare& js : it->second) {
      jobs.push_back({{"job", js.job}, {"share", js.share}});
      total += js.share;
    }
    out["links"].push_back({{"id", link.id},
                            {"capacity_gbps", link.capacity_gbps},
                            {"jobs", std::move(jobs)},
                            {"total_share", total}});
  }
  ordered_json idle = ordered_json::array();
  for (const auto& [job, links] : *shares) {
    if (links.empty()) idle.push_back(job);
  }
  out["jobs_without_network_load"] = std::move(idle);
  std::cout << out.dump(2) << "\n";
}

// ---- generate ----

struct LeafSpineFlags {
  topo::LeafSpineOptions options;
  double uplink_gbps = 0;
  double oversubscription = 0;
  std::string output;
};

struct FatTreeFlags {
  topo::FatTreeOptions options;
  std::string output;
};

struct SlurmFlags {
  SourceFlags source;
  std::string output;
};

void Emit(absl::StatusOr<topo::Topology> t, const std::string& output) {
  if (!t.ok()) FailTopology(kExitBadInput, t.status().message());
  WriteOutput(output, topo::ToYaml(*t));
}

void AddGenerate(CLI::App* topology) {
  CLI::App* gen =
      topology->add_subcommand("generate", "Write a fabric as topology YAML (stdout, or -o FILE).");
  gen->require_subcommand(1);

  auto ls = std::make_shared<LeafSpineFlags>();
  CLI::App* cmd = gen->add_subcommand("leaf-spine", "A two-tier leaf-spine fabric.");
  cmd->add_option("--leaves", ls->options.leaves, "leaf switches")->capture_default_str();
  cmd->add_option("--spines", ls->options.spines, "spine switches (every leaf links to each)")
      ->capture_default_str();
  cmd->add_option("--servers-per-leaf", ls->options.servers_per_leaf, "servers below each leaf")
      ->capture_default_str();
  cmd->add_option("--servers", ls->options.servers,
                  "total servers, filling leaf1 first (0: leaves x servers-per-leaf)")
      ->capture_default_str();
  cmd->add_option("--gpus-per-server", ls->options.gpus_per_server, "GPUs per server")
      ->capture_default_str();
  cmd->add_option("--nic-gbps", ls->options.nic_gbps, "server <-> leaf capacity")
      ->capture_default_str();
  auto* up = cmd->add_option("--uplink-gbps", ls->uplink_gbps, "leaf <-> spine capacity per link");
  auto* over = cmd->add_option("--oversubscription", ls->oversubscription,
                               "leaf down/up capacity ratio; uplink = servers-per-leaf x nic-gbps "
                               "/ (spines x ratio) (default 1)");
  up->excludes(over);
  cmd->add_option("-o,--output", ls->output, "output file (default stdout)");
  cmd->callback([ls, up, over] {
    topo::LeafSpineOptions o = ls->options;
    if (up->count() > 0) o.uplink_gbps = ls->uplink_gbps;
    if (over->count() > 0) o.oversubscription = ls->oversubscription;
    Emit(topo::MakeLeafSpine(o), ls->output);
  });

  auto ft = std::make_shared<FatTreeFlags>();
  cmd = gen->add_subcommand("fat-tree", "A k-ary fat-tree (k pods, (k/2)^2 cores, k^3/4 servers).");
  cmd->add_option("--k", ft->options.k, "ports per switch (even)")->capture_default_str();
  cmd->add_option("--servers", ft->options.servers, "total servers (0: k^3/4)")
      ->capture_default_str();
  cmd->add_option("--gpus-per-server", ft->options.gpus_per_server, "GPUs per server")
      ->capture_default_str();
  cmd->add_option("--nic-gbps", ft->options.nic_gbps, "server <-> edge capacity")
      ->capture_default_str();
  cmd->add_option("--fabric-gbps", ft->options.fabric_gbps,
                  "edge <-> agg <-> core capacity (0: same as --nic-gbps)")
      ->capture_default_str();
  cmd->add_option("-o,--output", ft->output, "output file (default stdout)");
  cmd->callback([ft] { Emit(topo::MakeFatTree(ft->options), ft->output); });

  auto sl = std::make_shared<SlurmFlags>();
  cmd =
      gen->add_subcommand("slurm", "Convert a Slurm topology.conf (SwitchName= Switches= Nodes=).");
  cmd->add_option("CONF", sl->source.slurm, "the topology.conf file")->required();
  cmd->add_option("--node-gbps", sl->source.slurm_options.node_link_gbps,
                  "capacity of server <-> switch links (and the server NIC)")
      ->capture_default_str();
  cmd->add_option("--switch-gbps", sl->source.slurm_options.switch_link_gbps,
                  "capacity of switch <-> switch links")
      ->capture_default_str();
  cmd->add_option("--gpus-per-node", sl->source.slurm_options.gpus_per_node, "GPUs per server")
      ->capture_default_str();
  cmd->add_option("-o,--output", sl->output, "output file (default stdout)");
  cmd->callback([sl] { WriteOutput(sl->output, topo::ToYaml(LoadOrFail(sl->source))); });
}

// `phasor topology export`: the fabric for Volcano and Kueue (docs/kubernetes.md).
struct ExportFlags {
  SourceFlags source;
  std::string format = "volcano";
  std::string output;
  phasor::kubernetes::ExportOptions options;
};

void RunExport(const ExportFlags& flags) {
  namespace k8s = phasor::kubernetes;
  if (flags.format != "volcano" && flags.format != "kueue" && flags.format != "labels" && flags.format != "all") {
    FailTopology(kExitBadInput, "--format: must be volcano, kueue, labels or all, got '" + flags.format + "'");
  }
  absl::StatusOr<k8s::FabricExport> e = k8s::ExportFabric(LoadOrFail(flags.source), flags.options);
  if (!e.ok()) FailTopology(kExitBadInput, e.status().message());
  std::string text;
  if (flags.format == "volcano" || flags.format == "all") text += k8s::HyperNodesYaml(*e);
  if (flags.format == "kueue" || flags.format == "all") text += k8s::KueueTopologyYaml(*e, flags.options);
  if (flags.format == "labels") text += k8s::NodeLabelCommands(*e);
  if (flags.format == "all") {
    text += "# node labels for the Kueue levels (kubectl):\n";
    for (absl::string_view line : absl::StrSplit(k8s::NodeLabelCommands(*e), '\n', absl::SkipEmpty())) {
      absl::StrAppend(&text, "# ", line, "\n");
    }
  }
  WriteOutput(flags.output, text);
}

}  // namespace

void AddTopologyCommand(CLI::App& app) {
  CLI::App* topology = app.add_subcommand(
      "topology",
      "Fabrics, routing and the traffic model (SPEC section 6): show, paths, load, generate.");
  topology->require_subcommand(1);

  auto show = std::make_shared<ShowFlags>();
  CLI::App* cmd = topology->add_subcommand(
      "show", "Summary of a fabric: servers, GPUs, switches, links, capacities, oversubscription.");
  AddSourceOptions(cmd, show->source);
  cmd->add_option("--format", show->format, "text, json, or yaml (the whole model)")
      ->capture_default_str();
  cmd->callback([show] { RunShow(*show); });

  auto paths = std::make_shared<PathsFlags>();
  cmd = topology->add_subcommand(
      "paths", "The equal-cost shortest paths from one server to another, as JSON.");
  AddSourceOptions(cmd, paths->source);
  cmd->add_option("--from", paths->from, "source server")->required();
  cmd->add_option("--to", paths->to, "destination server")->required();
  cmd->add_option("--ecmp", paths->ecmp, "even (split over all paths) or hash (one path per flow)")
      ->capture_default_str();
  cmd->add_option("--flow", paths->flow, "flow key hashed in --ecmp hash mode");
  cmd->add_option("--seed", paths->seed, "flow hash seed")->capture_default_str();
  cmd->add_option("--max-paths", paths->max_paths, "list at most this many paths")
      ->capture_default_str();
  cmd->callback([paths] { RunPaths(*paths); });

  auto load = std::make_shared<LoadFlags>();
  cmd = topology->add_subcommand(
      "load", "Which jobs of a placement cross each directed link, with their shares (JSON).");
  AddSourceOptions(cmd, load->source);
  cmd->add_option("--placement", load->placement,
                  "JSON {\"job\": [\"s1\", ...]} (servers in rank order), or {\"servers\": {...}}; "
                  "'-' reads stdin")
      ->required();
  cmd->add_option("--ecmp", load->ecmp, "even or hash")->capture_default_str();
  cmd->add_option("--seed", load->seed, "flow hash seed")->capture_default_str();
  cmd->callback([load] { RunLoad(*load); });

  auto exp = std::make_shared<ExportFlags>();
  cmd = topology->add_subcommand(
      "export",
      "The fabric for Kubernetes: Volcano HyperNodes (leaf and spine tiers), Kueue's Topology, node labels.");
  AddSourceOptions(cmd, exp->source);
  cmd->add_option("--format", exp->format,
                  "volcano (HyperNode YAML), kueue (Topology YAML), labels (kubectl label lines) or all")
      ->capture_default_str();
  cmd->add_option("--label-prefix", exp->options.label_prefix, "node labels are <prefix>tier-<t>")
      ->capture_default_str();
  cmd->add_option("--kueue-name", exp->options.kueue_topology_name, "name of Kueue's Topology object")
      ->capture_default_str();
  cmd->add_option("--kueue-api-version", exp->options.kueue_api_version,
                  "apiVersion of Kueue's Topology (kueue.x-k8s.io/v1alpha1 before Kueue v0.14)")
      ->capture_default_str();
  cmd->add_option("-o,--output", exp->output, "write here instead of stdout");
  cmd->callback([exp] { RunExport(*exp); });

  AddGenerate(topology);
}

}  // namespace phasor::cmd
