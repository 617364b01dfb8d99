#include "protocol/framing.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "protocol/status.h"

namespace phasor::protocol {
namespace {

constexpr std::array<std::pair<MessageType, std::string_view>, 14> kTypeNames = {{
    {MessageType::kRankRequest, "RankRequest"},
    {MessageType::kRankReply, "RankReply"},
    {MessageType::kCommitPlacement, "CommitPlacement"},
    {MessageType::kCommitReply, "CommitReply"},
    {MessageType::kGetOffset, "GetOffset"},
    {MessageType::kOffsetUpdate, "OffsetUpdate"},
    {MessageType::kProfileUpdate, "ProfileUpdate"},
    {MessageType::kHealth, "Health"},
    {MessageType::kHealthReply, "HealthReply"},
    {MessageType::kGetSnapshot, "GetSnapshot"},
    {MessageType::kSnapshot, "Snapshot"},
    {MessageType::kReleasePlacement, "ReleasePlacement"},
    {MessageType::kReleaseReply, "ReleaseReply"},
    {MessageType::kError, "Error"},
}};

// Frames can carry any bytes; quote only a printable prefix in messages.
std::string Printable(std::string_view bytes) {
  constexpr size_t kMax = 32;
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (bytes.size() > kMax) out += "...";
  return out;
}

}  // namespace

std::vector<std::string> SupportedVersions() { return {std::string(kVersion)}; }

std::string_view MessageTypeName(MessageType type) {
  for (const auto& [t, name] : kTypeNames) {
    if (t == type) return name;
  }
  return "Unknown";
}

std::optional<MessageType> MessageTypeFromName(std::string_view name) {
  for (const auto& [t, n] : kTypeNames) {
    if (n == name) return t;
  }
  return std::nullopt;
}

std::vector<std::string> EncodeFrames(MessageType type, const google::protobuf::MessageLite& message) {
  std::vector<std::string> frames;
  frames.reserve(3);
  frames.emplace_back(kVersion);
  frames.emplace_back(MessageTypeName(type));
  frames.push_back(message.SerializeAsString());
  return frames;
}

absl::StatusOr<Envelope> DecodeFrames(const std::vector<std::string>& frames, const FramingOptions& options) {
  if (frames.size() != 3) {
    return WireStatus(v1::Error::BAD_FRAMES,
                     absl::StrCat("expected 3 frames [version, type, payload], got ", frames.size()));
  }
  const std::vector<std::string> versions = SupportedVersions();
  bool spoken = false;
  for (const std::string& v : versions) spoken = spoken || frames[0] == v;
  if (!spoken) {
    return WireStatus(v1::Error::UNSUPPORTED_VERSION,
                      absl::StrCat("frame 0: version '", Printable(frames[0]), "' is not spoken; spoken: ",
                                   absl::StrJoin(versions, ", ")));
  }
  const std::optional<MessageType> type = MessageTypeFromName(frames[1]);
  if (!type) {
    return WireStatus(v1::Error::UNKNOWN_TYPE,
                     absl::StrCat("frame 1: unknown message type '", Printable(frames[1]), "'"));
  }
  if (frames[2].size() > options.max_message_bytes) {
    return WireStatus(v1::Error::TOO_LARGE,
                     absl::StrCat("frame 2: payload of ", frames[2].size(), " bytes exceeds the limit of ",
                                  options.max_message_bytes, " bytes"));
  }
  return Envelope{*type, frames[2]};
}

absl::Status ParsePayload(const Envelope& envelope, google::protobuf::MessageLite& message) {
  if (!message.ParseFromString(envelope.payload)) {
    return WireStatus(v1::Error::BAD_PAYLOAD,
                     absl::StrCat("frame 2: payload of ", envelope.payload.size(),
                                  " bytes does not parse as ", std::string(MessageTypeName(envelope.type))));
  }
  return absl::OkStatus();
}

v1::Error MakeError(v1::Error::Code code, std::string message, uint64_t request_id) {
  v1::Error error;
  error.set_code(code);
  error.set_message(std::move(message));
  error.set_request_id(request_id);
  return error;
}

std::string_view ErrorCodeName(v1::Error::Code code) {
  const std::string& name = v1::Error::Code_Name(code);
  return name.empty() ? std::string_view("UNSPECIFIED") : std::string_view(name);
}

}  // namespace phasor::protocol
