#include "integrations/kubernetes/topology_export.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <functional>
#include <limits>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

namespace phasor::kubernetes {
namespace {

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return std::isalnum(static_cast<unsigned char>(s.front())) && std::isalnum(static_cast<unsigned char>(s.back()));
}

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

}  // namespace

absl::StatusOr<FabricExport> ExportFabric(const topology::Topology& fabric, const ExportOptions& options) {
  const size_t n = fabric.nodes().size();
  for (const topology::Node& node : fabric.nodes()) {
    if (!ValidName(node.id)) {
      return absl::InvalidArgumentError(absl::StrCat(node.kind == topology::NodeKind::kServer ? "server" : "switch",
                                                     " '", node.id,
                                                     "': not a valid Kubernetes name (lowercase [a-z0-9.-])"));
    }
  }
  // Undirected neighbours and hop distance to the nearest server.
  std::vector<std::set<topology::NodeIndex>> adj(n);
  for (const topology::Link& l : fabric.links()) {
    adj[l.from].insert(l.to);
    adj[l.to].insert(l.from);
  }
  std::vector<uint32_t> tier(n, kNone);
  std::deque<topology::NodeIndex> queue;
  for (topology::NodeIndex s : fabric.Servers()) {
    tier[s] = 0;
    queue.push_back(s);
  }
  while (!queue.empty()) {
    const topology::NodeIndex u = queue.front();
    queue.pop_front();
    for (topology::NodeIndex v : adj[u]) {
      if (tier[v] == kNone && !fabric.IsServer(v)) {
        tier[v] = tier[u] + 1;
        queue.push_back(v);
      }
    }
  }
  FabricExport out;
  // group[i]: the HyperNode of the current tier that switch/HyperNode i belongs to.
  std::map<topology::NodeIndex, std::string> group;  // switch -> HyperNode of its tier
  uint32_t max_tier = 0;
  for (topology::NodeIndex i = 0; i < n; ++i) {
    if (!fabric.IsServer(i) && tier[i] != kNone) max_tier = std::max(max_tier, tier[i]);
  }
  if (max_tier == 0) return absl::InvalidArgumentError("fabric: no switch is linked to a server");
  // Tier 1: one HyperNode per leaf with its servers.
  for (topology::NodeIndex i = 0; i < n; ++i) {
    if (fabric.IsServer(i) || tier[i] != 1) continue;
    HyperNode h{fabric.node(i).id, 1, {}};
    for (topology::NodeIndex v : adj[i]) {
      if (fabric.IsServer(v)) {
        h.members.push_back(fabric.node(v).id);
        // A server on two leaves keeps its first (lowest-index) leaf's label.
        out.node_labels[fabric.node(v).id].emplace(absl::StrCat(options.label_prefix, "tier-1"), h.name);
      }
    }
    std::sort(h.members.begin(), h.members.end());
    group[i] = h.name;
    out.hypernodes.push_back(std::move(h));
  }
  // Tier t >= 2: connected blocks of tier t-1 HyperNodes joined by tier t switches.
  std::map<std::string, std::vector<std::string>> servers_of;  // HyperNode -> servers under it
  for (const HyperNode& h : out.hypernodes) servers_of[h.name] = h.members;
  for (uint32_t t = 2; t <= max_tier; ++t) {
    std::map<std::string, std::string> parent;  // union-find over tier t-1 HyperNodes
    std::function<std::string(const std::string&)> find = [&](const std::string& x) {
      auto it = parent.find(x);
      if (it == parent.end() || it->second == x) return x;
      return it->second = find(it->second);
    };
    std::map<std::string, std::vector<topology::NodeIndex>> switches_of;  // root -> tier t switches
    std::vector<std::pair<topology::NodeIndex, std::vector<std::string>>> joins;
    for (topology::NodeIndex i = 0; i < n; ++i) {
      if (fabric.IsServer(i) || tier[i] != t) continue;
      std::vector<std::string> below;
      for (topology::NodeIndex v : adj[i]) {
        if (!fabric.IsServer(v) && tier[v] == t - 1 && group.contains(v)) below.push_back(group[v]);
      }
      for (const std::string& b : below) parent.emplace(b, b);
      for (size_t k = 1; k < below.size(); ++k) parent[find(below[k])] = find(below[0]);
      joins.push_back({i, below});
    }
    std::map<std::string, std::set<std::string>> members;  // root -> tier t-1 HyperNodes
    for (const auto& [sw, below] : joins) {
      if (below.empty()) continue;
      switches_of[find(below[0])].push_back(sw);
      for (const std::string& b : below) members[find(b)].insert(b);
    }
    std::vector<HyperNode> level;
    for (const auto& [root, ms] : members) {
      const std::vector<topology::NodeIndex>& sws = switches_of[root];
      HyperNode h{absl::StrCat("tier", t, "-", fabric.node(sws.front()).id), t,
                  std::vector<std::string>(ms.begin(), ms.end())};
      if (sws.size() == 1) h.name = fabric.node(sws.front()).id;
      for (topology::NodeIndex sw : sws) group[sw] = h.name;
      for (const std::string& m : h.members) {
        for (const std::string& s : servers_of[m]) {
          servers_of[h.name].push_back(s);
          out.node_labels[s].emplace(absl::StrCat(options.label_prefix, "tier-", t), h.name);
        }
      }
      level.push_back(std::move(h));
    }
    std::sort(level.begin(), level.end(), [](const HyperNode& a, const HyperNode& b) { return a.name < b.name; });
    for (HyperNode& h : level) out.hypernodes.push_back(std::move(h));
  }
  uint32_t top = 0;
  for (const HyperNode& h : out.hypernodes) top = std::max(top, h.tier);
  for (uint32_t t = top; t >= 1; --t) out.kueue_levels.push_back(absl::StrCat(options.label_prefix, "tier-", t));
  out.kueue_levels.push_back("kubernetes.io/hostname");
  return out;
}

