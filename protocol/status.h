// The one mapping between absl::Status (how every phasor module reports a
// failure) and the wire's Error message (SPEC section 9), in both directions.
//
// A Status keeps the exact wire code it came from (or should go out as) in a
// payload, so that codes with no canonical twin (BAD_FRAMES, TOO_LARGE,
// UNKNOWN_TYPE, ...) survive a round trip; a plain Status maps by its
// canonical code:
//   InvalidArgument <-> INVALID_ARGUMENT   NotFound <-> NOT_FOUND
//   ResourceExhausted <-> LIMIT_EXCEEDED   Unauthenticated <-> UNAUTHENTICATED
//   FailedPrecondition <-> FAILED_PRECONDITION   Unimplemented <-> UNKNOWN_TYPE
//   UNAVAILABLE -> Unavailable (only a Status made with its wire code, as
//   NotLeaderStatus does, goes out as UNAVAILABLE; a plain Unavailable is INTERNAL)
//   (UNSUPPORTED_VERSION -> FailedPrecondition; framing.h makes it with its wire code)
//   anything else -> INTERNAL -> Internal
// Pure functions; thread-safe.
#ifndef PHASOR_PROTOCOL_STATUS_H_
#define PHASOR_PROTOCOL_STATUS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "protocol/phasor.pb.h"

namespace phasor::protocol {

// A Status with the canonical code of `code` that remembers `code` itself.
absl::Status WireStatus(v1::Error::Code code, absl::string_view message);

// The wire code a Status goes out as.
v1::Error::Code WireCode(const absl::Status& status);

// The Error reply for a failed Status (status must not be OK).
v1::Error ErrorFromStatus(const absl::Status& status, uint64_t request_id = 0);

// The Status for an Error reply, its message prefixed "phasord: CODE: ";
// an UNAVAILABLE reply's leader_endpoint is kept (LeaderEndpoint).
absl::Status StatusFromError(const v1::Error& error);

// UNAVAILABLE from a phasord that does not serve now (a standby, or a
// leader whose lease ran out), naming the leader's request endpoint ("" when
// none is known); ErrorFromStatus puts it into Error.leader_endpoint.
absl::Status NotLeaderStatus(absl::string_view message, absl::string_view leader_endpoint);
// The leader endpoint a Status names ("" when none).
std::string LeaderEndpoint(const absl::Status& status);

}  // namespace phasor::protocol

#endif  // PHASOR_PROTOCOL_STATUS_H_
