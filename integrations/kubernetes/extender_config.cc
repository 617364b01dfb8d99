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
      {"http_timeout_ms", [&](const std::string& k) { return Read(doc, k, e.http_timeout_ms); }},
      {"lifecycle_timeout_ms", [&](const std::string& k) { return Read(doc, k, e.lifecycle_timeout_ms); }},
      {"bind_verb", [&](const std::string& k) { return Read(doc, k, e.bind_verb); }},
      {"tls_cert_file", [&](const std::string& k) { return Read(doc, k, c.http.tls_cert_file); }},
      {"tls_key_file", [&](const std::string& k) { return Read(doc, k, c.http.tls_key_file); }},
      {"tls_client_ca_file", [&](const std::string& k) { return Read(doc, k, c.http.tls_client_ca_file); }},
      {"watch_pods", [&](const std::string& k) { return Read(doc, k, c.watch_pods); }},
      {"scheduler_name", [&](const std::string& k) { return Read(doc, k, c.watch.scheduler_name); }},
      {"watch_timeout_s", [&](const std::string& k) { return Read(doc, k, c.watch.watch_timeout_s); }},
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
      {"rank_index_keys", [&](const std::string& k) { return Read(doc, k, e.groups.rank_index_keys); }},
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
  c.http.io_timeout_ms = e.http_timeout_ms;
  c.watch.api = c.api_server;
  if (absl::Status s = ValidateExtenderConfig(c); !s.ok()) return s;
  return c;
}

absl::Status ValidateExtenderConfig(const ExtenderConfig& c) {
  if (absl::Status s = ValidateHttpServerOptions(c.http); !s.ok()) return s;
  if (c.http.io_timeout_ms != c.extender.http_timeout_ms) {
    return absl::InvalidArgumentError("http_timeout_ms: the HTTP server's and the extender's differ");
  }
  if (c.api_server.timeout_ms < 1) return absl::InvalidArgumentError("api_timeout_ms: must be > 0");
  if (c.extender.bind_verb && c.api_server.timeout_ms + kTimeoutMarginMs > c.extender.http_timeout_ms) {
    return absl::InvalidArgumentError(absl::StrCat(
        "api_timeout_ms: ", c.api_server.timeout_ms, " ms (a bind's API call) + ", kTimeoutMarginMs,
        " ms must fit http_timeout_ms (", c.extender.http_timeout_ms, " ms, the scheduler's httpTimeout)"));
  }
  if (c.watch_pods && c.watch.watch_timeout_s < 1) return absl::InvalidArgumentError("watch_timeout_s: must be > 0");
  if (c.watch_pods && c.watch.scheduler_name.empty()) return absl::InvalidArgumentError("scheduler_name: required");
  return absl::OkStatus();
}

absl::Status LoadCurveKeys(ExtenderConfig& config) {
  absl::StatusOr<std::optional<client::CurveClientKeys>> curve =
      protocol::LoadCurveClientKeyFiles({"phasord_server_public_key_file", config.phasord_server_public_key_file},
                                        {"phasord_client_public_key_file", config.phasord_client_public_key_file},
                                        {"phasord_client_secret_key_file", config.phasord_client_secret_key_file});
  if (!curve.ok()) return curve.status();
  config.extender.curve = *std::move(curve);
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
