// libFuzzer target: protobuf payloads as phasord receives them, through the
// protocol conversion and its range checks into RankWithin. The first byte
// picks the message: 0 RankRequest, 1 ProfileUpdate (then ranked as the
// profile of two jobs on one link), 2 CommitPlacement, 3 GetOffset.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "protocol/convert.h"
#include "tests/placer/fuzz/rank_invariants.h"

namespace {

using phasor::placer::RankRequest;
using phasor::placer::TrafficProfile;
namespace v1 = phasor::v1;

void RankRequestPayload(const uint8_t* data, size_t size) {
  v1::RankRequest wire;
  if (!wire.ParseFromArray(data, static_cast<int>(size))) return;
  // Jobs sent without a profile take a known one, as phasord's store gives.
  TrafficProfile known;
  known.period_us = 200'000;
  known.square = phasor::placer::SquareWave{.up_us = 90'000, .up_gbps = 40, .start_us = 0, .down_gbps = 0};
  absl::StatusOr<RankRequest> request = phasor::protocol::FromProto(
      wire, [&](const std::string& job) -> std::optional<TrafficProfile> {
        if (job.empty()) return std::nullopt;
        return known;
      });
  if (!request.ok()) return;
  phasor::placer::fuzz::RankAndCheck(*request);
}

void ProfileUpdatePayload(const uint8_t* data, size_t size) {
  v1::ProfileUpdate update;
  if (!update.ParseFromArray(data, static_cast<int>(size))) return;
  if (absl::Status s = phasor::protocol::ValidateProfileUpdate(update); !s.ok()) {
    if (s.code() != absl::StatusCode::kInvalidArgument) std::abort();
    return;
  }
  RankRequest request;
  request.links.push_back({.id = "l", .capacity_gbps = 50});
  for (const char* id : {"a", "b"}) {
    request.jobs.push_back({.id = id, .profile = phasor::protocol::ProfileFromUpdate(update), .pinned_shift_us = {}});
  }
  request.candidates.push_back({.id = "c", .links = {{"a", {{"l", 1.0}}}, {"b", {{"l", 1.0}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  phasor::placer::fuzz::RankAndCheck(request);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t kind = data[0];
  ++data;
  --size;
  switch (kind % 4) {
    case 0: RankRequestPayload(data, size); break;
    case 1: ProfileUpdatePayload(data, size); break;
    case 2: {
      v1::CommitPlacement commit;
      if (commit.ParseFromArray(data, static_cast<int>(size))) (void)phasor::protocol::ValidateCommitPlacement(commit);
      break;
    }
    default: {
      v1::GetOffset get;
      if (get.ParseFromArray(data, static_cast<int>(size))) (void)phasor::protocol::ValidateGetOffset(get);
    }
  }
  return 0;
}
