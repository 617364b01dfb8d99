#include "integrations/client/client.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "protocol/convert.h"
#include "protocol/curve_keys.h"
#include "zmq_addon.hpp"

namespace phasor::client {

namespace v1 = ::phasor::v1;
using protocol::MessageType;

absl::Status ApplyCurve(zmq::socket_t& socket, const CurveClientKeys& keys) {
  if (!protocol::IsZ85Key(keys.server_public_key)) return absl::InvalidArgumentError("curve.server_public_key: not a Z85 key");
  if (!protocol::IsZ85Key(keys.client_public_key)) return absl::InvalidArgumentError("curve.client_public_key: not a Z85 key");
  if (!protocol::IsZ85Key(keys.client_secret_key)) return absl::InvalidArgumentError("curve.client_secret_key: not a Z85 key");
  socket.set(zmq::sockopt::curve_serverkey, keys.server_public_key);
  socket.set(zmq::sockopt::curve_publickey, keys.client_public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.client_secret_key);
  return absl::OkStatus();
}

absl::Status StatusFromError(const v1::Error& error) {
  const std::string msg = absl::StrCat("phasord: ", std::string(protocol::ErrorCodeName(error.code())), ": ",
                                       error.message());
  switch (error.code()) {
    case v1::Error::NOT_FOUND:
      return absl::NotFoundError(msg);
    case v1::Error::INVALID_ARGUMENT:
    case v1::Error::BAD_FRAMES:
    case v1::Error::BAD_PAYLOAD:
    case v1::Error::UNKNOWN_TYPE:
      return absl::InvalidArgumentError(msg);
    case v1::Error::LIMIT_EXCEEDED:
    case v1::Error::TOO_LARGE:
      return absl::ResourceExhaustedError(msg);
    case v1::Error::UNSUPPORTED_VERSION:
      return absl::FailedPreconditionError(msg);
    case v1::Error::UNAUTHENTICATED:
      return absl::UnauthenticatedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options, zmq::context_t* context) {
  if (options.endpoint.empty()) return absl::InvalidArgumentError("endpoint: required");
  if (options.timeout_ms <= 0) return absl::InvalidArgumentError("timeout_ms: must be > 0");
  std::unique_ptr<zmq::context_t> owned;
  if (context == nullptr) {
    owned = std::make_unique<zmq::context_t>(1);
    context = owned.get();
  }
  zmq::socket_t socket(*context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  if (options.curve) {
    if (absl::Status s = ApplyCurve(socket, *options.curve); !s.ok()) return s;
  }
  try {
    socket.connect(options.endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrCat("endpoint: cannot connect to '", options.endpoint, "': ", e.what()));
  }
  return std::unique_ptr<Client>(new Client(options, std::move(owned), std::move(socket)));
}

absl::StatusOr<std::vector<std::string>> Client::CallRaw(const std::vector<std::string>& frames) {
  std::vector<zmq::const_buffer> out = {zmq::const_buffer(nullptr, 0)};
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  if (!zmq::send_multipart(socket_, out, zmq::send_flags::dontwait)) {
    return absl::UnavailableError(absl::StrCat("phasord at ", options_.endpoint, ": send queue full"));
  }
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(options_.timeout_ms)) <= 0) {
    return absl::UnavailableError(
        absl::StrCat("phasord at ", options_.endpoint, ": no reply within ", options_.timeout_ms, " ms"));
  }
  std::vector<zmq::message_t> in;
  (void)zmq::recv_multipart(socket_, std::back_inserter(in));
  std::vector<std::string> reply;
  for (size_t i = (!in.empty() && in[0].size() == 0) ? 1 : 0; i < in.size(); ++i) reply.push_back(in[i].to_string());
  return reply;
}

absl::Status Client::Call(MessageType type, google::protobuf::Message& request, MessageType reply_type,
                          google::protobuf::Message& reply) {
  const uint64_t id = next_request_id_++;
  const google::protobuf::FieldDescriptor* id_field = request.GetDescriptor()->FindFieldByName("request_id");
  request.GetReflection()->SetUInt64(&request, id_field, id);
  const std::vector<std::string> frames = protocol::EncodeFrames(type, request);
  std::vector<zmq::const_buffer> out = {zmq::const_buffer(nullptr, 0)};
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  if (!zmq::send_multipart(socket_, out, zmq::send_flags::dontwait)) {
    return absl::UnavailableError(absl::StrCat("phasord at ", options_.endpoint, ": send queue full"));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  protocol::FramingOptions framing;
  framing.max_message_bytes = static_cast<size_t>(1) << 30;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (left.count() <= 0 || zmq::poll(&item, 1, left) <= 0) {
      return absl::UnavailableError(absl::StrCat("phasord at ", options_.endpoint, ": no reply to ",
                                                 std::string(protocol::MessageTypeName(type)), " within ",
                                                 options_.timeout_ms, " ms"));
    }
    std::vector<zmq::message_t> in;
    (void)zmq::recv_multipart(socket_, std::back_inserter(in));
    std::vector<std::string> body;
    for (size_t i = (!in.empty() && in[0].size() == 0) ? 1 : 0; i < in.size(); ++i) body.push_back(in[i].to_string());
    auto decoded = protocol::DecodeFrames(body, framing);
    if (std::holds_alternative<v1::Error>(decoded)) {
      return absl::InternalError(absl::StrCat("phasord at ", options_.endpoint, ": malformed reply: ",
                                              std::get<v1::Error>(decoded).message()));
    }
    const protocol::Envelope& env = std::get<protocol::Envelope>(decoded);
    if (env.type == MessageType::kError) {
      v1::Error error;
      if (!error.ParseFromString(env.payload)) return absl::InternalError("phasord: unparsable Error reply");
      if (error.request_id() != id && error.request_id() != 0) {
        ++stale_replies_;
        continue;
      }
      return StatusFromError(error);
    }
    if (env.type != reply_type || !reply.ParseFromString(env.payload)) {
      return absl::InternalError(absl::StrCat("phasord at ", options_.endpoint, ": unexpected ",
                                              std::string(protocol::MessageTypeName(env.type)), " reply"));
    }
    const google::protobuf::FieldDescriptor* reply_id = reply.GetDescriptor()->FindFieldByName("request_id");
    if (reply.GetReflection()->GetUInt64(reply, reply_id) != id) {
      ++stale_replies_;
      continue;
    }
    return absl::OkStatus();
  }
}

absl::StatusOr<v1::RankReply> Client::Rank(v1::RankRequest request) {
  v1::RankReply reply;
  if (absl::Status s = Call(MessageType::kRankRequest, request, MessageType::kRankReply, reply); !s.ok()) return s;
  return reply;
}

absl::StatusOr<RankResult> Client::Rank(const placer::RankRequest& request) {
  absl::StatusOr<v1::RankReply> reply = Rank(protocol::ToProto(request));
  if (!reply.ok()) return reply.status();
  RankResult result;
  result.ranking_id = reply->ranking_id();
  result.ranking = protocol::FromProto(*reply);
  result.reply = *std::move(reply);
  return result;
}

absl::StatusOr<v1::CommitReply> Client::Commit(uint64_t ranking_id, const std::string& candidate) {
  v1::CommitPlacement request;
  request.set_ranking_id(ranking_id);
  request.set_candidate(candidate);
  v1::CommitReply reply;
  if (absl::Status s = Call(MessageType::kCommitPlacement, request, MessageType::kCommitReply, reply); !s.ok()) {
    return s;
  }
  return reply;
}

absl::StatusOr<v1::OffsetUpdate> Client::GetOffset(const std::string& job) {
  v1::GetOffset request;
  request.set_job(job);
  v1::OffsetUpdate reply;
  if (absl::Status s = Call(MessageType::kGetOffset, request, MessageType::kOffsetUpdate, reply); !s.ok()) return s;
  return reply;
}

absl::StatusOr<v1::HealthReply> Client::Health() {
  v1::Health request;
  v1::HealthReply reply;
  if (absl::Status s = Call(MessageType::kHealth, request, MessageType::kHealthReply, reply); !s.ok()) return s;
  return reply;
}

absl::StatusOr<v1::Snapshot> Client::GetSnapshot() {
  v1::GetSnapshot request;
  v1::Snapshot reply;
  if (absl::Status s = Call(MessageType::kGetSnapshot, request, MessageType::kSnapshot, reply); !s.ok()) return s;
  return reply;
}

absl::StatusOr<v1::ReleaseReply> Client::Release(const std::vector<std::string>& jobs) {
  v1::ReleasePlacement request;
  for (const std::string& job : jobs) request.add_jobs(job);
  v1::ReleaseReply reply;
  if (absl::Status s = Call(MessageType::kReleasePlacement, request, MessageType::kReleaseReply, reply); !s.ok()) {
    return s;
  }
  return reply;
}

absl::StatusOr<std::unique_ptr<ProfileSender>> ProfileSender::Connect(const std::string& endpoint,
                                                                      const std::optional<CurveClientKeys>& curve,
                                                                      zmq::context_t* context) {
  if (endpoint.empty()) return absl::InvalidArgumentError("endpoint: required");
  std::unique_ptr<zmq::context_t> owned;
  if (context == nullptr) {
    owned = std::make_unique<zmq::context_t>(1);
    context = owned.get();
  }
  zmq::socket_t socket(*context, zmq::socket_type::push);
  socket.set(zmq::sockopt::linger, 2000);
  if (curve) {
    if (absl::Status s = ApplyCurve(socket, *curve); !s.ok()) return s;
  }
  try {
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrCat("endpoint: cannot connect to '", endpoint, "': ", e.what()));
  }
  return std::unique_ptr<ProfileSender>(new ProfileSender(std::move(owned), std::move(socket)));
}

absl::Status ProfileSender::Send(const v1::ProfileUpdate& update) {
  const std::vector<std::string> frames = protocol::EncodeFrames(MessageType::kProfileUpdate, update);
  std::vector<zmq::const_buffer> out;
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  if (!zmq::send_multipart(socket_, out, zmq::send_flags::dontwait)) {
    return absl::UnavailableError("profile endpoint: send queue full (is phasord running?)");
  }
  return absl::OkStatus();
}

}  // namespace phasor::client
