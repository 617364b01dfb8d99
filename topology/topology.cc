#include "topology/topology.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "topology/absl_compat.h"

namespace phasor::topology {

std::string LinkId(std::string_view from, std::string_view to) {
  return absl::StrCat(AsAbsl(from), "->", AsAbsl(to));
}

absl::Status Topology::CheckNewNodeId(std::string_view id) const {
  if (id.empty()) return absl::InvalidArgumentError("node id: must not be empty");
  for (char c : id) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      return absl::InvalidArgumentError(
          absl::StrCat("node id '", AsAbsl(id), "': must not contain spaces"));
    }
  }
  if (id.find("->") != std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("node id '", AsAbsl(id), "': must not contain '->'"));
  }
  if (node_by_id_.contains(AsAbsl(id))) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate node id '", AsAbsl(id), "'"));
  }
  if (nodes_.size() >= kMaxNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("node id '", AsAbsl(id), "': a fabric has at most ", kMaxNodes, " nodes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<NodeIndex> Topology::AddServer(std::string id, uint32_t gpus,
                                              std::vector<NicPort> nics) {
  if (absl::Status s = CheckNewNodeId(id); !s.ok()) return s;
  if (gpus > kMaxGpusPerServer) {
    return absl::InvalidArgumentError(
        absl::StrCat("server '", id, "': gpus ", gpus, " is outside 0..", kMaxGpusPerServer));
  }
  for (size_t i = 0; i < nics.size(); ++i) {
    const NicPort& nic = nics[i];
    if (nic.name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("server '", id, "': nics[", i, "].name: must not be empty"));
    }
    if (!std::isfinite(nic.speed_gbps) || nic.speed_gbps <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "server '", id, "': nic '", nic.name, "': speed must be > 0 (got ", nic.speed_gbps, ")"));
    }
    if (nic.speed_gbps < kMinLinkGbps || nic.speed_gbps > kMaxLinkGbps) {
      return absl::InvalidArgumentError(absl::StrCat("server '", id, "': nic '", nic.name, "': speed ",
                                                     nic.speed_gbps, " is outside ", kMinLinkGbps, "..",
                                                     kMaxLinkGbps));
    }
    for (size_t j = 0; j < i; ++j) {
      if (nics[j].name == nic.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("server '", id, "': duplicate nic '", nic.name, "'"));
      }
    }
  }
  const auto index = static_cast<NodeIndex>(nodes_.size());
  node_by_id_.emplace(id, index);
  Node node;
  node.id = std::move(id);
  node.kind = NodeKind::kServer;
  node.gpus = gpus;
  node.nics = std::move(nics);
  nodes_.push_back(std::move(node));
  ++num_servers_;
  num_gpus_ += gpus;
  return index;
}

absl::StatusOr<NodeIndex> Topology::AddSwitch(std::string id) {
  if (absl::Status s = CheckNewNodeId(id); !s.ok()) return s;
  const auto index = static_cast<NodeIndex>(nodes_.size());
  node_by_id_.emplace(id, index);
  Node node;
  node.id = std::move(id);
  node.kind = NodeKind::kSwitch;
  nodes_.push_back(std::move(node));
  return index;
}

absl::StatusOr<LinkIndex> Topology::AddLink(std::string_view from, std::string_view to,
                                            double capacity_gbps, std::string nic) {
  const std::string id = LinkId(from, to);
  const std::optional<NodeIndex> a = FindNode(from);
  if (!a)
    return absl::NotFoundError(absl::StrCat("link '", id, "': unknown node '", AsAbsl(from), "'"));
  const std::optional<NodeIndex> b = FindNode(to);
  if (!b)
    return absl::NotFoundError(absl::StrCat("link '", id, "': unknown node '", AsAbsl(to), "'"));
  if (*a == *b) return absl::InvalidArgumentError(absl::StrCat("link '", id, "': a self-loop"));
  if (!std::isfinite(capacity_gbps) || capacity_gbps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("link '", id, "': capacity_gbps must be > 0 (got ", capacity_gbps, ")"));
  }
  if (capacity_gbps < kMinLinkGbps || capacity_gbps > kMaxLinkGbps) {
    return absl::InvalidArgumentError(absl::StrCat("link '", id, "': capacity_gbps ", capacity_gbps,
                                                   " is outside ", kMinLinkGbps, "..", kMaxLinkGbps));
  }
  if (links_.size() >= kMaxLinks) {
    return absl::InvalidArgumentError(
        absl::StrCat("link '", id, "': a fabric has at most ", kMaxLinks, " links"));
  }
  if (link_by_id_.contains(id)) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate link '", id, "'"));
  }
  if (!nic.empty()) {
    bool found = false;
    for (NodeIndex end : {*a, *b}) {
      for (const NicPort& port : nodes_[end].nics) found = found || port.name == nic;
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("link '", id, "': nic '", nic,
                                                     "' is not a NIC port of '", AsAbsl(from),
                                                     "' or '", AsAbsl(to), "'"));
    }
  }
  const auto index = static_cast<LinkIndex>(links_.size());
  link_by_id_.emplace(id, index);
  links_.push_back(Link{id, *a, *b, capacity_gbps, std::move(nic)});
  nodes_[*a].out.push_back(index);
  nodes_[*b].in.push_back(index);
  return index;
}

absl::Status Topology::AddDuplexLink(std::string_view a, std::string_view b, double capacity_gbps,
                                     std::string nic) {
  if (absl::StatusOr<LinkIndex> ab = AddLink(a, b, capacity_gbps, nic); !ab.ok()) {
    return ab.status();
  }
  return AddLink(b, a, capacity_gbps, std::move(nic)).status();
}

