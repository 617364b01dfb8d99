#include "diagnose/inputs.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "placer/candidate_routing.h"
#include "placer/rank_json.h"
#include "placer/traffic_profile.h"

namespace phasor::diagnose {
namespace {

using json = nlohmann::json;

absl::Status Bad(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// Parses JSON text, naming `name` and the parser's position on failure.
absl::StatusOr<json> ParseJson(std::string_view text, const std::string& name) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) return doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number overflow
    return Bad(name, absl::StrCat("malformed JSON (", e.what(), ")"));
  }
  return doc;
}

}  // namespace

absl::StatusOr<std::vector<ProfileLine>> ParseProfileLines(std::string_view text,
                                                           const std::string& name) {
  std::vector<ProfileLine> out;
  std::set<std::string> seen;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = absl::StrCat(name, ":", line_no);
    absl::StatusOr<json> doc = ParseJson(line, where);
    if (!doc.ok()) return doc.status();
    if (!doc->is_object()) return Bad(where, "must be a JSON object");
    if (doc->contains("stats")) continue;  // phasor-probe's capture counters
    ProfileLine p;
    auto subject = doc->find("subject");
    if (subject == doc->end() || !subject->is_string() || subject->get<std::string>().empty()) {
      return Bad(where, "subject: must be a non-empty string");
    }
    p.subject = subject->get<std::string>();
    if (!seen.insert(p.subject).second) {
      return Bad(where, absl::StrCat("subject: '", p.subject, "' is given twice"));
    }
    if (auto s = doc->find("source"); s != doc->end() && s->is_string())
      p.source = s->get<std::string>();
    auto periodic = doc->find("periodic");
    if (periodic != doc->end() && !periodic->is_boolean()) {
      return Bad(where, "periodic: must be true or false");
    }
    p.periodic = periodic == doc->end() ? doc->contains("profile") : periodic->get<bool>();
    if (p.periodic) {
      auto profile = doc->find("profile");
      if (profile == doc->end()) return Bad(where, "profile: is required when periodic");
      absl::StatusOr<placer::TrafficProfile> tp =
          placer::TrafficProfileFromJson(*profile, "profile");
      if (!tp.ok()) return Bad(where, std::string(tp.status().message()));
      p.profile = *std::move(tp);
    } else if (auto r = doc->find("reason"); r != doc->end() && r->is_string()) {
      p.reason = r->get<std::string>();
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) return Bad(name, "no profile lines");
  return out;
}

