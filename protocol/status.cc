#include "protocol/status.h"

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "protocol/framing.h"

namespace phasor::protocol {

namespace {

constexpr absl::string_view kWireCodeUrl = "type.phasor/phasor.v1.Error.Code";
constexpr absl::string_view kLeaderUrl = "type.phasor/phasor.v1.Error.leader_endpoint";

absl::StatusCode CanonicalCode(v1::Error::Code code) {
  switch (code) {
    case v1::Error::INVALID_ARGUMENT:
    case v1::Error::BAD_FRAMES:
    case v1::Error::BAD_PAYLOAD:
      return absl::StatusCode::kInvalidArgument;
    case v1::Error::NOT_FOUND:
      return absl::StatusCode::kNotFound;
    case v1::Error::LIMIT_EXCEEDED:
    case v1::Error::TOO_LARGE:
      return absl::StatusCode::kResourceExhausted;
    case v1::Error::UNSUPPORTED_VERSION:
    case v1::Error::FAILED_PRECONDITION:
      return absl::StatusCode::kFailedPrecondition;
    case v1::Error::UNKNOWN_TYPE:
      return absl::StatusCode::kUnimplemented;
    case v1::Error::UNAUTHENTICATED:
      return absl::StatusCode::kUnauthenticated;
    case v1::Error::UNAVAILABLE:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status WireStatus(v1::Error::Code code, absl::string_view message) {
  absl::Status status(CanonicalCode(code), message);
  status.SetPayload(kWireCodeUrl, absl::Cord(absl::StrCat(static_cast<int>(code))));
  return status;
}

v1::Error::Code WireCode(const absl::Status& status) {
  if (auto payload = status.GetPayload(kWireCodeUrl)) {
    int code = 0;
    if (absl::SimpleAtoi(std::string(*payload), &code) && v1::Error::Code_IsValid(code)) {
      return static_cast<v1::Error::Code>(code);
    }
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return v1::Error::INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
      return v1::Error::NOT_FOUND;
    case absl::StatusCode::kResourceExhausted:
      return v1::Error::LIMIT_EXCEEDED;
    case absl::StatusCode::kFailedPrecondition:
      return v1::Error::FAILED_PRECONDITION;
    case absl::StatusCode::kUnimplemented:
      return v1::Error::UNKNOWN_TYPE;
    case absl::StatusCode::kUnauthenticated:
      return v1::Error::UNAUTHENTICATED;
    default:
      return v1::Error::INTERNAL;
  }
}

v1::Error ErrorFromStatus(const absl::Status& status, uint64_t request_id) {
  v1::Error error = MakeError(WireCode(status), std::string(status.message()), request_id);
  if (error.code() == v1::Error::UNSUPPORTED_VERSION) {
    for (const std::string& v : SupportedVersions()) error.add_supported_versions(v);
  }
  error.set_leader_endpoint(LeaderEndpoint(status));
  return error;
}

absl::Status StatusFromError(const v1::Error& error) {
  absl::Status status = WireStatus(
      error.code(), absl::StrCat("phasord: ", std::string(ErrorCodeName(error.code())), ": ", error.message()));
  if (!error.leader_endpoint().empty()) status.SetPayload(kLeaderUrl, absl::Cord(error.leader_endpoint()));
  return status;
}

absl::Status NotLeaderStatus(absl::string_view message, absl::string_view leader_endpoint) {
  absl::Status status = WireStatus(v1::Error::UNAVAILABLE, message);
  if (!leader_endpoint.empty()) status.SetPayload(kLeaderUrl, absl::Cord(leader_endpoint));
  return status;
}

std::string LeaderEndpoint(const absl::Status& status) {
  if (auto payload = status.GetPayload(kLeaderUrl)) return std::string(*payload);
  return "";
}

}  // namespace phasor::protocol
