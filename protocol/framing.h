// Framing of the phasor wire protocol (SPEC section 9): every message is the
// three frames ["phasor.v1", <type name>, <serialized protobuf>], after the
// routing frames of a ROUTER socket.
//
// Pure functions over byte strings (no sockets); thread-safe.
#ifndef PHASOR_PROTOCOL_FRAMING_H_
#define PHASOR_PROTOCOL_FRAMING_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "protocol/phasor.pb.h"

namespace phasor::protocol {

// The protocol version this build speaks (the first frame of every message).
inline constexpr std::string_view kVersion = "phasor.v1";

// Every version this build speaks, in order of preference.
std::vector<std::string> SupportedVersions();

enum class MessageType {
  kRankRequest,
  kRankReply,
  kCommitPlacement,
  kCommitReply,
  kGetOffset,
  kOffsetUpdate,
  kProfileUpdate,
  kHealth,
  kHealthReply,
  kGetSnapshot,
  kSnapshot,
  kReleasePlacement,
  kReleaseReply,
  kError,
};

// The type's name on the wire: the protobuf message name ("RankRequest").
std::string_view MessageTypeName(MessageType type);

// The type named `name`, or nullopt for a name this version does not know.
std::optional<MessageType> MessageTypeFromName(std::string_view name);

struct FramingOptions {
  // Payloads above this size are refused with TOO_LARGE (default 4 MiB).
  size_t max_message_bytes = 4u << 20;
};

// One decoded message: its type and the (not yet parsed) payload bytes.
struct Envelope {
  MessageType type = MessageType::kError;
  std::string payload;
};

// The three frames of a message.
std::vector<std::string> EncodeFrames(MessageType type, const google::protobuf::MessageLite& message);

// Decodes the frames of one message (routing frames already removed). On
// failure the Status carries the wire code to answer with (protocol/status.h):
// BAD_FRAMES (not exactly three frames), UNSUPPORTED_VERSION, UNKNOWN_TYPE,
// TOO_LARGE. The payload is not parsed here (see ParsePayload).
absl::StatusOr<Envelope> DecodeFrames(const std::vector<std::string>& frames, const FramingOptions& options);

// Parses an envelope's payload as `message`; on failure a BAD_PAYLOAD Status
// naming the type.
absl::Status ParsePayload(const Envelope& envelope, google::protobuf::MessageLite& message);

// An Error message.
v1::Error MakeError(v1::Error::Code code, std::string message, uint64_t request_id = 0);

// The wire name of an error code ("NOT_FOUND").
std::string_view ErrorCodeName(v1::Error::Code code);

}  // namespace phasor::protocol

#endif  // PHASOR_PROTOCOL_FRAMING_H_
