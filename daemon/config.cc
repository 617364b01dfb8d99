#include "daemon/config.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "spdlog/spdlog.h"
#include "yaml-cpp/yaml.h"

namespace phasor::daemon {
namespace {

template <typename T>
absl::Status Read(const YAML::Node& node, const std::string& key, T& out) {
  try {
    out = node.as<T>();
  } catch (const YAML::Exception&) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": wrong type"));
  }
  return absl::OkStatus();
}

absl::Status ReadEndpoints(const YAML::Node& node, const std::string& key, std::vector<std::string>& out) {
  out.clear();
  if (node.IsSequence()) {
    for (const auto& e : node) {
      std::string v;
      if (absl::Status s = Read(e, key, v); !s.ok()) return s;
      out.push_back(v);
    }
    return absl::OkStatus();
  }
  std::string joined;
  if (absl::Status s = Read(node, key, joined); !s.ok()) return s;
  for (absl::string_view part : absl::StrSplit(joined, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return absl::OkStatus();
}

absl::Status ValidateStateStore(const StateStoreOptions& o) {
  if (o.backend == "sqlite") return absl::OkStatus();
  if (o.backend != "etcd") {
    return absl::InvalidArgumentError(
        absl::StrCat("state_store.backend: '", o.backend, "' is not sqlite or etcd"));
  }
  const EtcdOptions& e = o.etcd;
  if (e.endpoints.empty()) {
    return absl::InvalidArgumentError("state_store.etcd.endpoints: required with backend etcd");
  }
  for (const std::string& url : e.endpoints) {
    const bool http = absl::StartsWith(url, "http://") && url.size() > 7;
    if (!http || url.find(':', 7) == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("state_store.etcd.endpoints: '", url, "' is not http://HOST:PORT"));
    }
  }
  if (e.prefix.empty() || e.prefix[0] != '/' || e.prefix.back() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("state_store.etcd.prefix: '", e.prefix, "' must start with '/' and not end with it"));
  }
  if (e.lease_seconds < 2 || e.lease_seconds > 3600) {
    return absl::InvalidArgumentError("state_store.etcd.lease_seconds: must be in 2..3600");
  }
  if (e.timeout_ms == 0 || e.timeout_ms >= e.lease_seconds * 1000u / 3) {
    return absl::InvalidArgumentError(
        "state_store.etcd.timeout_ms: must be > 0 and below a third of lease_seconds");
  }
  if (!e.advertise_endpoint.empty() && e.advertise_endpoint.find("${") == std::string::npos) {
    if (absl::Status s = protocol::CheckEndpoint("state_store.etcd.advertise_endpoint", e.advertise_endpoint);
        !s.ok()) {
      return s;
    }
  }
  if (e.ranking_max_age_s == 0) return absl::InvalidArgumentError("state_store.etcd.ranking_max_age_s: must be > 0");
  if (e.max_ranking_bytes < (uint64_t{1} << 20)) {
    return absl::InvalidArgumentError("state_store.etcd.max_ranking_bytes: must be at least 1048576");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateDaemonOptions(const DaemonOptions& o) {
  const std::pair<const char*, const std::string*> endpoints[] = {
      {"request_endpoint", &o.request_endpoint},
      {"profile_endpoint", &o.profile_endpoint},
      {"offset_endpoint", &o.offset_endpoint}};
  for (const auto& [key, value] : endpoints) {
    if (absl::Status s = protocol::CheckEndpoint(key, *value); !s.ok()) return s;
    if (!o.curve.enabled()) {
      if (!o.allow_plain) {
        return absl::InvalidArgumentError(absl::StrCat(
            key, ": plain socket refused: configure curve (server_secret_key_file, ...) or set "
                 "allow_plain: true for ipc:// or loopback endpoints"));
      }
      if (absl::Status s = protocol::CheckPlainEndpoint(key, *value); !s.ok()) return s;
    }
  }
  if (o.curve.enabled()) {
    if (o.curve.server_public_key_file.empty()) {
      return absl::InvalidArgumentError("curve.server_public_key_file: required with server_secret_key_file");
    }
    if (o.curve.allowed_clients_file.empty()) {
      return absl::InvalidArgumentError("curve.allowed_clients_file: required with server_secret_key_file");
    }
  }
  if (!o.metrics_listen.empty() && o.metrics_listen.rfind(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics_listen: '", o.metrics_listen, "' is not HOST:PORT"));
  }
  if (o.state_path.empty()) return absl::InvalidArgumentError("state_path: must not be empty");
  if (o.sqlite_synchronous != "normal" && o.sqlite_synchronous != "full") {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite_synchronous: '", o.sqlite_synchronous, "' is not normal or full"));
  }
  if (o.keep_rankings == 0) return absl::InvalidArgumentError("keep_rankings: must be > 0");
  if (o.max_message_bytes == 0) return absl::InvalidArgumentError("max_message_bytes: must be > 0");
  if (o.max_jobs_per_request == 0) return absl::InvalidArgumentError("max_jobs_per_request: must be > 0");
  if (o.max_links_per_request == 0) return absl::InvalidArgumentError("max_links_per_request: must be > 0");
  if (o.max_candidates_per_request == 0) {
    return absl::InvalidArgumentError("max_candidates_per_request: must be > 0");
  }
  if (o.solver_threads == 0 || o.solver_threads > 256) {
    return absl::InvalidArgumentError("solver_threads: must be in 1..256");
  }
  if (o.max_queued_rankings == 0) return absl::InvalidArgumentError("max_queued_rankings: must be > 0");
  if (!(o.min_profile_confidence >= 0 && o.min_profile_confidence <= 1)) {
    return absl::InvalidArgumentError("min_profile_confidence: must be in 0..1");
  }
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  bool level_ok = false;
  for (const char* l : kLevels) level_ok = level_ok || o.log_level == l;
  if (!level_ok) {
    return absl::InvalidArgumentError(absl::StrCat("log_level: '", o.log_level, "' is not a spdlog level"));
  }
  const std::pair<const char*, uint64_t> limits[] = {{"limits.max_job_bins", o.rank_limits.max_job_bins},
                                                     {"limits.max_link_bins", o.rank_limits.max_link_bins},
                                                     {"limits.max_jobs_x_links", o.rank_limits.max_jobs_x_links},
                                                     {"limits.max_evaluations", o.rank_limits.max_evaluations},
                                                     {"limits.deadline_ms", o.rank_limits.deadline_ms}};
  for (const auto& [key, value] : limits) {
    if (value == 0) return absl::InvalidArgumentError(absl::StrCat(key, ": must be > 0"));
  }
  if (absl::Status s = ValidateStateStore(o.state_store); !s.ok()) return s;
  return placer::ValidateRankingPolicyOptions(o.ranking_policy);
}

absl::StatusOr<DaemonOptions> ParseDaemonConfig(const std::string& yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config: not YAML: ", e.what()));
  }
  DaemonOptions o;
  if (root.IsNull()) {
    if (absl::Status s = ValidateDaemonOptions(o); !s.ok()) return s;
    return o;
  }
  if (!root.IsMap()) return absl::InvalidArgumentError("config: top level must be a mapping");
  for (const auto& entry : root) {
    std::string key;
    try {
      key = entry.first.as<std::string>();
    } catch (const YAML::Exception&) {
      return absl::InvalidArgumentError("config: a key is not a string");
    }
    const YAML::Node& v = entry.second;
    absl::Status s;
    if (key == "request_endpoint") s = Read(v, key, o.request_endpoint);
    else if (key == "profile_endpoint") s = Read(v, key, o.profile_endpoint);
    else if (key == "offset_endpoint") s = Read(v, key, o.offset_endpoint);
    else if (key == "metrics_listen") s = Read(v, key, o.metrics_listen);
    else if (key == "allow_plain") s = Read(v, key, o.allow_plain);
    else if (key == "state_path") s = Read(v, key, o.state_path);
    else if (key == "sqlite_synchronous") s = Read(v, key, o.sqlite_synchronous);
    else if (key == "topology_path") s = Read(v, key, o.topology_path);
    else if (key == "keep_rankings") s = Read(v, key, o.keep_rankings);
    else if (key == "keep_link_scores") s = Read(v, key, o.keep_link_scores);
    else if (key == "max_message_bytes") s = Read(v, key, o.max_message_bytes);
    else if (key == "max_jobs_per_request") s = Read(v, key, o.max_jobs_per_request);
    else if (key == "max_links_per_request") s = Read(v, key, o.max_links_per_request);
    else if (key == "max_candidates_per_request") s = Read(v, key, o.max_candidates_per_request);
    else if (key == "solver_threads") s = Read(v, key, o.solver_threads);
    else if (key == "max_queued_rankings") s = Read(v, key, o.max_queued_rankings);
    else if (key == "realign") s = Read(v, key, o.realign);
    else if (key == "min_profile_confidence") s = Read(v, key, o.min_profile_confidence);
    else if (key == "realign_threshold_us") s = Read(v, key, o.realign_threshold_us);
    else if (key == "realign_min_interval_ms") s = Read(v, key, o.realign_min_interval_ms);
    else if (key == "republish_interval_ms") s = Read(v, key, o.republish_interval_ms);
    else if (key == "log_level") s = Read(v, key, o.log_level);
    else if (key == "curve") {
      if (!v.IsMap()) return absl::InvalidArgumentError("curve: must be a mapping");
      for (const auto& c : v) {
        const std::string ck = c.first.as<std::string>();
        const std::string full = "curve." + ck;
        if (ck == "server_secret_key_file") s = Read(c.second, full, o.curve.server_secret_key_file);
        else if (ck == "server_public_key_file") s = Read(c.second, full, o.curve.server_public_key_file);
        else if (ck == "allowed_clients_file") s = Read(c.second, full, o.curve.allowed_clients_file);
        else return absl::InvalidArgumentError(absl::StrCat(full, ": unknown key"));
        if (!s.ok()) return s;
      }
    } else if (key == "state_store") {
      if (!v.IsMap()) return absl::InvalidArgumentError("state_store: must be a mapping");
      for (const auto& c : v) {
        const std::string sk = c.first.as<std::string>();
        const std::string full = "state_store." + sk;
        if (sk == "backend") {
          s = Read(c.second, full, o.state_store.backend);
        } else if (sk == "etcd") {
          if (!c.second.IsMap()) return absl::InvalidArgumentError("state_store.etcd: must be a mapping");
          EtcdOptions& e = o.state_store.etcd;
          for (const auto& d : c.second) {
            const std::string ek = d.first.as<std::string>();
            const std::string efull = full + "." + ek;
            if (ek == "endpoints") s = ReadEndpoints(d.second, efull, e.endpoints);
            else if (ek == "prefix") s = Read(d.second, efull, e.prefix);
            else if (ek == "lease_seconds") s = Read(d.second, efull, e.lease_seconds);
            else if (ek == "name") s = Read(d.second, efull, e.name);
            else if (ek == "advertise_endpoint") s = Read(d.second, efull, e.advertise_endpoint);
            else if (ek == "timeout_ms") s = Read(d.second, efull, e.timeout_ms);
            else if (ek == "ranking_max_age_s") s = Read(d.second, efull, e.ranking_max_age_s);
            else if (ek == "max_ranking_bytes") s = Read(d.second, efull, e.max_ranking_bytes);
            else return absl::InvalidArgumentError(absl::StrCat(efull, ": unknown key"));
            if (!s.ok()) return s;
          }
        } else {
          return absl::InvalidArgumentError(absl::StrCat(full, ": unknown key"));
        }
        if (!s.ok()) return s;
      }
    } else if (key == "limits") {
      if (!v.IsMap()) return absl::InvalidArgumentError("limits: must be a mapping");
      placer::RankLimits& l = o.rank_limits;
      for (const auto& c : v) {
        const std::string lk = c.first.as<std::string>();
        const std::string full = "limits." + lk;
        if (lk == "max_job_bins") s = Read(c.second, full, l.max_job_bins);
        else if (lk == "max_link_bins") s = Read(c.second, full, l.max_link_bins);
        else if (lk == "max_jobs_x_links") s = Read(c.second, full, l.max_jobs_x_links);
        else if (lk == "max_evaluations") s = Read(c.second, full, l.max_evaluations);
        else if (lk == "deadline_ms") s = Read(c.second, full, l.deadline_ms);
        else return absl::InvalidArgumentError(absl::StrCat(full, ": unknown key"));
        if (!s.ok()) return s;
      }
    } else if (key == "ranking_policy") {
      if (!v.IsMap()) return absl::InvalidArgumentError("ranking_policy: must be a mapping");
      placer::RankingPolicyOptions& p = o.ranking_policy;
      for (const auto& c : v) {
        const std::string pk = c.first.as<std::string>();
        const std::string full = "ranking_policy." + pk;
        if (pk == "min_gain") s = Read(c.second, full, p.min_gain);
        else if (pk == "min_headroom") s = Read(c.second, full, p.min_headroom);
        else if (pk == "discard_loops") s = Read(c.second, full, p.discard_loops);
        else if (pk == "shift_confidence") s = Read(c.second, full, p.shift_confidence);
        else if (pk == "trust_choice_gains") s = Read(c.second, full, p.trust_choice_gains);
        else if (pk == "keep_packing") s = Read(c.second, full, p.keep_packing);
        else return absl::InvalidArgumentError(absl::StrCat(full, ": unknown key"));
        if (!s.ok()) return s;
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(key, ": unknown key"));
    }
    if (!s.ok()) return s;
  }
  if (absl::Status s = ValidateDaemonOptions(o); !s.ok()) return s;
  return o;
}

absl::StatusOr<DaemonOptions> LoadDaemonConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open config file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  absl::StatusOr<DaemonOptions> options = ParseDaemonConfig(buffer.str());
  if (!options.ok()) {
    return absl::Status(options.status().code(), absl::StrCat(path, ": ", options.status().message()));
  }
  return options;
}

void SetLogLevel(const std::string& level) { spdlog::set_level(spdlog::level::from_str(level)); }

}  // namespace phasor::daemon
