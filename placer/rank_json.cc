#include "placer/rank_json.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace phasor::placer {
namespace {

using json = nlohmann::json;

absl::Status Bad(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

std::string Path(const std::string& parent, const std::string& key) {
  return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
}

// Typed readers: each names the field in its error.
absl::StatusOr<const json*> Member(const json& obj, const std::string& parent, const char* key,
                                   bool required) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return Bad(Path(parent, key), "is required");
    return nullptr;
  }
  return &*it;
}

absl::StatusOr<double> Number(const json& v, const std::string& field) {
  if (!v.is_number()) return Bad(field, absl::StrCat("must be a number, got ", v.type_name()));
  const double d = v.get<double>();
  if (!std::isfinite(d)) return Bad(field, "must be finite");
  return d;
}

absl::StatusOr<uint64_t> Unsigned(const json& v, const std::string& field, uint64_t max) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // Below 2^64 before the cast (converting a double past uint64_t is
    // undefined; double(UINT64_MAX) rounds up to 2^64), then against `max`.
    if (d >= 0 && d == std::floor(d) && d < 0x1p64 && static_cast<uint64_t>(d) <= max) {
      return static_cast<uint64_t>(d);
    }
    return Bad(field, absl::StrCat("must be a non-negative integer, got ", v.dump()));
  }
  if (v.is_number_integer()) {
    if (!v.is_number_unsigned() && v.get<int64_t>() < 0) {
      return Bad(field, absl::StrCat("must be >= 0, got ", v.dump()));
    }
    const uint64_t u = v.get<uint64_t>();
    if (u > max) return Bad(field, absl::StrCat("must be at most ", max, ", got ", u));
    return u;
  }
  return Bad(field, absl::StrCat("must be a non-negative integer, got ", v.type_name()));
}

absl::StatusOr<std::string> String(const json& v, const std::string& field) {
  if (!v.is_string()) return Bad(field, absl::StrCat("must be a string, got ", v.type_name()));
  return v.get<std::string>();
}

#define PHASOR_ASSIGN_OR_RETURN(lhs, expr)        \
  auto PHASOR_CONCAT(_r, __LINE__) = (expr);      \
  if (!PHASOR_CONCAT(_r, __LINE__).ok()) return PHASOR_CONCAT(_r, __LINE__).status(); \
  lhs = *std::move(PHASOR_CONCAT(_r, __LINE__))
#define PHASOR_CONCAT_INNER(a, b) a##b
#define PHASOR_CONCAT(a, b) PHASOR_CONCAT_INNER(a, b)

constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

absl::StatusOr<uint32_t> RequiredU32(const json& obj, const std::string& parent, const char* key) {
  PHASOR_ASSIGN_OR_RETURN(const json* v, Member(obj, parent, key, true));
  PHASOR_ASSIGN_OR_RETURN(uint64_t u, Unsigned(*v, Path(parent, key), kMaxU32));
  return static_cast<uint32_t>(u);
}

absl::StatusOr<Link> LinkFromJson(const json& v, const std::string& field) {
  if (!v.is_object()) return Bad(field, "must be an object");
  Link link;
  PHASOR_ASSIGN_OR_RETURN(const json* id, Member(v, field, "id", true));
  PHASOR_ASSIGN_OR_RETURN(link.id, String(*id, field + ".id"));
  PHASOR_ASSIGN_OR_RETURN(const json* cap, Member(v, field, "capacity_gbps", true));
  PHASOR_ASSIGN_OR_RETURN(link.capacity_gbps, Number(*cap, field + ".capacity_gbps"));
  return link;
}

absl::StatusOr<Job> JobFromJson(const json& v, const std::string& field) {
  if (!v.is_object()) return Bad(field, "must be an object");
  Job job;
  PHASOR_ASSIGN_OR_RETURN(const json* id, Member(v, field, "id", true));
  PHASOR_ASSIGN_OR_RETURN(job.id, String(*id, field + ".id"));
  PHASOR_ASSIGN_OR_RETURN(const json* profile, Member(v, field, "profile", true));
  PHASOR_ASSIGN_OR_RETURN(job.profile, TrafficProfileFromJson(*profile, field + ".profile"));
  PHASOR_ASSIGN_OR_RETURN(const json* pinned, Member(v, field, "pinned_shift_us", false));
  if (pinned != nullptr) {
    PHASOR_ASSIGN_OR_RETURN(uint64_t p, Unsigned(*pinned, field + ".pinned_shift_us", kMaxU32));
    job.pinned_shift_us = static_cast<uint32_t>(p);
  }
  return job;
}

