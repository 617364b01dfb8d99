#include "integrations/kubernetes/extender_types.h"

#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace phasor::kubernetes {
namespace {

using nlohmann::json;

absl::Status Bad(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

std::string Path(absl::string_view parent, absl::string_view child) {
  return parent.empty() ? std::string(child) : absl::StrCat(parent, ".", child);
}

// Go's encoding/json matches field names case-insensitively; an exact match wins.
const json* GoField(const json& object, absl::string_view name) {
  auto it = object.find(std::string(name));
  if (it != object.end()) return &*it;
  for (auto i = object.begin(); i != object.end(); ++i) {
    if (absl::EqualsIgnoreCase(i.key(), name)) return &i.value();
  }
  return nullptr;
}

absl::StatusOr<json> ParseBody(absl::string_view body) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad("body", "not valid JSON");
  if (!doc.is_object() && !doc.is_array()) return Bad("body", "must be a JSON object or array");
  return doc;
}

absl::Status NeedObject(const json& doc, absl::string_view field) {
  if (!doc.is_object()) return Bad(field, "must be an object");
  return absl::OkStatus();
}

absl::StatusOr<std::string> StringField(const json& object, absl::string_view name, absl::string_view parent,
                                        bool go_names) {
  const json* v = go_names ? GoField(object, name) : nullptr;
  if (!go_names) {
    auto it = object.find(std::string(name));
    if (it != object.end()) v = &*it;
  }
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) return Bad(Path(parent, name), "must be a string");
  return v->get<std::string>();
}

absl::StatusOr<std::map<std::string, std::string>> StringMap(const json& object, absl::string_view name,
                                                             absl::string_view parent) {
  std::map<std::string, std::string> out;
  auto it = object.find(std::string(name));
  if (it == object.end() || it->is_null()) return out;
  const std::string field = Path(parent, name);
  if (!it->is_object()) return Bad(field, "must be an object");
  for (auto i = it->begin(); i != it->end(); ++i) {
    if (!i.value().is_string()) return Bad(absl::StrCat(field, "[", i.key(), "]"), "must be a string");
    out[i.key()] = i.value().get<std::string>();
  }
  return out;
}

// A resource quantity of a countable resource: a whole number, as JSON number or string.
absl::StatusOr<uint32_t> WholeQuantity(const json& v, absl::string_view field) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > 1'000'000) return Bad(field, "must be at most 1000000");
    return static_cast<uint32_t>(v.get<uint64_t>());
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty() && n <= 1'000'000) return n;
  }
  return Bad(field, "must be a whole number of GPUs");
}

