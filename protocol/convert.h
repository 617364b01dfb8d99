// Conversion between the wire messages (protocol/phasor.proto) and the
// placer's structs (placer/ranker.h). Doubles travel as IEEE doubles, so a
// round trip is exact.
//
// Pure functions; thread-safe.
#ifndef PHASOR_PROTOCOL_CONVERT_H_
#define PHASOR_PROTOCOL_CONVERT_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "placer/traffic_profile.h"
#include "protocol/phasor.pb.h"

namespace phasor::protocol {

// Supplies a profile for a job whose RankRequest entry carries none (phasord
// answers from the latest ProfileUpdate it holds); nullopt when unknown.
using ProfileLookup = std::function<std::optional<placer::TrafficProfile>(const std::string& job)>;

v1::TrafficProfile ToProto(const placer::TrafficProfile& profile);
placer::TrafficProfile FromProto(const v1::TrafficProfile& profile);

v1::RankRequest ToProto(const placer::RankRequest& request);
// The same into `out` (empty; it may live on an arena: at 10,000 servers a
// request's running part is a hundred thousand map entries).
void ToProto(const placer::RankRequest& request, v1::RankRequest& out);

// The placer request of a wire request. A job without a profile takes
// lookup(job); NotFound ("jobs[2].profile: no profile given and none known
// for job 'x'") when there is none. Lossless: field values are not validated
// here (placer::ValidateRankRequest and CheckRankLimits check their ranges,
// placer::RankWithin both).
absl::StatusOr<placer::RankRequest> FromProto(const v1::RankRequest& request,
                                              const ProfileLookup& lookup = nullptr);

// The reply for `ranking` of `request` (request_id and ranking_id left 0).
// Each shift carries the period it lives on (ShiftPeriodUs). Without
// `links` the candidates carry no links (phasord's ORDER replies, whose
// links the client never sees: at 10,000 servers 8,000 per candidate).
v1::RankReply ToProto(const placer::Ranking& ranking, const placer::RankRequest& request, bool links = true);
placer::Ranking FromProto(const v1::RankReply& reply);

// The period a job's shift in `candidate` lives on: its period rounded to the
// quantum of the first contended link it crosses, or its own period when it
// crosses none.
uint32_t ShiftPeriodUs(const placer::RankedCandidate& candidate, const placer::Job& job);

// A probe's profile of a job or link as a placer profile (array form).
// Lossless; the ranges are ValidateProfileUpdate's.
placer::TrafficProfile ProfileFromUpdate(const v1::ProfileUpdate& update);

// Range checks of the messages that enter phasord, each InvalidArgument
// naming the field ("period_us: 4294967295 is outside 1..3600000000"). Every
// conversion above is lossless (the wire's types are the placer's), so these
// and placer::ValidateRankRequest / CheckRankLimits (for a RankRequest) are
// where the ranges are checked.
//   ProfileUpdate: subject 1..kMaxIdBytes bytes, kind JOB or LINK, confidence
//     finite in 0..1, source at most kMaxIdBytes bytes, and the profile's
//     ranges (placer::ValidateProfile: period_us 1..3600000000, bin_us >= 1,
//     gbps[i] 0..1e6 and ceil(period_us / bin_us) of them, t0_epoch_us 0..2^53).
//   CommitPlacement: candidate 1..kMaxIdBytes bytes (ids are any uint64).
//   GetOffset: job 1..kMaxIdBytes bytes.
inline constexpr size_t kMaxIdBytes = 1024;
absl::Status ValidateProfileUpdate(const v1::ProfileUpdate& update);
absl::Status ValidateCommitPlacement(const v1::CommitPlacement& commit);
absl::Status ValidateGetOffset(const v1::GetOffset& get);

}  // namespace phasor::protocol

#endif  // PHASOR_PROTOCOL_CONVERT_H_
