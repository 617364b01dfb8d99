#include "topology/topology_yaml.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "topology/absl_compat.h"
#include "topology/generators.h"
#include "yaml-cpp/yaml.h"

namespace phasor::topology {
namespace {

// Errors carry "<source>:<line>: ". yaml-cpp's marks count lines from 0.
class YamlReader {
 public:
  explicit YamlReader(std::string_view source) : source_(source) {}

  absl::Status Error(const YAML::Node& at, std::string_view what,
                     absl::StatusCode code = absl::StatusCode::kInvalidArgument) const {
    return absl::Status(code, absl::StrCat(source_, ":", Line(at), ": ", AsAbsl(what)));
  }
  absl::Status Wrap(const YAML::Node& at, const absl::Status& s) const {
    return absl::Status(s.code(), absl::StrCat(source_, ":", Line(at), ": ", s.message()));
  }
  static int Line(const YAML::Node& n) { return std::max(n.Mark().line, 0) + 1; }

  // Every key of `map` must be in `allowed`.
  absl::Status CheckKeys(const YAML::Node& map, std::string_view what,
                         std::initializer_list<std::string_view> allowed) const {
    if (!map.IsMap()) return Error(map, absl::StrCat(AsAbsl(what), ": must be a mapping"));
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      bool ok = false;
      for (std::string_view a : allowed) ok = ok || key == a;
      if (!ok) return Error(kv.first, absl::StrCat(AsAbsl(what), ": unknown key '", key, "'"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const YAML::Node& map, const char* key,
                                     std::string_view what) const {
    const YAML::Node n = map[key];
    if (!n) return Error(map, absl::StrCat(AsAbsl(what), ": missing '", key, "'"));
    if (!n.IsScalar() || n.Scalar().empty()) {
      return Error(n, absl::StrCat(AsAbsl(what), ".", key, ": must be a non-empty string"));
    }
    return n.Scalar();
  }

  absl::StatusOr<double> Number(const YAML::Node& n, std::string_view what) const {
    if (!n.IsScalar()) return Error(n, absl::StrCat(AsAbsl(what), ": must be a number"));
    double v = 0;
    const std::string& s = n.Scalar();
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) {
      return Error(n, absl::StrCat(AsAbsl(what), ": must be a number (got '", s, "')"));
    }
    if (!std::isfinite(v)) {
      return Error(n, absl::StrCat(AsAbsl(what), ": must be a finite number (got '", s, "')"));
    }
    return v;
  }

  absl::StatusOr<uint32_t> Count(const YAML::Node& n, std::string_view what) const {
    absl::StatusOr<double> v = Number(n, what);
    if (!v.ok()) return v.status();
    // Range first: converting a double outside uint32_t is undefined.
    if (!(*v >= 0 && *v <= std::numeric_limits<uint32_t>::max()) ||
        *v != static_cast<double>(static_cast<uint32_t>(*v))) {
      return Error(
          n, absl::StrCat(AsAbsl(what), ": must be a whole number >= 0 (got ", n.Scalar(), ")"));
    }
    return static_cast<uint32_t>(*v);
  }

 private:
  std::string source_;
};

absl::StatusOr<Topology> Generate(const YamlReader& r, const YAML::Node& gen) {
  if (absl::Status s = r.CheckKeys(gen, "generate", {"leaf_spine", "fat_tree"}); !s.ok()) return s;
  if (gen.size() != 1) return r.Error(gen, "generate: give exactly one of leaf_spine, fat_tree");
  if (const YAML::Node ls = gen["leaf_spine"]) {
    if (absl::Status s =
            r.CheckKeys(ls, "generate.leaf_spine",
                        {"leaves", "spines", "servers_per_leaf", "servers", "gpus_per_server",
                         "nic_gbps", "uplink_gbps", "oversubscription"});
        !s.ok()) {
      return s;
    }
    LeafSpineOptions o;
    for (auto [key, field] :
         {std::pair{"leaves", &o.leaves}, std::pair{"spines", &o.spines},
          std::pair{"servers_per_leaf", &o.servers_per_leaf}, std::pair{"servers", &o.servers},
          std::pair{"gpus_per_server", &o.gpus_per_server}}) {
      if (const YAML::Node n = ls[key]) {
        absl::StatusOr<uint32_t> v = r.Count(n, absl::StrCat("generate.leaf_spine.", key));
        if (!v.ok()) return v.status();
        *field = *v;
      }
    }
    if (const YAML::Node n = ls["nic_gbps"]) {
      absl::StatusOr<double> v = r.Number(n, "generate.leaf_spine.nic_gbps");
      if (!v.ok()) return v.status();
      o.nic_gbps = *v;
    }
    if (const YAML::Node n = ls["uplink_gbps"]) {
      absl::StatusOr<double> v = r.Number(n, "generate.leaf_spine.uplink_gbps");
      if (!v.ok()) return v.status();
      o.uplink_gbps = *v;
    }
    if (const YAML::Node n = ls["oversubscription"]) {
      absl::StatusOr<double> v = r.Number(n, "generate.leaf_spine.oversubscription");
      if (!v.ok()) return v.status();
      o.oversubscription = *v;
    }
    absl::StatusOr<Topology> t = MakeLeafSpine(o);
    if (!t.ok()) return r.Wrap(ls, t.status());
    return t;
  }
  const YAML::Node ft = gen["fat_tree"];
  if (absl::Status s = r.CheckKeys(ft, "generate.fat_tree",
                                   {"k", "servers", "gpus_per_server", "nic_gbps", "fabric_gbps"});
      !s.ok()) {
    return s;
  }
  FatTreeOptions o;
  for (auto [key, field] : {std::pair{"k", &o.k}, std::pair{"servers", &o.servers},
                            std::pair{"gpus_per_server", &o.gpus_per_server}}) {
    if (const YAML::Node n = ft[key]) {
      absl::StatusOr<uint32_t> v = r.Count(n, absl::StrCat("generate.fat_tree.", key));
      if (!v.ok()) return v.status();
      *field = *v;
    }
  }
  for (auto [key, field] :
       {std::pair{"nic_gbps", &o.nic_gbps}, std::pair{"fabric_gbps", &o.fabric_gbps}}) {
    if (const YAML::Node n = ft[key]) {
      absl::StatusOr<double> v = r.Number(n, absl::StrCat("generate.fat_tree.", key));
      if (!v.ok()) return v.status();
      *field = *v;
    }
  }
  absl::StatusOr<Topology> t = MakeFatTree(o);
  if (!t.ok()) return r.Wrap(ft, t.status());
  return t;
}

absl::StatusOr<Topology> Build(const YamlReader& r, const YAML::Node& root) {
  if (!root || root.IsNull()) return r.Error(root, "the topology is empty");
  if (absl::Status s = r.CheckKeys(root, "topology", {"generate", "servers", "switches", "links"});
      !s.ok()) {
    return s;
  }
  Topology t;
  if (const YAML::Node gen = root["generate"]) {
    absl::StatusOr<Topology> g = Generate(r, gen);
    if (!g.ok()) return g.status();
    t = *std::move(g);
  }
  absl::flat_hash_map<std::string, int> node_line;  // where each node of the file was defined

  auto check_sequence = [&](const YAML::Node& n, std::string_view what) -> absl::Status {
    if (!n.IsSequence()) return r.Error(n, absl::StrCat(AsAbsl(what), ": must be a list"));
    return absl::OkStatus();
  };
  auto add_node_error = [&](const YAML::Node& at, const std::string& id,
                            const absl::Status& s) -> absl::Status {
    auto it = node_line.find(id);
    if (it != node_line.end() && t.FindNode(id)) {
      return r.Error(at, absl::StrCat("duplicate node id '", id, "' (first defined at line ",
                                      it->second, ")"));
    }
    return r.Wrap(at, s);
  };

  if (const YAML::Node servers = root["servers"]) {
    if (absl::Status s = check_sequence(servers, "servers"); !s.ok()) return s;
    for (size_t i = 0; i < servers.size(); ++i) {
      const YAML::Node e = servers[i];
      const std::string what = absl::StrCat("servers[", i, "]");
      if (absl::Status s = r.CheckKeys(e, what, {"id", "gpus", "nics"}); !s.ok()) return s;
      absl::StatusOr<std::string> id = r.String(e, "id", what);
      if (!id.ok()) return id.status();
      uint32_t gpus = 0;
      if (const YAML::Node g = e["gpus"]) {
        absl::StatusOr<uint32_t> v = r.Count(g, absl::StrCat("server '", *id, "': gpus"));
        if (!v.ok()) return v.status();
        gpus = *v;
      }
      std::vector<NicPort> nics;
      if (const YAML::Node ns = e["nics"]) {
        if (absl::Status s = check_sequence(ns, absl::StrCat("server '", *id, "': nics"));
            !s.ok()) {
          return s;
        }
        for (size_t j = 0; j < ns.size(); ++j) {
          const YAML::Node nic = ns[j];
          const std::string nwhat = absl::StrCat("server '", *id, "': nics[", j, "]");
          if (absl::Status s = r.CheckKeys(nic, nwhat, {"name", "gbps"}); !s.ok()) return s;
          absl::StatusOr<std::string> name = r.String(nic, "name", nwhat);
          if (!name.ok()) return name.status();
          if (!nic["gbps"]) return r.Error(nic, absl::StrCat(nwhat, ": missing 'gbps'"));
          absl::StatusOr<double> gbps =
              r.Number(nic["gbps"], absl::StrCat("server '", *id, "': nic '", *name, "': gbps"));
          if (!gbps.ok()) return gbps.status();
          if (!(*gbps > 0)) {
            return r.Error(nic["gbps"], absl::StrCat("server '", *id, "': nic '", *name,
                                                     "': gbps must be > 0 (got ", *gbps, ")"));
          }
          nics.push_back(NicPort{*name, *gbps});
        }
      }
      if (absl::StatusOr<NodeIndex> n = t.AddServer(*id, gpus, std::move(nics)); !n.ok()) {
        return add_node_error(e, *id, n.status());
      }
      node_line.emplace(*id, YamlReader::Line(e));
    }
  }

  if (const YAML::Node switches = root["switches"]) {
    if (absl::Status s = check_sequence(switches, "switches"); !s.ok()) return s;
    for (size_t i = 0; i < switches.size(); ++i) {
      const YAML::Node e = switches[i];
      const std::string what = absl::StrCat("switches[", i, "]");
      std::string id;
      if (e.IsScalar()) {
        id = e.Scalar();
      } else {
        if (absl::Status s = r.CheckKeys(e, what, {"id"}); !s.ok()) return s;
        absl::StatusOr<std::string> v = r.String(e, "id", what);
        if (!v.ok()) return v.status();
        id = *v;
      }
      if (absl::StatusOr<NodeIndex> n = t.AddSwitch(id); !n.ok()) {
        return add_node_error(e, id, n.status());
      }
      node_line.emplace(id, YamlReader::Line(e));
    }
  }

  if (const YAML::Node links = root["links"]) {
    if (absl::Status s = check_sequence(links, "links"); !s.ok()) return s;
    for (size_t i = 0; i < links.size(); ++i) {
      const YAML::Node e = links[i];
      const std::string what = absl::StrCat("links[", i, "]");
      if (absl::Status s = r.CheckKeys(
              e, what, {"a", "b", "from", "to", "capacity_gbps", "capacity_gbps_ba", "nic"});
          !s.ok()) {
        return s;
      }
      const bool duplex = e["a"] || e["b"];
      if (duplex && (e["from"] || e["to"])) {
        return r.Error(
            e, absl::StrCat(AsAbsl(what), ": give either a/b (duplex) or from/to (one direction)"));
      }
      if (!duplex && e["capacity_gbps_ba"]) {
        return r.Error(e,
                       absl::StrCat(AsAbsl(what), ": capacity_gbps_ba needs a duplex link (a/b)"));
      }
      absl::StatusOr<std::string> x = r.String(e, duplex ? "a" : "from", what);
      if (!x.ok()) return x.status();
      absl::StatusOr<std::string> y = r.String(e, duplex ? "b" : "to", what);
      if (!y.ok()) return y.status();
      const std::string id = LinkId(*x, *y);
      std::string nic;
      if (const YAML::Node n = e["nic"]) {
        if (!n.IsScalar()) return r.Error(n, absl::StrCat("link '", id, "': nic must be a string"));
        nic = n.Scalar();
      }
      double capacity = 0;
      if (const YAML::Node c = e["capacity_gbps"]) {
        absl::StatusOr<double> v = r.Number(c, absl::StrCat("link '", id, "': capacity_gbps"));
        if (!v.ok()) return v.status();
        capacity = *v;
      } else if (!nic.empty()) {
        // Defaults to the named NIC port's speed.
        for (const std::string* end : {&*x, &*y}) {
          if (std::optional<NodeIndex> n = t.FindNode(*end)) {
            for (const NicPort& p : t.node(*n).nics) {
              if (p.name == nic && capacity == 0) capacity = p.speed_gbps;
            }
          }
        }
        if (capacity == 0) {
          // Let AddLink name the missing node or NIC port.
          absl::StatusOr<LinkIndex> l = t.AddLink(*x, *y, 1.0, nic);
          return r.Wrap(e, l.ok() ? absl::InvalidArgumentError(
                                        absl::StrCat("link '", id, "': missing 'capacity_gbps'"))
                                  : l.status());
        }
      } else {
        return r.Error(e, absl::StrCat("link '", id, "': missing 'capacity_gbps'"));
      }
      double capacity_ba = capacity;
      if (const YAML::Node c = e["capacity_gbps_ba"]) {
        absl::StatusOr<double> v =
            r.Number(c, absl::StrCat("link '", LinkId(*y, *x), "': capacity_gbps_ba"));
        if (!v.ok()) return v.status();
        capacity_ba = *v;
      }
      if (absl::StatusOr<LinkIndex> l = t.AddLink(*x, *y, capacity, nic); !l.ok()) {
        return r.Wrap(e, l.status());
      }
      if (duplex) {
        if (absl::StatusOr<LinkIndex> l = t.AddLink(*y, *x, capacity_ba, nic); !l.ok()) {
          return r.Wrap(e, l.status());
        }
      }
    }
  }
  return t;
}

// Scalars that are safe unquoted in YAML; everything else is double-quoted.
std::string Quote(std::string_view s) {
  bool plain = !s.empty() && ((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z'));
  for (char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || c == '/';
    plain = plain && ok;
  }
  static const std::set<std::string, std::less<>> kReserved = {
      "true", "false", "yes",  "no",  "on",   "off",  "null",  "True", "False",
      "Yes",  "No",    "On",   "Off", "Null", "TRUE", "FALSE", "YES",  "NO",
      "ON",   "OFF",   "NULL", "y",   "n",    "Y",    "N"};
  if (plain && !kReserved.contains(s)) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

// Shortest text that reads back to the same double.
std::string Num(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, ptr) : absl::StrCat(v);
}

}  // namespace

absl::StatusOr<Topology> ParseTopologyYaml(std::string_view text, std::string_view source_name) {
  const YamlReader r(source_name);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(AsAbsl(source_name), ":", e.mark.line + 1, ": YAML syntax error: ", e.msg));
  }
  try {
    return Build(r, root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(AsAbsl(source_name), ":", e.mark.line + 1, ": ", e.msg));
  }
}

absl::StatusOr<Topology> LoadTopologyYaml(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the file"));
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseTopologyYaml(buf.str(), path);
}

std::string ToYaml(const Topology& t) {
  std::string out;
  out += "# phasor topology (docs/topology.md)\n";
  out += absl::StrCat("# ", t.num_servers(), " servers, ", t.num_gpus(), " GPUs, ",
                      t.num_switches(), " switches, ", t.links().size(), " directed links\n");
  if (t.num_servers() > 0) {
    out += "servers:\n";
    for (const Node& n : t.nodes()) {
      if (n.kind != NodeKind::kServer) continue;
      absl::StrAppend(&out, "  - {id: ", Quote(n.id), ", gpus: ", n.gpus);
      if (!n.nics.empty()) {
        out += ", nics: [";
        for (size_t i = 0; i < n.nics.size(); ++i) {
          absl::StrAppend(&out, i ? ", " : "", "{name: ", Quote(n.nics[i].name),
                          ", gbps: ", Num(n.nics[i].speed_gbps), "}");
        }
        out += "]";
      }
      out += "}\n";
    }
  }
  if (t.num_switches() > 0) {
    out += "switches:\n";
    for (const Node& n : t.nodes()) {
      if (n.kind == NodeKind::kSwitch) absl::StrAppend(&out, "  - {id: ", Quote(n.id), "}\n");
    }
  }
  if (!t.links().empty()) {
    out += "links:\n";
    std::vector<bool> done(t.links().size(), false);
    for (LinkIndex i = 0; i < t.links().size(); ++i) {
      if (done[i]) continue;
      const Link& l = t.link(i);
      done[i] = true;
      const std::string nic = l.nic.empty() ? "" : absl::StrCat(", nic: ", Quote(l.nic));
      std::optional<LinkIndex> back = t.FindLink(l.to, l.from);
      if (back && !done[*back] && t.link(*back).nic == l.nic) {
        done[*back] = true;
        const double ba = t.link(*back).capacity_gbps;
        absl::StrAppend(&out, "  - {a: ", Quote(t.node(l.from).id), ", b: ", Quote(t.node(l.to).id),
                        ", capacity_gbps: ", Num(l.capacity_gbps),
                        ba == l.capacity_gbps ? "" : absl::StrCat(", capacity_gbps_ba: ", Num(ba)),
                        nic, "}\n");
      } else {
        absl::StrAppend(&out, "  - {from: ", Quote(t.node(l.from).id),
                        ", to: ", Quote(t.node(l.to).id), ", capacity_gbps: ", Num(l.capacity_gbps),
                        nic, "}\n");
      }
    }
  }
  return out;
}

}  // namespace phasor::topology
