#include "integrations/client/client.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "protocol/convert.h"
#include "protocol/curve_keys.h"
#include "protocol/status.h"
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

std::vector<std::string> SplitEndpoints(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options, zmq::context_t* context) {
  if (options.endpoint.empty()) return absl::InvalidArgumentError("endpoint: required");
  if (options.timeout_ms <= 0) return absl::InvalidArgumentError("timeout_ms: must be > 0");
  std::vector<std::string> endpoints = SplitEndpoints(options.endpoint);
  if (endpoints.empty()) return absl::InvalidArgumentError("endpoint: required");
  std::unique_ptr<zmq::context_t> owned;
  if (context == nullptr) {
    owned = std::make_unique<zmq::context_t>(1);
    context = owned.get();
  }
  // Every endpoint must be one ZeroMQ accepts; the first is connected.
  for (const std::string& e : endpoints) {
    zmq::socket_t probe(*context, zmq::socket_type::dealer);
    probe.set(zmq::sockopt::linger, 0);
    try {
      probe.connect(e);
    } catch (const zmq::error_t& err) {
      return absl::InvalidArgumentError(absl::StrCat("endpoint: cannot connect to '", e, "': ", err.what()));
    }
  }
  std::unique_ptr<Client> client(new Client(options, std::move(endpoints), std::move(owned), context));
  if (absl::Status s = client->ConnectTo(0); !s.ok()) return s;
  return client;
}

absl::Status Client::ConnectTo(size_t i) {
  zmq::socket_t socket(*context_, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  if (options_.curve) {
    if (absl::Status s = ApplyCurve(socket, *options_.curve); !s.ok()) return s;
  }
  try {
    socket.connect(endpoints_[i]);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrCat("endpoint: cannot connect to '", endpoints_[i], "': ", e.what()));
  }
  if (socket_.handle() != nullptr) socket_.close();
  socket_ = std::move(socket);
  current_ = i;
  options_.endpoint = endpoints_[i];  // named in errors
  return absl::OkStatus();
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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  if (endpoints_.size() == 1) {
    absl::Status s = CallOnce(type, request, reply_type, reply, deadline, options_.timeout_ms);
    const std::string leader = protocol::LeaderEndpoint(s);
    // One endpoint that is a standby (a Service address): the named leader is tried next.
    if (!absl::IsUnavailable(s) || leader.empty() || leader == endpoints_[0]) return s;
    endpoints_.push_back(leader);
    if (absl::Status c = ConnectTo(1); !c.ok()) return c;
  }
  // A dead endpoint costs one share of the bound; a standby answers at once.
  const int share = std::max(100, options_.timeout_ms / static_cast<int>(endpoints_.size()));
  absl::Status last;
  size_t tried = 0;
  while (true) {
    last = CallOnce(type, request, reply_type, reply, deadline, share);
    if (!absl::IsUnavailable(last)) return last;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return last;
    // The leader a standby named, when it is another endpoint; else the next one.
    size_t next = (current_ + 1) % endpoints_.size();
    const std::string leader = protocol::LeaderEndpoint(last);
    if (!leader.empty() && leader != endpoints_[current_]) {
      // The leader, also when it is not listed (a Service address in front of pods).
      auto it = std::find(endpoints_.begin(), endpoints_.end(), leader);
      if (it == endpoints_.end()) it = endpoints_.insert(endpoints_.end(), leader);
      next = static_cast<size_t>(it - endpoints_.begin());
    }
    if (++tried % endpoints_.size() == 0) {
      // Every endpoint refused (a failover under way): a short pause.
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(50),
                                                                                deadline - now));
    }
    if (absl::Status s = ConnectTo(next); !s.ok()) return s;
  }
}

absl::Status Client::CallOnce(MessageType type, google::protobuf::Message& request, MessageType reply_type,
                              google::protobuf::Message& reply, std::chrono::steady_clock::time_point call_deadline,
                              int wait_ms) {
  const uint64_t id = next_request_id_++;
  const google::protobuf::FieldDescriptor* id_field = request.GetDescriptor()->FindFieldByName("request_id");
  request.GetReflection()->SetUInt64(&request, id_field, id);
  const std::vector<std::string> frames = protocol::EncodeFrames(type, request);
  std::vector<zmq::const_buffer> out = {zmq::const_buffer(nullptr, 0)};
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  if (!zmq::send_multipart(socket_, out, zmq::send_flags::dontwait)) {
    return absl::UnavailableError(absl::StrCat("phasord at ", options_.endpoint, ": send queue full"));
  }
  const auto deadline =
      std::min(call_deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms));
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
    absl::StatusOr<protocol::Envelope> decoded = protocol::DecodeFrames(body, framing);
    if (!decoded.ok()) {
      return absl::InternalError(
          absl::StrCat("phasord at ", options_.endpoint, ": malformed reply: ", decoded.status().message()));
    }
    const protocol::Envelope& env = *decoded;
    if (env.type == MessageType::kError) {
      v1::Error error;
      if (!error.ParseFromString(env.payload)) return absl::InternalError("phasord: unparsable Error reply");
      if (error.request_id() != id && error.request_id() != 0) {
        ++stale_replies_;
        continue;
      }
      return protocol::StatusFromError(error);
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
  // phasord stops working on it when this call stops waiting for it.
  if (request.wait_ms() == 0 && options_.timeout_ms > 0) request.set_wait_ms(static_cast<uint32_t>(options_.timeout_ms));
  v1::RankReply reply;
  if (absl::Status s = Call(MessageType::kRankRequest, request, MessageType::kRankReply, reply); !s.ok()) return s;
  return reply;
}