std::string HyperNodesYaml(const FabricExport& e) {
  std::string out;
  for (const HyperNode& h : e.hypernodes) {
    YAML::Emitter y;
    y << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "topology.volcano.sh/v1alpha1";
    y << YAML::Key << "kind" << YAML::Value << "HyperNode";
    y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << h.name
      << YAML::EndMap;
    y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "tier" << YAML::Value << h.tier;
    y << YAML::Key << "members" << YAML::Value << YAML::BeginSeq;
    for (const std::string& m : h.members) {
      y << YAML::BeginMap << YAML::Key << "type" << YAML::Value << (h.tier == 1 ? "Node" : "HyperNode");
      y << YAML::Key << "selector" << YAML::Value << YAML::BeginMap << YAML::Key << "exactMatch" << YAML::Value
        << YAML::BeginMap << YAML::Key << "name" << YAML::Value << m << YAML::EndMap << YAML::EndMap;
      y << YAML::EndMap;
    }
    y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
    absl::StrAppend(&out, "---\n", y.c_str(), "\n");
  }
  return out;
}

std::string KueueTopologyYaml(const FabricExport& e, const ExportOptions& options) {
  YAML::Emitter y;
  y << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << options.kueue_api_version;
  y << YAML::Key << "kind" << YAML::Value << "Topology";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
    << options.kueue_topology_name << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "levels" << YAML::Value
    << YAML::BeginSeq;
  for (const std::string& l : e.kueue_levels) {
    y << YAML::BeginMap << YAML::Key << "nodeLabel" << YAML::Value << l << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  return absl::StrCat("---\n", y.c_str(), "\n");
}

std::string NodeLabelCommands(const FabricExport& e) {
  std::string out;
  for (const auto& [node, labels] : e.node_labels) {
    absl::StrAppend(&out, "kubectl label node ", node);
    for (const auto& [k, v] : labels) absl::StrAppend(&out, " ", k, "=", v);
    absl::StrAppend(&out, " --overwrite\n");
  }
  return out;
}

}  // namespace phasor::kubernetes