absl::StatusOr<std::vector<std::string>> StringList(const json& v, absl::string_view field) {
  if (!v.is_array()) return Bad(field, "must be an array of strings or null");
  std::vector<std::string> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return Bad(absl::StrCat(field, "[", i, "]"), "must be a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

absl::StatusOr<NodeList> NodeListFromJson(const json& v, absl::string_view field) {
  if (absl::Status s = NeedObject(v, field); !s.ok()) return s;
  NodeList list;
  auto meta = v.find("metadata");
  if (meta != v.end()) list.metadata = *meta;
  auto items = v.find("items");
  if (items == v.end() || items->is_null()) return list;
  const std::string items_field = Path(field, "items");
  if (!items->is_array()) return Bad(items_field, "must be an array");
  list.items.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    absl::StatusOr<Node> node = NodeFromJson((*items)[i], absl::StrCat(items_field, "[", i, "]"));
    if (!node.ok()) return node.status();
    list.items.push_back(*std::move(node));
  }
  return list;
}

json NodeListToJson(const NodeList& list) {
  json items = json::array();
  for (const Node& n : list.items) items.push_back(n.raw);
  return json{{"metadata", list.metadata}, {"items", std::move(items)}};
}

json NullableStrings(const std::optional<std::vector<std::string>>& v) {
  return v ? json(*v) : json(nullptr);
}

absl::StatusOr<int64_t> IntField(const json& object, absl::string_view name, absl::string_view parent) {
  const json* v = GoField(object, name);
  if (v == nullptr || v->is_null()) return 0;
  if (!v->is_number_integer()) return Bad(Path(parent, name), "must be an integer");
  return v->get<int64_t>();
}

absl::StatusOr<MetaVictims> MetaVictimsFromJson(const json& v, absl::string_view field) {
  if (absl::Status s = NeedObject(v, field); !s.ok()) return s;
  MetaVictims out;
  const json* pods = GoField(v, "Pods");
  if (pods != nullptr && !pods->is_null()) {
    if (!pods->is_array()) return Bad(Path(field, "Pods"), "must be an array");
    for (size_t i = 0; i < pods->size(); ++i) {
      const std::string pf = absl::StrCat(field, ".Pods[", i, "]");
      if (absl::Status s = NeedObject((*pods)[i], pf); !s.ok()) return s;
      absl::StatusOr<std::string> uid = StringField((*pods)[i], "UID", pf, true);
      if (!uid.ok()) return uid.status();
      out.pod_uids.push_back(*uid);
    }
  }
  absl::StatusOr<int64_t> n = IntField(v, "NumPDBViolations", field);
  if (!n.ok()) return n.status();
  out.num_pdb_violations = *n;
  return out;
}

json ToJson(const MetaVictims& v) {
  json pods = json::array();
  for (const std::string& uid : v.pod_uids) pods.push_back(json{{"UID", uid}});
  return json{{"Pods", std::move(pods)}, {"NumPDBViolations", v.num_pdb_violations}};
}

absl::StatusOr<std::map<std::string, MetaVictims>> MetaVictimsMap(const json& doc, absl::string_view name) {
  std::map<std::string, MetaVictims> out;
  const json* m = GoField(doc, name);
  if (m == nullptr || m->is_null()) return out;
  if (!m->is_object()) return Bad(name, "must be an object");
  for (auto i = m->begin(); i != m->end(); ++i) {
    absl::StatusOr<MetaVictims> v = MetaVictimsFromJson(i.value(), absl::StrCat(name, "[", i.key(), "]"));
    if (!v.ok()) return v.status();
    out[i.key()] = *std::move(v);
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> GoStringMap(const json& doc, absl::string_view name) {
  std::map<std::string, std::string> out;
  const json* m = GoField(doc, name);
  if (m == nullptr || m->is_null()) return out;
  if (!m->is_object()) return Bad(name, "must be an object");
  for (auto i = m->begin(); i != m->end(); ++i) {
    if (!i.value().is_string()) return Bad(absl::StrCat(name, "[", i.key(), "]"), "must be a string");
    out[i.key()] = i.value().get<std::string>();
  }
  return out;
}

absl::StatusOr<json> TopObject(absl::string_view body) {
  absl::StatusOr<json> doc = ParseBody(body);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return Bad("body", "must be a JSON object");
  return doc;
}

}  // namespace

absl::StatusOr<Pod> PodFromJson(const json& doc, absl::string_view field) {
  if (absl::Status s = NeedObject(doc, field); !s.ok()) return s;
  Pod pod;
  pod.raw = doc;
  auto meta = doc.find("metadata");
  if (meta != doc.end() && !meta->is_null()) {
    const std::string mf = Path(field, "metadata");
    if (absl::Status s = NeedObject(*meta, mf); !s.ok()) return s;
    for (auto [name, out] : {std::pair{"name", &pod.name}, std::pair{"namespace", &pod.namespace_},
                             std::pair{"uid", &pod.uid}}) {
      absl::StatusOr<std::string> v = StringField(*meta, name, mf, false);
      if (!v.ok()) return v.status();
      *out = *std::move(v);
    }
    absl::StatusOr<std::map<std::string, std::string>> labels = StringMap(*meta, "labels", mf);
    if (!labels.ok()) return labels.status();
    pod.labels = *std::move(labels);
    absl::StatusOr<std::map<std::string, std::string>> annotations = StringMap(*meta, "annotations", mf);
    if (!annotations.ok()) return annotations.status();
    pod.annotations = *std::move(annotations);
  }
  auto spec = doc.find("spec");
  if (spec != doc.end() && spec->is_object()) {
    auto containers = spec->find("containers");
    if (containers != spec->end() && containers->is_array()) {
      for (size_t c = 0; c < containers->size(); ++c) {
        const json& container = (*containers)[c];
        if (!container.is_object()) continue;
        auto resources = container.find("resources");
        if (resources == container.end() || !resources->is_object()) continue;
        for (const char* kind : {"limits", "requests"}) {
          auto r = resources->find(kind);
          if (r == resources->end() || !r->is_object()) continue;
          auto gpu = r->find("nvidia.com/gpu");
          if (gpu == r->end()) continue;
          absl::StatusOr<uint32_t> n = WholeQuantity(
              *gpu, absl::StrCat(field, ".spec.containers[", c, "].resources.", kind, "[nvidia.com/gpu]"));
          if (!n.ok()) return n.status();
          pod.gpus += *n;
          break;  // limits win over requests
        }
      }
    }
  }
  return pod;
}

absl::StatusOr<Node> NodeFromJson(const json& doc, absl::string_view field) {
  if (absl::Status s = NeedObject(doc, field); !s.ok()) return s;
  Node node;
  node.raw = doc;
  auto meta = doc.find("metadata");
  const std::string mf = Path(field, "metadata");
  if (meta == doc.end() || !meta->is_object()) return Bad(mf, "must be an object with a name");
  absl::StatusOr<std::string> name = StringField(*meta, "name", mf, false);
  if (!name.ok()) return name.status();
  if (name->empty()) return Bad(Path(mf, "name"), "missing");
  node.name = *std::move(name);
  absl::StatusOr<std::map<std::string, std::string>> labels = StringMap(*meta, "labels", mf);
  if (!labels.ok()) return labels.status();
  node.labels = *std::move(labels);
  return node;
}

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body) {
  absl::StatusOr<json> doc = TopObject(body);
  if (!doc.ok()) return doc.status();
  ExtenderArgs args;
  const json* pod = GoField(*doc, "Pod");
  if (pod == nullptr || pod->is_null()) return Bad("Pod", "missing");
  absl::StatusOr<Pod> p = PodFromJson(*pod, "Pod");
  if (!p.ok()) return p.status();
  args.pod = *std::move(p);
  const json* nodes = GoField(*doc, "Nodes");
  if (nodes != nullptr && !nodes->is_null()) {
    absl::StatusOr<NodeList> list = NodeListFromJson(*nodes, "Nodes");
    if (!list.ok()) return list.status();
    args.nodes = *std::move(list);
  }
  const json* names = GoField(*doc, "NodeNames");
  if (names != nullptr && !names->is_null()) {
    absl::StatusOr<std::vector<std::string>> list = StringList(*names, "NodeNames");
    if (!list.ok()) return list.status();
    args.node_names = *std::move(list);
  }
  if (!args.nodes && !args.node_names) return Bad("Nodes", "neither Nodes nor NodeNames given");
  return args;
}

absl::StatusOr<ExtenderFilterResult> ParseExtenderFilterResult(absl::string_view body) {
  absl::StatusOr<json> doc = TopObject(body);
  if (!doc.ok()) return doc.status();
  ExtenderFilterResult r;
  const json* nodes = GoField(*doc, "Nodes");
  if (nodes != nullptr && !nodes->is_null()) {
    absl::StatusOr<NodeList> list = NodeListFromJson(*nodes, "Nodes");
    if (!list.ok()) return list.status();
    r.nodes = *std::move(list);
  }
  const json* names = GoField(*doc, "NodeNames");
  if (names != nullptr && !names->is_null()) {
    absl::StatusOr<std::vector<std::string>> list = StringList(*names, "NodeNames");
    if (!list.ok()) return list.status();
    r.node_names = *std::move(list);
  }
  absl::StatusOr<std::map<std::string, std::string>> failed = GoStringMap(*doc, "FailedNodes");
  if (!failed.ok()) return failed.status();
  r.failed_nodes = *std::move(failed);
  failed = GoStringMap(*doc, "FailedAndUnresolvableNodes");
  if (!failed.ok()) return failed.status();
  r.failed_and_unresolvable_nodes = *std::move(failed);
  absl::StatusOr<std::string> error = StringField(*doc, "Error", "", true);
  if (!error.ok()) return error.status();
  r.error = *std::move(error);
  return r;
}

namespace {
absl::StatusOr<HostPriority> HostPriorityFromJson(const json& v, absl::string_view field) {
  if (absl::Status s = NeedObject(v, field); !s.ok()) return s;
  HostPriority p;
  absl::StatusOr<std::string> host = StringField(v, "Host", field, true);
  if (!host.ok()) return host.status();
  p.host = *std::move(host);
  absl::StatusOr<int64_t> score = IntField(v, "Score", field);
  if (!score.ok()) return score.status();
  p.score = *score;
  return p;
}
}  // namespace

absl::StatusOr<HostPriority> ParseHostPriority(absl::string_view body) {
  absl::StatusOr<json> doc = TopObject(body);
  if (!doc.ok()) return doc.status();
  return HostPriorityFromJson(*doc, "body");
}

absl::StatusOr<HostPriorityList> ParseHostPriorityList(absl::string_view body) {
  absl::StatusOr<json> doc = ParseBody(body);
  if (!doc.ok()) return doc.status();
  if (!doc->is_array()) return Bad("body", "must be a JSON array");
  HostPriorityList out;
  for (size_t i = 0; i < doc->size(); ++i) {
    absl::StatusOr<HostPriority> p = HostPriorityFromJson((*doc)[i], absl::StrCat("[", i, "]"));
    if (!p.ok()) return p.status();
    out.push_back(*std::move(p));
  }
  return out;
}

absl::StatusOr<ExtenderBindingArgs> ParseExtenderBindingArgs(absl::string_view body) {
  absl::StatusOr<json> doc = TopObject(body);
  if (!doc.ok()) return doc.status();
  ExtenderBindingArgs a;
  for (auto [name, out] : {std::pair{"PodName", &a.pod_name}, std::pair{"PodNamespace", &a.pod_namespace},
                           std::pair{"PodUID", &a.pod_uid}, std::pair{"Node", &a.node}}) {
    absl::StatusOr<std::string> v = StringField(*doc, name, "", true);
    if (!v.ok()) return v.status();
    *out = *std::move(v);
  }
  if (a.pod_name.empty()) return Bad("PodName", "missing");
  if (a.node.empty()) return Bad("Node", "missing");
  return a;
}

absl::StatusOr<ExtenderBindingResult> ParseExtenderBindingResult(absl::string_view body) {
  absl::StatusOr<json> doc = TopObject(body);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<std::string> error = StringField(*doc, "Error", "", true);
  if (!error.ok()) return error.status();
  return ExtenderBindingResult{*std::move(error)};
}

absl::StatusOr<ExtenderPreemptionArgs> ParseExtenderPreemptionArgs(absl::string_view body) {
  absl::StatusOr<json> doc = TopObject(body);
  if (!doc.ok()) return doc.status();
  ExtenderPreemptionArgs a;
  const json* pod = GoField(*doc, "Pod");
  if (pod == nullptr || pod->is_null()) return Bad("Pod", "missing");
  absl::StatusOr<Pod> p = PodFromJson(*pod, "Pod");
  if (!p.ok()) return p.status();
  a.pod = *std::move(p);
  const json* victims = GoField(*doc, "NodeNameToVictims");
  if (victims != nullptr && !victims->is_null()) {
    if (!victims->is_object()) return Bad("NodeNameToVictims", "must be an object");
    for (auto i = victims->begin(); i != victims->end(); ++i) {
      const std::string f = absl::StrCat("NodeNameToVictims[", i.key(), "]");
      if (absl::Status s = NeedObject(i.value(), f); !s.ok()) return s;
      Victims v;
      const json* pods = GoField(i.value(), "Pods");
      if (pods != nullptr && !pods->is_null()) {
        if (!pods->is_array()) return Bad(f + ".Pods", "must be an array");
        for (size_t k = 0; k < pods->size(); ++k) {
          absl::StatusOr<Pod> vp = PodFromJson((*pods)[k], absl::StrCat(f, ".Pods[", k, "]"));
          if (!vp.ok()) return vp.status();
          v.pods.push_back(vp->raw);
        }
      }
      absl::StatusOr<int64_t> n = IntField(i.value(), "NumPDBViolations", f);
      if (!n.ok()) return n.status();
      v.num_pdb_violations = *n;
      a.node_name_to_victims[i.key()] = std::move(v);
    }
  }
  absl::StatusOr<std::map<std::string, MetaVictims>> meta = MetaVictimsMap(*doc, "NodeNameToMetaVictims");
  if (!meta.ok()) return meta.status();
  a.node_name_to_meta_victims = *std::move(meta);
  return a;
}

absl::StatusOr<ExtenderPreemptionResult> ParseExtenderPreemptionResult(absl::string_view body) {
  absl::StatusOr<json> doc = TopObject(body);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<std::map<std::string, MetaVictims>> meta = MetaVictimsMap(*doc, "NodeNameToMetaVictims");
  if (!meta.ok()) return meta.status();
  return ExtenderPreemptionResult{*std::move(meta)};
}

json ToJson(const ExtenderArgs& args) {
  return json{{"Pod", args.pod.raw},
              {"Nodes", args.nodes ? NodeListToJson(*args.nodes) : json(nullptr)},
              {"NodeNames", NullableStrings(args.node_names)}};
}

json ToJson(const ExtenderFilterResult& r) {
  return json{{"Nodes", r.nodes ? NodeListToJson(*r.nodes) : json(nullptr)},
              {"NodeNames", NullableStrings(r.node_names)},
              {"FailedNodes", json(r.failed_nodes)},
              {"FailedAndUnresolvableNodes", json(r.failed_and_unresolvable_nodes)},
              {"Error", r.error}};
}

json ToJson(const HostPriority& p) { return json{{"Host", p.host}, {"Score", p.score}}; }

json ToJson(const HostPriorityList& list) {
  json out = json::array();
  for (const HostPriority& p : list) out.push_back(ToJson(p));
  return out;
}

namespace {

// A JSON string as dump() writes it: printable ASCII without '"' or '\\' as
// it is, anything else through nlohmann's escaping (and UTF-8 check).
void AppendJsonString(std::string& out, const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e || c == '"' || c == '\\') {
      out += json(s).dump();
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}

void AppendStringMap(std::string& out, const std::map<std::string, std::string>& m) {
  out += '{';
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, k);
    out += ':';
    AppendJsonString(out, v);
  }
  out += '}';
}

}  // namespace