// The "links" and "servers" members of a candidate or of "running".
absl::Status PlacementFromJson(const json& v, const std::string& field,
                               std::map<std::string, std::map<std::string, double>>& links_out,
                               std::map<std::string, std::vector<std::string>>& servers_out) {
  PHASOR_ASSIGN_OR_RETURN(const json* links, Member(v, field, "links", false));
  PHASOR_ASSIGN_OR_RETURN(const json* servers, Member(v, field, "servers", false));
  if (links == nullptr && servers == nullptr) {
    return Bad(field, "needs \"links\" (job -> link -> share) or \"servers\" (job -> [server])");
  }
  if (links != nullptr) {
    if (!links->is_object()) return Bad(field + ".links", "must be an object: job -> link -> share");
    for (const auto& [job, job_links] : links->items()) {
      const std::string jf = absl::StrCat(field, ".links.", job);
      if (!job_links.is_object()) return Bad(jf, "must be an object: link -> share");
      auto& out = links_out[job];
      for (const auto& [link, share] : job_links.items()) {
        PHASOR_ASSIGN_OR_RETURN(out[link], Number(share, absl::StrCat(jf, ".", link)));
      }
    }
  }
  if (servers != nullptr) {
    if (!servers->is_object()) return Bad(field + ".servers", "must be an object: job -> [server]");
    for (const auto& [job, list] : servers->items()) {
      const std::string jf = absl::StrCat(field, ".servers.", job);
      if (!list.is_array() || list.empty()) return Bad(jf, "must be a non-empty array of server ids");
      auto& out = servers_out[job];
      for (size_t i = 0; i < list.size(); ++i) {
        PHASOR_ASSIGN_OR_RETURN(std::string s, String(list[i], absl::StrCat(jf, "[", i, "]")));
        out.push_back(std::move(s));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Candidate> CandidateFromJson(const json& v, const std::string& field) {
  if (!v.is_object()) return Bad(field, "must be an object");
  Candidate c;
  PHASOR_ASSIGN_OR_RETURN(const json* id, Member(v, field, "id", true));
  PHASOR_ASSIGN_OR_RETURN(c.id, String(*id, field + ".id"));
  if (absl::Status s = PlacementFromJson(v, field, c.links, c.servers); !s.ok()) return s;
  return c;
}

// "running": the placement of the jobs already running, common to every
// candidate (links and/or servers, as a candidate without an id).
absl::Status RunningFromJson(const json& v, RunningPlacement& running) {
  if (!v.is_object()) return Bad("running", absl::StrCat("must be an object, got ", v.type_name()));
  for (const auto& [key, value] : v.items()) {
    if (key != "links" && key != "servers") return Bad(Path("running", key), "unknown field (links or servers)");
  }
  return PlacementFromJson(v, "running", running.links, running.servers);
}

absl::Status OptionsFromJson(const json& v, RankOptions& options) {
  if (!v.is_object()) return Bad("options", "must be an object");
  static const char* kKnown[] = {"quantum_us", "max_bins", "exact_max_evaluations", "restarts",
                                 "seed", "ring_order", "own_candidates"};
  for (const auto& [key, value] : v.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      return Bad(Path("options", key), "unknown option");
    }
  }
  if (auto it = v.find("quantum_us"); it != v.end()) {
    PHASOR_ASSIGN_OR_RETURN(uint64_t q, Unsigned(*it, "options.quantum_us", kMaxU32));
    options.circle.quantum_us = static_cast<uint32_t>(q);
  }
  if (auto it = v.find("max_bins"); it != v.end()) {
    PHASOR_ASSIGN_OR_RETURN(options.circle.max_bins,
                            Unsigned(*it, "options.max_bins", uint64_t{1} << 32));
  }
  if (auto it = v.find("exact_max_evaluations"); it != v.end()) {
    PHASOR_ASSIGN_OR_RETURN(options.solver.exact_max_evaluations,
                            Unsigned(*it, "options.exact_max_evaluations", uint64_t{1} << 40));
  }
  if (auto it = v.find("restarts"); it != v.end()) {
    PHASOR_ASSIGN_OR_RETURN(uint64_t r, Unsigned(*it, "options.restarts", 1000));
    options.solver.restarts = static_cast<uint32_t>(r);
  }
  if (auto it = v.find("seed"); it != v.end()) {
    PHASOR_ASSIGN_OR_RETURN(options.solver.seed,
                            Unsigned(*it, "options.seed", std::numeric_limits<uint64_t>::max()));
  }
  if (auto it = v.find("ring_order"); it != v.end()) {
    PHASOR_ASSIGN_OR_RETURN(std::string mode, String(*it, "options.ring_order"));
    PHASOR_ASSIGN_OR_RETURN(options.ring_order, ParseRingOrderMode(mode, "options.ring_order"));
  }
  if (auto it = v.find("own_candidates"); it != v.end()) {
    PHASOR_ASSIGN_OR_RETURN(uint64_t k, Unsigned(*it, "options.own_candidates", kMaxOwnCandidates));
    options.own_candidates = static_cast<uint32_t>(k);
  }
  return absl::OkStatus();
}

template <typename T, typename F>
absl::Status ArrayOf(const json& doc, const char* key, F parse, std::vector<T>& out,
                     bool required = true) {
  auto it = doc.find(key);
  if (it == doc.end() || (!required && it->is_null())) {
    return required ? Bad(key, "is required") : absl::OkStatus();
  }
  if (!it->is_array()) return Bad(key, absl::StrCat("must be an array, got ", it->type_name()));
  for (size_t i = 0; i < it->size(); ++i) {
    PHASOR_ASSIGN_OR_RETURN(T item, parse((*it)[i], absl::StrCat(key, "[", i, "]")));
    out.push_back(std::move(item));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrafficProfile> TrafficProfileFromJson(const json& v, std::string_view field_view) {
  const std::string field(field_view);
  if (!v.is_object()) return Bad(field, "must be an object");
  TrafficProfile p;
  PHASOR_ASSIGN_OR_RETURN(p.period_us, RequiredU32(v, field, "period_us"));
  PHASOR_ASSIGN_OR_RETURN(const json* square, Member(v, field, "square", false));
  PHASOR_ASSIGN_OR_RETURN(const json* gbps, Member(v, field, "gbps", false));
  if (square != nullptr && gbps != nullptr) return Bad(field, "give either gbps or square, not both");
  if (square != nullptr) {
    const std::string sf = field + ".square";
    if (!square->is_object()) return Bad(sf, "must be an object");
    SquareWave s;
    PHASOR_ASSIGN_OR_RETURN(s.up_us, RequiredU32(*square, sf, "up_us"));
    PHASOR_ASSIGN_OR_RETURN(const json* up, Member(*square, sf, "up_gbps", true));
    PHASOR_ASSIGN_OR_RETURN(s.up_gbps, Number(*up, sf + ".up_gbps"));
    PHASOR_ASSIGN_OR_RETURN(const json* start, Member(*square, sf, "start_us", false));
    if (start != nullptr) {
      PHASOR_ASSIGN_OR_RETURN(uint64_t st, Unsigned(*start, sf + ".start_us", kMaxU32));
      s.start_us = static_cast<uint32_t>(st);
    }
    PHASOR_ASSIGN_OR_RETURN(const json* down, Member(*square, sf, "down_gbps", false));
    if (down != nullptr) {
      PHASOR_ASSIGN_OR_RETURN(s.down_gbps, Number(*down, sf + ".down_gbps"));
    }
    p.square = s;
  } else {
    if (gbps == nullptr) return Bad(field, "the profile is empty: give gbps (with bin_us) or square");
    PHASOR_ASSIGN_OR_RETURN(p.bin_us, RequiredU32(v, field, "bin_us"));
    if (!gbps->is_array()) return Bad(field + ".gbps", "must be an array of numbers");
    for (size_t i = 0; i < gbps->size(); ++i) {
      PHASOR_ASSIGN_OR_RETURN(double g, Number((*gbps)[i], absl::StrCat(field, ".gbps[", i, "]")));
      p.gbps.push_back(g);
    }
  }
  PHASOR_ASSIGN_OR_RETURN(const json* t0, Member(v, field, "t0_epoch_us", false));
  if (t0 != nullptr) {
    if (!t0->is_number_integer()) return Bad(field + ".t0_epoch_us", "must be an integer");
    p.t0_epoch_us = t0->get<int64_t>();
  }
  if (absl::Status s = ValidateProfile(p); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".", s.message()));
  }
  return p;
}

nlohmann::ordered_json TrafficProfileToJson(const TrafficProfile& p) {
  nlohmann::ordered_json out;
  out["period_us"] = p.period_us;
  if (p.square) {
    out["square"] = {{"up_us", p.square->up_us},
                     {"up_gbps", p.square->up_gbps},
                     {"start_us", p.square->start_us},
                     {"down_gbps", p.square->down_gbps}};
  } else {
    out["bin_us"] = p.bin_us;
    out["gbps"] = p.gbps;
  }
  if (p.t0_epoch_us) out["t0_epoch_us"] = *p.t0_epoch_us;
  return out;
}

absl::StatusOr<RankRequest> RankRequestFromJson(const json& doc) {
  if (!doc.is_object()) return Bad("input", "must be a JSON object");
  RankRequest r;
  // "links" may be left out when a topology supplies them (phasor rank --topology).
  if (absl::Status s = ArrayOf<Link>(doc, "links", LinkFromJson, r.links, /*required=*/false);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ArrayOf<Job>(doc, "jobs", JobFromJson, r.jobs); !s.ok()) return s;
  if (absl::Status s = ArrayOf<Candidate>(doc, "candidates", CandidateFromJson, r.candidates);
      !s.ok()) {
    return s;
  }
  if (auto it = doc.find("running"); it != doc.end() && !it->is_null()) {
    if (absl::Status s = RunningFromJson(*it, r.running); !s.ok()) return s;
  }
  if (auto it = doc.find("options"); it != doc.end()) {
    if (absl::Status s = OptionsFromJson(*it, r.options); !s.ok()) return s;
  }
  if (auto it = doc.find("free_servers"); it != doc.end() && !it->is_null()) {
    if (!it->is_array()) return Bad("free_servers", absl::StrCat("must be an array, got ", it->type_name()));
    for (size_t i = 0; i < it->size(); ++i) {
      PHASOR_ASSIGN_OR_RETURN(std::string server, String((*it)[i], absl::StrCat("free_servers[", i, "]")));
      r.free_servers.push_back(std::move(server));
    }
  }
  if (absl::Status s = ValidateRankRequest(r); !s.ok()) return s;
  return r;
}

absl::StatusOr<RankRequest> ParseRankRequest(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    // Parse again with exceptions for the position of the error.
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, or out_of_range for a number overflow
      return Bad("input", absl::StrCat("malformed JSON (", e.what(), ")"));
    }
  }
  return RankRequestFromJson(doc);
}

nlohmann::ordered_json RankingToJson(const Ranking& ranking) {
  nlohmann::ordered_json out;
  out["ranked"] = nlohmann::ordered_json::array();
  for (const RankedCandidate& c : ranking.ranked) {
    nlohmann::ordered_json jc;
    jc["candidate"] = c.candidate;
    jc["score"] = c.score;
    jc["min_link_score"] = c.min_link_score;
    jc["cycle"] = c.cycle;
    jc["exact"] = c.exact;
    jc["shifts_us"] = nlohmann::ordered_json::object();
    for (const auto& [job, shift] : c.shifts_us) jc["shifts_us"][job] = shift;
    if (!c.rank_order.empty()) {
      jc["rank_order"] = nlohmann::ordered_json::object();
      for (const auto& [job, servers] : c.rank_order) jc["rank_order"][job] = servers;
    }
    if (c.proposed_by_phasor) jc["proposed_by_phasor"] = true;
    jc["links"] = nlohmann::ordered_json::array();
    for (const LinkResult& l : c.links) {
      nlohmann::ordered_json jl;
      jl["id"] = l.id;
      jl["score"] = l.score;
      jl["jobs"] = l.jobs;
      jl["quantum_us"] = l.quantum_us;
      jl["optimal_score"] = l.optimal_score;
      jl["exact"] = l.exact;
      jl["capacity_gbps"] = l.capacity_gbps;
      jl["circle_bins"] = l.circle_bins;
      jl["rounding_error_us"] = nlohmann::ordered_json::object();
      for (size_t i = 0; i < l.jobs.size() && i < l.rounding_error_us.size(); ++i) {
        jl["rounding_error_us"][l.jobs[i]] = l.rounding_error_us[i];
      }
      jc["links"].push_back(std::move(jl));
    }
    out["ranked"].push_back(std::move(jc));
  }
  out["rejected"] = nlohmann::ordered_json::array();
  for (const RejectedCandidate& r : ranking.rejected) {
    out["rejected"].push_back({{"candidate", r.candidate}, {"reason", r.reason}});
  }
  return out;
}

}  // namespace phasor::placer
