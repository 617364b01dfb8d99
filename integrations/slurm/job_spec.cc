#include "integrations/slurm/job_spec.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "placer/rank_json.h"

namespace phasor::slurm {
namespace {

bool SafeValue(std::string_view v) {
  if (v.empty() || v.size() > 64) return false;
  for (char c : v) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return v != "." && v != "..";
}

// The phasor part of a comment: the words before a word "--".
std::vector<std::string> Words(std::string_view comment) {
  std::vector<std::string> words =
      absl::StrSplit(absl::string_view(comment.data(), comment.size()), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  auto tail = std::find(words.begin(), words.end(), "--");
  words.erase(tail, words.end());
  return words;
}

// What follows the first word "--" (with the "--"), or "".
std::string_view FreeText(std::string_view comment) {
  size_t pos = 0;
  while (pos < comment.size()) {
    while (pos < comment.size() && (comment[pos] == ' ' || comment[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < comment.size() && comment[end] != ' ' && comment[end] != '\t') ++end;
    if (comment.substr(pos, end - pos) == "--") return comment.substr(pos);
    pos = end;
  }
  return {};
}

}  // namespace

bool OptsIn(std::string_view comment) {
  if (comment.size() > kMaxCommentBytes) return false;
  std::vector<std::string> words = Words(comment);
  return !words.empty() && words[0] == "phasor";
}

absl::StatusOr<JobSpec> ParseJobSpec(std::string_view comment) {
  if (comment.size() > kMaxCommentBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("comment: ", comment.size(), " bytes exceed the limit of ", kMaxCommentBytes));
  }
  for (char c : comment) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
      return absl::InvalidArgumentError("comment: has a control character");
    }
  }
  if (!OptsIn(comment)) return absl::FailedPreconditionError("comment: does not start with the word 'phasor'");
  JobSpec spec;
  std::vector<std::string> words = Words(comment);
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    const size_t eq = w.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("comment: '", w, "': expected key=value"));
    }
    const std::string key = w.substr(0, eq);
    const std::string value = w.substr(eq + 1);
    if (!SafeValue(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("comment: '", w, "': the value must be 1..64 characters of [A-Za-z0-9._-]"));
    }
    std::string* slot = key == "model" ? &spec.model : key == "profile" ? &spec.profile_file
                                                     : key == "token"   ? &spec.token
                                                                        : nullptr;
    if (slot == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("comment: '", w, "': unknown key (model, profile, token)"));
    }
    if (!slot->empty()) return absl::InvalidArgumentError(absl::StrCat("comment: '", key, "' given twice"));
    *slot = value;
  }
  if (!spec.model.empty() && !spec.profile_file.empty()) {
    return absl::InvalidArgumentError("comment: give model= or profile=, not both");
  }
  return spec;
}

std::string WithToken(std::string_view comment, const std::string& token) {
  std::vector<std::string> words = Words(comment);
  std::string out = absl::StrCat("phasor token=", token);
  for (size_t i = 1; i < words.size(); ++i) {
    if (absl::StartsWith(words[i], "token=")) continue;
    absl::StrAppend(&out, " ", words[i]);
  }
  if (std::string_view tail = FreeText(comment); !tail.empty()) absl::StrAppend(&out, " ", std::string(tail));
  return out;
}

placer::TrafficProfile DefaultProfile() {
  placer::TrafficProfile p;
  p.period_us = 100000;
  p.square = placer::SquareWave{30000, 50.0, 70000, 0.0};
  return p;
}

absl::StatusOr<ProfileResolver> ProfileResolver::Create(const ProfileResolverOptions& options) {
  ProfileResolver r;
  r.options_ = options;
  if (options.model_gpus_per_node == 0) return absl::InvalidArgumentError("model_gpus_per_node: must be at least 1");
  if (!options.model_catalog_dir.empty()) {
    absl::StatusOr<models::ModelCatalog> catalog = models::ModelCatalog::Load(options.model_catalog_dir);
    if (!catalog.ok()) {
      return absl::Status(catalog.status().code(), absl::StrCat("model_catalog_dir: ", catalog.status().message()));
    }
    r.catalog_ = *std::move(catalog);
  }
  return r;
}

absl::StatusOr<placer::TrafficProfile> ProfileResolver::Resolve(const JobSpec& spec, uint32_t nodes) const {
  if (!spec.profile_file.empty()) {
    if (options_.profile_dir.empty()) {
      return absl::FailedPreconditionError("profile=: no profile directory is configured");
    }
    const std::string path = options_.profile_dir + "/" + spec.profile_file;
    std::ifstream in(path);
    if (!in) return absl::NotFoundError(absl::StrCat("profile=", spec.profile_file, ": cannot read '", path, "'"));
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      return absl::InvalidArgumentError(absl::StrCat("profile=", spec.profile_file, ": not JSON"));
    }
    absl::StatusOr<placer::TrafficProfile> p = placer::TrafficProfileFromJson(doc, "profile=" + spec.profile_file);
    if (!p.ok()) return p.status();
    if (absl::Status s = placer::ValidateProfile(*p); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("profile=", spec.profile_file, ": ", s.message()));
    }
    return p;
  }
  if (!spec.model.empty()) {
    if (!catalog_) return absl::FailedPreconditionError("model=: no model catalogue is configured");
    const std::string placement(nodes, static_cast<char>('0' + std::min<uint32_t>(options_.model_gpus_per_node, 9)));
    absl::StatusOr<models::ModelTiming> t = catalog_->Lookup(spec.model, placement);
    if (!t.ok()) return absl::NotFoundError(absl::StrCat("model=", spec.model, ": ", t.status().message()));
    // Compute, then the all-reduce at the measured NIC rate (sim/model_catalog.h).
    placer::TrafficProfile p;
    const uint32_t compute = static_cast<uint32_t>(std::lround(t->compute_us));
    const uint32_t sync = std::max<uint32_t>(1, static_cast<uint32_t>(std::lround(t->sync_us)));
    p.period_us = compute + sync;
    p.square = placer::SquareWave{sync, nodes > 1 ? models::kMeasuredNicGbps : 0.0, compute, 0.0};
    return p;
  }
  return DefaultProfile();
}

}  // namespace phasor::slurm