std::string ToJsonText(const HostPriorityList& list) {
  std::string out;
  out.reserve(list.size() * 32 + 2);
  out += '[';
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"Host\":";
    AppendJsonString(out, list[i].host);
    absl::StrAppend(&out, ",\"Score\":", list[i].score, "}");
  }
  out += ']';
  return out;
}

std::string ToJsonText(const ExtenderFilterResult& r) {
  if (r.nodes) return ToJson(r).dump();
  // The keys in dump()'s (sorted) order.
  std::string out = "{\"Error\":";
  AppendJsonString(out, r.error);
  out += ",\"FailedAndUnresolvableNodes\":";
  AppendStringMap(out, r.failed_and_unresolvable_nodes);
  out += ",\"FailedNodes\":";
  AppendStringMap(out, r.failed_nodes);
  out += ",\"NodeNames\":";
  if (r.node_names) {
    out += '[';
    for (size_t i = 0; i < r.node_names->size(); ++i) {
      if (i > 0) out += ',';
      AppendJsonString(out, (*r.node_names)[i]);
    }
    out += ']';
  } else {
    out += "null";
  }
  out += ",\"Nodes\":null}";
  return out;
}

json ToJson(const ExtenderBindingArgs& a) {
  return json{{"PodName", a.pod_name}, {"PodNamespace", a.pod_namespace}, {"PodUID", a.pod_uid}, {"Node", a.node}};
}

json ToJson(const ExtenderBindingResult& r) { return json{{"Error", r.error}}; }

json ToJson(const ExtenderPreemptionArgs& a) {
  json victims = json::object();
  for (const auto& [node, v] : a.node_name_to_victims) {
    victims[node] = json{{"Pods", v.pods}, {"NumPDBViolations", v.num_pdb_violations}};
  }
  json meta = json::object();
  for (const auto& [node, v] : a.node_name_to_meta_victims) meta[node] = ToJson(v);
  return json{{"Pod", a.pod.raw}, {"NodeNameToVictims", std::move(victims)}, {"NodeNameToMetaVictims", std::move(meta)}};
}

json ToJson(const ExtenderPreemptionResult& r) {
  json meta = json::object();
  for (const auto& [node, v] : r.node_name_to_meta_victims) meta[node] = ToJson(v);
  return json{{"NodeNameToMetaVictims", std::move(meta)}};
}

}  // namespace phasor::kubernetes
