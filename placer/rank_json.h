// The `phasor rank` file contract (SPEC section 5) in JSON: parsing a request
// and writing a ranking. Field names are exactly the spec's.
//
// Pure functions; thread-safe.
#ifndef PHASOR_PLACER_RANK_JSON_H_
#define PHASOR_PLACER_RANK_JSON_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "placer/ranker.h"

namespace phasor::placer {

// Parses JSON text into a request. Malformed JSON, missing or mistyped fields
// and every check of ValidateRankRequest are InvalidArgument errors whose
// message starts with the offending field's path ("jobs[1].profile.period_us:
// must be a positive integer").
absl::StatusOr<RankRequest> ParseRankRequest(std::string_view text);

// The same from an already parsed document.
absl::StatusOr<RankRequest> RankRequestFromJson(const nlohmann::json& doc);

// A traffic profile object (SPEC section 2: array or `square` form); `field`
// prefixes error messages.
absl::StatusOr<TrafficProfile> TrafficProfileFromJson(const nlohmann::json& doc,
                                                      std::string_view field);
nlohmann::ordered_json TrafficProfileToJson(const TrafficProfile& profile);

// The output contract: {"ranked": [...], "rejected": [...]}.
nlohmann::ordered_json RankingToJson(const Ranking& ranking);

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_RANK_JSON_H_