absl::StatusOr<std::vector<ProfileLine>> ProfileLinesFromMeasured(
    const std::vector<probe::MeasuredProfile>& measured, const std::string& name) {
  std::vector<ProfileLine> out;
  std::set<std::string> seen;
  for (const probe::MeasuredProfile& m : measured) {
    if (!seen.insert(m.subject).second) {
      return Bad(name, absl::StrCat("subject: '", m.subject, "' is given twice"));
    }
    ProfileLine p;
    p.subject = m.subject;
    p.source = m.source;
    p.periodic = m.extracted.periodic;
    if (p.periodic) {
      p.profile.period_us = m.extracted.period_us;
      p.profile.bin_us = m.extracted.bin_us;
      p.profile.gbps = m.extracted.gbps;
      p.profile.t0_epoch_us = m.extracted.t0_epoch_us;
      if (absl::Status s = placer::ValidateProfile(p.profile); !s.ok()) {
        return Bad(name, absl::StrCat(m.subject, ": profile.", s.message()));
      }
    } else {
      p.reason = m.extracted.reason;
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) return Bad(name, "no profiles measured");
  return out;
}

absl::StatusOr<Placement> ParsePlacement(std::string_view text, const std::string& name) {
  absl::StatusOr<json> doc = ParseJson(text, name);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return Bad(name, "must be a JSON object");
  static const std::set<std::string> kKnown = {"id", "servers", "subjects", "options"};
  for (const auto& [key, value] : doc->items()) {
    if (!kKnown.contains(key)) return Bad(name, absl::StrCat(key, ": unknown field"));
  }
  Placement p;
  if (auto id = doc->find("id"); id != doc->end()) {
    if (!id->is_string() || id->get<std::string>().empty()) {
      return Bad(name, "id: must be a non-empty string");
    }
    p.id = id->get<std::string>();
  }
  auto servers = doc->find("servers");
  if (servers == doc->end()) return Bad(name, "servers: is required");
  if (!servers->is_object() || servers->empty()) {
    return Bad(name, "servers: must be a non-empty object (job -> [server, ...])");
  }
  for (const auto& [job, list] : servers->items()) {
    const std::string field = absl::StrCat("servers.", job);
    if (!list.is_array()) return Bad(name, field + ": must be an array of server names");
    std::vector<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) {
        return Bad(name, absl::StrCat(field, "[", i, "]: must be a string"));
      }
      names.push_back(list[i].get<std::string>());
    }
    p.servers[job] = std::move(names);
  }
  if (auto subjects = doc->find("subjects"); subjects != doc->end()) {
    if (!subjects->is_object()) return Bad(name, "subjects: must be an object (job -> subject)");
    for (const auto& [job, subject] : subjects->items()) {
      if (!p.servers.contains(job)) {
        return Bad(name, absl::StrCat("subjects.", job, ": job '", job, "' is not in servers"));
      }
      if (!subject.is_string())
        return Bad(name, absl::StrCat("subjects.", job, ": must be a string"));
      p.subjects[job] = subject.get<std::string>();
    }
  }
  if (auto options = doc->find("options"); options != doc->end()) {
    const json holder = {
        {"jobs", json::array()}, {"candidates", json::array()}, {"options", *options}};
    absl::StatusOr<placer::RankRequest> r = placer::RankRequestFromJson(holder);
    if (!r.ok()) return Bad(name, std::string(r.status().message()));
    p.options = r->options;
  }
  return p;
}

absl::StatusOr<placer::RankRequest> RequestFromProfiles(const std::vector<ProfileLine>& profiles,
                                                        const std::string& profiles_name,
                                                        const Placement& placement,
                                                        const std::string& placement_name) {
  std::map<std::string, const ProfileLine*> by_subject;
  for (const ProfileLine& p : profiles) by_subject[p.subject] = &p;
  placer::RankRequest request;
  request.options = placement.options;
  placer::Candidate candidate;
  candidate.id = placement.id;
  for (const auto& [job, servers] : placement.servers) {
    auto s = placement.subjects.find(job);
    const std::string subject = s == placement.subjects.end() ? job : s->second;
    auto it = by_subject.find(subject);
    const std::string field = absl::StrCat(placement_name, ": servers.", job);
    if (it == by_subject.end()) {
      return Bad(field, absl::StrCat("no profile for subject '", subject, "' in ", profiles_name));
    }
    if (!it->second->periodic) {
      return Bad(field, absl::StrCat("subject '", subject, "' has no periodic pattern in ",
                                     profiles_name, " (", it->second->reason, ")"));
    }
    request.jobs.push_back({job, it->second->profile, std::nullopt});
    candidate.servers[job] = servers;
  }
  request.candidates.push_back(std::move(candidate));
  if (absl::Status s = placer::ValidateRankRequest(request); !s.ok()) return s;
  return request;
}

absl::Status RoutePlacement(const std::string& topology_path, placer::RankRequest& request) {
  std::vector<placer::RejectedCandidate> unrouted;
  absl::Status s = placer::RouteCandidatesFromFile(topology_path, request, unrouted);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("topology: ", s.message()));
  if (!unrouted.empty()) {
    return Bad(absl::StrCat("candidate '", unrouted.front().candidate, "'"),
               unrouted.front().reason);
  }
  return absl::OkStatus();
}

}  // namespace phasor::diagnose
