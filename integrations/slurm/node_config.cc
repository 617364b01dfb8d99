#include "integrations/slurm/node_config.h"

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "protocol/endpoint.h"
#include "yaml-cpp/yaml.h"

namespace phasor::slurm {
namespace {

template <typename T>
absl::Status ReadNodeKey(const YAML::Node& doc, const std::string& key, T& out) {
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

absl::StatusOr<NodeConfig> ParseNodeConfig(const std::string& yaml_text) {
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("line ", e.mark.line + 1, ": ", e.msg));
  }
  NodeConfig c;
  if (!doc.IsMap()) return absl::InvalidArgumentError("must be a YAML mapping");
  const std::vector<std::pair<std::string, std::function<absl::Status(const std::string&)>>> keys = {
      {"controller", [&](const std::string& k) { return ReadNodeKey(doc, k, c.controller); }},
      {"controller_public_key_file", [&](const std::string& k) { return ReadNodeKey(doc, k, c.controller_public_key_file); }},
      {"client_key_prefix", [&](const std::string& k) { return ReadNodeKey(doc, k, c.client_key_prefix); }},
      {"phasord_request_endpoint", [&](const std::string& k) { return ReadNodeKey(doc, k, c.phasord_request_endpoint); }},
      {"phasord_offset_endpoint", [&](const std::string& k) { return ReadNodeKey(doc, k, c.phasord_offset_endpoint); }},
      {"phasord_public_key_file", [&](const std::string& k) { return ReadNodeKey(doc, k, c.phasord_public_key_file); }},
      {"agent_key_prefix", [&](const std::string& k) { return ReadNodeKey(doc, k, c.agent_key_prefix); }},
      {"jobs_dir", [&](const std::string& k) { return ReadNodeKey(doc, k, c.jobs_dir); }},
      {"controller_timeout_ms", [&](const std::string& k) { return ReadNodeKey(doc, k, c.controller_timeout_ms); }},
      {"phasord_timeout_ms", [&](const std::string& k) { return ReadNodeKey(doc, k, c.phasord_timeout_ms); }},
      {"agent_mode", [&](const std::string& k) { return ReadNodeKey(doc, k, c.agent_mode); }},
      {"agent_fail_open_ms", [&](const std::string& k) { return ReadNodeKey(doc, k, c.agent_fail_open_ms); }},
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
  if (c.controller.empty()) return absl::InvalidArgumentError("controller: required");
  if (absl::StartsWith(c.controller, "unix://")) {
    if (c.controller.size() == 7) return absl::InvalidArgumentError("controller: unix:// needs a path");
  } else if (c.controller_public_key_file.empty() || c.client_key_prefix.empty()) {
    if (absl::Status s = protocol::CheckPlainEndpoint("controller", c.controller,
                                                      "set controller_public_key_file and client_key_prefix");
        !s.ok()) {
      return s;
    }
  } else if (absl::Status s = protocol::CheckEndpoint("controller", c.controller); !s.ok()) {
    return s;
  }
  for (auto [key, value] : {std::pair{"phasord_request_endpoint", &c.phasord_request_endpoint},
                            {"phasord_offset_endpoint", &c.phasord_offset_endpoint}}) {
    if (value->empty()) return absl::InvalidArgumentError(absl::StrCat(key, ": required"));
    // One phasord, or several comma-separated (a leader and its standbys).
    for (absl::string_view part : absl::StrSplit(*value, ',')) {
      const std::string e(absl::StripAsciiWhitespace(part));
      absl::Status s = c.phasord_public_key_file.empty() || c.agent_key_prefix.empty()
                           ? protocol::CheckPlainEndpoint(key, e, "set phasord_public_key_file and agent_key_prefix")
                           : protocol::CheckEndpoint(key, e);
      if (!s.ok()) return s;
    }
  }
  if (c.jobs_dir.empty() || c.jobs_dir[0] != '/') return absl::InvalidArgumentError("jobs_dir: must be an absolute path");
  if (c.controller_timeout_ms < 1 || c.controller_timeout_ms > 60000) {
    return absl::InvalidArgumentError("controller_timeout_ms: must be 1..60000");
  }
  if (c.phasord_timeout_ms < 1 || c.phasord_timeout_ms > 60000) {
    return absl::InvalidArgumentError("phasord_timeout_ms: must be 1..60000");
  }
  if (c.agent_mode != "once" && c.agent_mode != "pace") {
    return absl::InvalidArgumentError(absl::StrCat("agent_mode: '", c.agent_mode, "' is not once or pace"));
  }
  if (c.agent_fail_open_ms < 0) return absl::InvalidArgumentError("agent_fail_open_ms: must not be negative");
  return c;
}

absl::StatusOr<NodeConfig> LoadNodeConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the file"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<NodeConfig> c = ParseNodeConfig(text.str());
  if (!c.ok()) return absl::Status(c.status().code(), absl::StrCat(path, ": ", c.status().message()));
  return c;
}

}  // namespace phasor::slurm
