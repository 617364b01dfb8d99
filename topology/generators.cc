#include "topology/generators.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "topology/absl_compat.h"

namespace phasor::topology {
namespace {

absl::Status CheckPositive(double v, std::string_view field) {
  if (!std::isfinite(v) || v <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(AsAbsl(field), ": must be > 0 (got ", v, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckAtLeastOne(uint32_t v, std::string_view field) {
  if (v < 1) return absl::InvalidArgumentError(absl::StrCat(AsAbsl(field), ": must be >= 1"));
  return absl::OkStatus();
}

// Adds server s<number> with one NIC port and its duplex link to `edge`.
absl::Status AddServerOn(Topology& t, uint32_t number, uint32_t gpus, double nic_gbps,
                         const std::string& edge) {
  const std::string id = absl::StrCat("s", number);
  absl::StatusOr<NodeIndex> s = t.AddServer(id, gpus, {NicPort{"nic0", nic_gbps}});
  if (!s.ok()) return s.status();
  return t.AddDuplexLink(id, edge, nic_gbps, "nic0");
}

}  // namespace

absl::StatusOr<Topology> MakeLeafSpine(const LeafSpineOptions& o) {
  if (absl::Status s = CheckAtLeastOne(o.leaves, "leaf_spine.leaves"); !s.ok()) return s;
  if (absl::Status s = CheckAtLeastOne(o.spines, "leaf_spine.spines"); !s.ok()) return s;
  if (absl::Status s = CheckAtLeastOne(o.servers_per_leaf, "leaf_spine.servers_per_leaf");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckPositive(o.nic_gbps, "leaf_spine.nic_gbps"); !s.ok()) return s;
  const uint64_t capacity = static_cast<uint64_t>(o.leaves) * o.servers_per_leaf;
  // Counted in 64 bits before anything is built: the fabric's size limits.
  if (capacity + o.leaves + o.spines > kMaxNodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "leaf_spine: ", o.leaves, " leaves x ", o.servers_per_leaf, " servers_per_leaf + ", o.spines,
        " spines is more than ", kMaxNodes, " nodes"));
  }
  if (2 * (static_cast<uint64_t>(o.leaves) * o.spines + capacity) > kMaxLinks) {
    return absl::InvalidArgumentError(absl::StrCat("leaf_spine: ", o.leaves, " leaves x ", o.spines,
                                                   " spines is more than ", kMaxLinks, " links"));
  }
  if (o.servers > capacity) {
    return absl::InvalidArgumentError(
        absl::StrCat("leaf_spine.servers: ", o.servers, " do not fit on ", o.leaves, " leaves of ",
                     o.servers_per_leaf, " (at most ", capacity, ")"));
  }
  if (o.uplink_gbps && o.oversubscription) {
    return absl::InvalidArgumentError(
        "leaf_spine.uplink_gbps: give either uplink_gbps or oversubscription, not both");
  }
  double uplink = 0;
  if (o.uplink_gbps) {
    if (absl::Status s = CheckPositive(*o.uplink_gbps, "leaf_spine.uplink_gbps"); !s.ok()) return s;
    uplink = *o.uplink_gbps;
  } else {
    const double ratio = o.oversubscription.value_or(1.0);
    if (absl::Status s = CheckPositive(ratio, "leaf_spine.oversubscription"); !s.ok()) return s;
    uplink = o.servers_per_leaf * o.nic_gbps / (o.spines * ratio);
  }
  const uint32_t servers = o.servers == 0 ? static_cast<uint32_t>(capacity) : o.servers;

  Topology t;
  for (uint32_t i = 1; i <= o.spines; ++i) {
    if (auto s = t.AddSwitch(absl::StrCat("spine", i)); !s.ok()) return s.status();
  }
  uint32_t next_server = 1;
  for (uint32_t l = 1; l <= o.leaves; ++l) {
    const std::string leaf = absl::StrCat("leaf", l);
    if (auto s = t.AddSwitch(leaf); !s.ok()) return s.status();
    for (uint32_t i = 1; i <= o.spines; ++i) {
      if (auto s = t.AddDuplexLink(leaf, absl::StrCat("spine", i), uplink); !s.ok()) return s;
    }
    for (uint32_t j = 0; j < o.servers_per_leaf && next_server <= servers; ++j, ++next_server) {
      if (auto s = AddServerOn(t, next_server, o.gpus_per_server, o.nic_gbps, leaf); !s.ok()) {
        return s;
      }
    }
  }
  return t;
}

absl::StatusOr<Topology> MakeFatTree(const FatTreeOptions& o) {
  if (o.k < 2 || o.k % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("fat_tree.k: must be even and >= 2 (got ", o.k, ")"));
  }
  // k = 64 is 65,536 servers (about 120 MB here); larger fabrics are given
  // as explicit YAML.
  if (o.k > 64) return absl::InvalidArgumentError("fat_tree.k: must be <= 64");
  if (absl::Status s = CheckPositive(o.nic_gbps, "fat_tree.nic_gbps"); !s.ok()) return s;
  const double fabric = o.fabric_gbps == 0 ? o.nic_gbps : o.fabric_gbps;
  if (absl::Status s = CheckPositive(fabric, "fat_tree.fabric_gbps"); !s.ok()) return s;
  const uint32_t half = o.k / 2;
  const uint32_t full = o.k * half * half;
  if (o.servers > full) {
    return absl::InvalidArgumentError(absl::StrCat("fat_tree.servers: ", o.servers,
                                                   " do not fit in a k=", o.k,
                                                   " fat-tree (at most ", full, ")"));
  }
  const uint32_t servers = o.servers == 0 ? full : o.servers;

  Topology t;
  for (uint32_t c = 1; c <= half * half; ++c) {
    if (auto s = t.AddSwitch(absl::StrCat("core", c)); !s.ok()) return s.status();
  }
  uint32_t next_server = 1;
  for (uint32_t p = 1; p <= o.k; ++p) {
    for (uint32_t a = 1; a <= half; ++a) {
      const std::string agg = absl::StrCat("p", p, "-agg", a);
      if (auto s = t.AddSwitch(agg); !s.ok()) return s.status();
      // Aggregation switch a of every pod reaches cores (a-1)*k/2+1 .. a*k/2.
      for (uint32_t c = 1; c <= half; ++c) {
        if (auto s = t.AddDuplexLink(agg, absl::StrCat("core", (a - 1) * half + c), fabric);
            !s.ok()) {
          return s;
        }
      }
    }
    for (uint32_t e = 1; e <= half; ++e) {
      const std::string edge = absl::StrCat("p", p, "-edge", e);
      if (auto s = t.AddSwitch(edge); !s.ok()) return s.status();
      for (uint32_t a = 1; a <= half; ++a) {
        if (auto s = t.AddDuplexLink(edge, absl::StrCat("p", p, "-agg", a), fabric); !s.ok()) {
          return s;
        }
      }
      for (uint32_t h = 0; h < half && next_server <= servers; ++h, ++next_server) {
        if (auto s = AddServerOn(t, next_server, o.gpus_per_server, o.nic_gbps, edge); !s.ok()) {
          return s;
        }
      }
    }
  }
  return t;
}

}  // namespace phasor::topology