absl::StatusOr<RankResult> Client::Rank(const placer::RankRequest& request, v1::RankRequest::ReplyDetail detail) {
  v1::RankRequest wire = protocol::ToProto(request);
  wire.set_reply_detail(detail);
  absl::StatusOr<v1::RankReply> reply = Rank(std::move(wire));
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

namespace {

// The job's OffsetUpdate in frames [version, type, payload], or nullopt for
// anything else (other jobs sharing a topic prefix, errors).
std::optional<v1::OffsetUpdate> ParseOffset(const std::vector<std::string>& body, const std::string& job) {
  absl::StatusOr<protocol::Envelope> env = protocol::DecodeFrames(body, protocol::FramingOptions{});
  v1::OffsetUpdate update;
  if (!env.ok() || env->type != MessageType::kOffsetUpdate || !update.ParseFromString(env->payload)) {
    return std::nullopt;
  }
  if (update.job() != job || update.period_us() == 0) return std::nullopt;
  return update;
}

}  // namespace

OffsetSubscriber::OffsetSubscriber(OffsetSubscriberOptions options)
    : options_(std::move(options)),
      sub_(context_, zmq::socket_type::sub),
      dealer_(context_, zmq::socket_type::dealer) {}

OffsetSubscriber::~OffsetSubscriber() {
  sub_.close();
  dealer_.close();
}

absl::StatusOr<std::unique_ptr<OffsetSubscriber>> OffsetSubscriber::Connect(OffsetSubscriberOptions options) {
  if (options.job.empty()) return absl::InvalidArgumentError("job: required");
  if (options.request_endpoint.empty()) return absl::InvalidArgumentError("request_endpoint: required");
  if (options.offset_endpoint.empty()) return absl::InvalidArgumentError("offset_endpoint: required");
  std::unique_ptr<OffsetSubscriber> s(new OffsetSubscriber(std::move(options)));
  for (zmq::socket_t* socket : {&s->sub_, &s->dealer_}) {
    socket->set(zmq::sockopt::linger, 0);
    if (s->options_.curve) {
      if (absl::Status st = ApplyCurve(*socket, *s->options_.curve); !st.ok()) return st;
    }
  }
  s->sub_.set(zmq::sockopt::subscribe, s->options_.job);
  for (const std::string& e : SplitEndpoints(s->options_.offset_endpoint)) {
    try {
      s->sub_.connect(e);
    } catch (const zmq::error_t& err) {
      return absl::InvalidArgumentError(absl::StrCat("offset_endpoint: '", e, "': ", err.what()));
    }
  }
  for (const std::string& e : SplitEndpoints(s->options_.request_endpoint)) {
    try {
      s->dealer_.connect(e);
    } catch (const zmq::error_t& err) {
      return absl::InvalidArgumentError(absl::StrCat("request_endpoint: '", e, "': ", err.what()));
    }
  }
  return s;
}

void OffsetSubscriber::RequestOffset() {
  v1::GetOffset request;
  request.set_request_id(next_request_id_++);
  request.set_job(options_.job);
  const std::vector<std::string> frames = protocol::EncodeFrames(MessageType::kGetOffset, request);
  std::vector<zmq::const_buffer> out = {zmq::const_buffer(nullptr, 0)};
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  (void)zmq::send_multipart(dealer_, out, zmq::send_flags::dontwait);
}

std::vector<v1::OffsetUpdate> OffsetSubscriber::Poll(int timeout_ms) {
  std::vector<v1::OffsetUpdate> updates;
  zmq::pollitem_t items[] = {{sub_.handle(), 0, ZMQ_POLLIN, 0}, {dealer_.handle(), 0, ZMQ_POLLIN, 0}};
  if (zmq::poll(items, 2, std::chrono::milliseconds(timeout_ms)) <= 0) return updates;
  while (true) {
    bool got = false;
    std::vector<zmq::message_t> in;
    if (zmq::recv_multipart(sub_, std::back_inserter(in), zmq::recv_flags::dontwait)) {
      got = true;
      std::vector<std::string> body;
      for (size_t i = 1; i < in.size(); ++i) body.push_back(in[i].to_string());  // skip the topic
      if (auto u = ParseOffset(body, options_.job)) updates.push_back(*std::move(u));
    }
    in.clear();
    if (zmq::recv_multipart(dealer_, std::back_inserter(in), zmq::recv_flags::dontwait)) {
      got = true;
      std::vector<std::string> body;
      for (size_t i = (!in.empty() && in[0].size() == 0) ? 1 : 0; i < in.size(); ++i) body.push_back(in[i].to_string());
      if (auto u = ParseOffset(body, options_.job)) updates.push_back(*std::move(u));
    }
    if (!got) return updates;
  }
}

}  // namespace phasor::client
