#include "integrations/kubernetes/extender_config.h"

#include <fstream>
#include <functional>
#include <tuple>
#include <vector>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "protocol/curve_keys.h"
#include "yaml-cpp/yaml.h"

namespace phasor::kubernetes {
namespace {

template <typename T>
absl::Status Read(const YAML::Node& doc, const std::string& key, T& out) {
  const YAML::Node v = doc[key];
  if (!v) return absl::OkStatus();
  try {
    out = v.as<T>();
  } catch (const YAML::Exception&) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": wrong type"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ExtenderConfig> ParseExtenderConfig(const std::string& yaml_text) {
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config: line ", e.mark.line + 1, ": ", e.msg));
  }
  ExtenderConfig c;
  if (doc.IsNull()) return c;
  if (!doc.IsMap()) return absl::InvalidArgumentError("config: must be a YAML mapping");
  ExtenderOptions& e = c.extender;
  std::string listen;
  // Every key: name -> reader.
  const std::vector<std::pair<std::string, std::function<absl::Status(const std::string&)>>> keys = {
      {"listen", [&](const std::string& k) { return Read(doc, k, listen); }},
      {"url_prefix", [&](const std::string& k) { return Read(doc, k, c.http.url_prefix); }},
      {"max_body_bytes", [&](const std::string& k) { return Read(doc, k, c.http.max_body_bytes); }},
      {"http_threads", [&](const std::string& k) { return Read(doc, k, c.http.threads); }},
      {"phasord_endpoint", [&](const std::string& k) { return Read(doc, k, e.phasord_endpoint); }},
      {"phasord_timeout_ms", [&](const std::string& k) { return Read(doc, k, e.phasord_timeout_ms); }},
      {"phasord_server_public_key_file", [&](const std::string& k) { return Read(doc, k, c.phasord_server_public_key_file); }},
      {"phasord_client_public_key_file", [&](const std::string& k) { return Read(doc, k, c.phasord_client_public_key_file); }},
      {"phasord_client_secret_key_file", [&](const std::string& k) { return Read(doc, k, c.phasord_client_secret_key_file); }},
      {"retry_after_ms", [&](const std::string& k) { return Read(doc, k, e.retry_after_ms); }},
      {"topology_path", [&](const std::string& k) { return Read(doc, k, e.topology_path); }},
      {"node_server_label", [&](const std::string& k) { return Read(doc, k, e.node_server_label); }},
      {"node_servers", [&](const std::string& k) { return Read(doc, k, e.node_servers); }},
      {"group_label", [&](const std::string& k) { return Read(doc, k, e.groups.group_label); }},
      {"group_annotation", [&](const std::string& k) { return Read(doc, k, e.groups.group_annotation); }},
      {"job_size_annotation", [&](const std::string& k) { return Read(doc, k, e.groups.size_annotation); }},
      {"min_member_annotation", [&](const std::string& k) { return Read(doc, k, e.groups.min_member_annotation); }},
      {"max_job_pods", [&](const std::string& k) { return Read(doc, k, e.groups.max_job_pods); }},
      {"profile_annotation", [&](const std::string& k) { return Read(doc, k, e.profile_annotation); }},
      {"model_annotation", [&](const std::string& k) { return Read(doc, k, e.model_annotation); }},
      {"gpus_annotation", [&](const std::string& k) { return Read(doc, k, e.gpus_annotation); }},
      {"models_dir", [&](const std::string& k) { return Read(doc, k, e.models_dir); }},
      {"quantum_us", [&](const std::string& k) { return Read(doc, k, e.rank.circle.quantum_us); }},
      {"max_spanning_trees", [&](const std::string& k) { return Read(doc, k, e.rank.joint.max_spanning_trees); }},
      {"max_candidates", [&](const std::string& k) { return Read(doc, k, e.max_candidates); }},
      {"filter_to_plan", [&](const std::string& k) { return Read(doc, k, e.filter_to_plan); }},
      {"plan_ttl_ms", [&](const std::string& k) { return Read(doc, k, e.plan_ttl_ms); }},
      {"max_plans", [&](const std::string& k) { return Read(doc, k, e.max_plans); }},
      {"max_tracked_pods", [&](const std::string& k) { return Read(doc, k, e.max_tracked_pods); }},
      {"api_server", [&](const std::string& k) { return Read(doc, k, c.api_server.url); }},
      {"api_token_file", [&](const std::string& k) { return Read(doc, k, c.api_server.token_file); }},
      {"api_ca_file", [&](const std::string& k) { return Read(doc, k, c.api_server.ca_file); }},
      {"api_timeout_ms", [&](const std::string& k) { return Read(doc, k, c.api_server.timeout_ms); }},
      {"log_level", [&](const std::string& k) { return Read(doc, k, c.log_level); }},
  };
  std::set<std::string> known;
  for (const auto& [key, read] : keys) {
    known.insert(key);
    if (absl::Status s = read(key); !s.ok()) return s;
  }
  for (const auto& kv : doc) {
    const std::string key = kv.first.as<std::string>();
    if (!known.contains(key)) return absl::InvalidArgumentError(absl::StrCat(key, ": unknown key"));
  }
  if (!listen.empty()) {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return absl::InvalidArgumentError("listen: must be host:port");
    c.http.host = listen.substr(0, colon);
    try {
      c.http.port = std::stoi(listen.substr(colon + 1));
    } catch (const std::exception&) {
      return absl::InvalidArgumentError("listen: port must be a number");
    }
  }
  return c;
}

absl::Status LoadCurveKeys(ExtenderConfig& config) {
  if (config.phasord_server_public_key_file.empty() && config.phasord_client_public_key_file.empty() &&
      config.phasord_client_secret_key_file.empty()) {
    return absl::OkStatus();
  }
  client::CurveClientKeys curve;
  for (auto [file, out, key] :
       {std::tuple{&config.phasord_server_public_key_file, &curve.server_public_key, "phasord_server_public_key_file"},
        std::tuple{&config.phasord_client_public_key_file, &curve.client_public_key, "phasord_client_public_key_file"},
        std::tuple{&config.phasord_client_secret_key_file, &curve.client_secret_key,
                   "phasord_client_secret_key_file"}}) {
    if (file->empty()) return absl::InvalidArgumentError(absl::StrCat(key, ": required with CURVE"));
    absl::StatusOr<std::string> k = protocol::ReadKeyFile(*file);
    if (!k.ok()) return absl::InvalidArgumentError(absl::StrCat(key, ": ", k.status().message()));
    *out = *std::move(k);
  }
  config.extender.curve = curve;
  return absl::OkStatus();
}

absl::StatusOr<ExtenderConfig> LoadExtenderConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("config: cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseExtenderConfig(text.str());
}

}  // namespace phasor::kubernetes