std::optional<NodeIndex> Topology::FindNode(std::string_view id) const {
  auto it = node_by_id_.find(AsAbsl(id));
  if (it == node_by_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<LinkIndex> Topology::FindLink(std::string_view id) const {
  auto it = link_by_id_.find(AsAbsl(id));
  if (it == link_by_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<LinkIndex> Topology::FindLink(NodeIndex from, NodeIndex to) const {
  for (LinkIndex l : nodes_[from].out) {
    if (links_[l].to == to) return l;
  }
  return std::nullopt;
}

std::vector<NodeIndex> Topology::Servers() const {
  std::vector<NodeIndex> out;
  out.reserve(num_servers_);
  for (NodeIndex i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].kind == NodeKind::kServer) out.push_back(i);
  }
  return out;
}

std::optional<NodeIndex> Topology::LeafOf(NodeIndex server) const {
  if (server >= nodes_.size() || !IsServer(server)) return std::nullopt;
  for (LinkIndex l : nodes_[server].out) {
    if (!IsServer(links_[l].to)) return links_[l].to;
  }
  return std::nullopt;
}

bool SameModel(const Topology& a, const Topology& b) {
  if (a.nodes().size() != b.nodes().size() || a.links().size() != b.links().size()) return false;
  for (const Node& na : a.nodes()) {
    std::optional<NodeIndex> ib = b.FindNode(na.id);
    if (!ib) return false;
    const Node& nb = b.node(*ib);
    if (na.kind != nb.kind || na.gpus != nb.gpus || na.nics.size() != nb.nics.size()) return false;
    for (size_t i = 0; i < na.nics.size(); ++i) {
      if (na.nics[i].name != nb.nics[i].name || na.nics[i].speed_gbps != nb.nics[i].speed_gbps) {
        return false;
      }
    }
  }
  for (const Link& la : a.links()) {
    std::optional<LinkIndex> ib = b.FindLink(la.id);
    if (!ib) return false;
    const Link& lb = b.link(*ib);
    if (la.capacity_gbps != lb.capacity_gbps || la.nic != lb.nic) return false;
  }
  return true;
}

TopologySummary Summarize(const Topology& topology) {
  TopologySummary s;
  s.servers = topology.num_servers();
  s.gpus = topology.num_gpus();
  s.switches = topology.num_switches();
  s.links = topology.links().size();
  bool first = true, first_server = true;
  for (const Link& l : topology.links()) {
    if (first) s.min_capacity_gbps = s.max_capacity_gbps = l.capacity_gbps;
    s.min_capacity_gbps = std::min(s.min_capacity_gbps, l.capacity_gbps);
    s.max_capacity_gbps = std::max(s.max_capacity_gbps, l.capacity_gbps);
    first = false;
    if (topology.IsServer(l.from)) {
      if (first_server) s.server_link_gbps_min = s.server_link_gbps_max = l.capacity_gbps;
      s.server_link_gbps_min = std::min(s.server_link_gbps_min, l.capacity_gbps);
      s.server_link_gbps_max = std::max(s.server_link_gbps_max, l.capacity_gbps);
      first_server = false;
    }
  }

  // Tier = hop distance to the nearest server, over links in either direction.
  constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
  const size_t n = topology.nodes().size();
  std::vector<uint32_t> tier(n, kUnset);
  std::deque<NodeIndex> queue;
  for (NodeIndex i = 0; i < n; ++i) {
    if (topology.IsServer(i)) {
      tier[i] = 0;
      queue.push_back(i);
    }
  }
  while (!queue.empty()) {
    const NodeIndex u = queue.front();
    queue.pop_front();
    auto visit = [&](NodeIndex v) {
      if (tier[v] == kUnset) {
        tier[v] = tier[u] + 1;
        queue.push_back(v);
      }
    };
    for (LinkIndex l : topology.node(u).out) visit(topology.link(l).to);
    for (LinkIndex l : topology.node(u).in) visit(topology.link(l).from);
  }

  struct Acc {
    uint32_t switches = 0;
    bool has_ratio = false;
    double min_ratio = 0, max_ratio = 0;
    bool has_up = false;
    double min_up = 0, max_up = 0;
  };
  std::map<uint32_t, Acc> acc;
  for (NodeIndex i = 0; i < n; ++i) {
    if (topology.IsServer(i)) continue;
    if (tier[i] == kUnset) {
      ++s.unreachable_switches;
      continue;
    }
    Acc& a = acc[tier[i]];
    ++a.switches;
    double down_in = 0, up_out = 0;
    for (LinkIndex l : topology.node(i).in) {
      const Link& link = topology.link(l);
      if (tier[link.from] != kUnset && tier[link.from] + 1 == tier[i])
        down_in += link.capacity_gbps;
    }
    for (LinkIndex l : topology.node(i).out) {
      const Link& link = topology.link(l);
      if (tier[link.to] != kUnset && tier[link.to] == tier[i] + 1) {
        up_out += link.capacity_gbps;
        if (!a.has_up) a.min_up = a.max_up = link.capacity_gbps;
        a.min_up = std::min(a.min_up, link.capacity_gbps);
        a.max_up = std::max(a.max_up, link.capacity_gbps);
        a.has_up = true;
      }
    }
    if (up_out > 0) {
      const double ratio = down_in / up_out;
      if (!a.has_ratio) a.min_ratio = a.max_ratio = ratio;
      a.min_ratio = std::min(a.min_ratio, ratio);
      a.max_ratio = std::max(a.max_ratio, ratio);
      a.has_ratio = true;
    }
  }
  for (const auto& [t, a] : acc) {
    s.tiers.push_back(TierSummary{t, a.switches, a.min_ratio, a.max_ratio, a.min_up, a.max_up});
  }
  return s;
}

}  // namespace phasor::topology
