// libFuzzer target: the `phasor rank` JSON contract end to end, text ->
// ParseRankRequest -> RankWithin -> RankingToJson. Every input gives an
// InvalidArgument or ResourceExhausted Status or a well-formed ranking.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "placer/rank_json.h"
#include "tests/placer/fuzz/rank_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<phasor::placer::RankRequest> request = phasor::placer::ParseRankRequest(text);
  if (!request.ok()) {
    if (request.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  phasor::placer::fuzz::RankAndCheck(*request);
  return 0;
}
