#include "daemon/server.h"

#include <zmq.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/curve_auth.h"
#include "daemon/etcd_state_store.h"
#include "daemon/leader_election.h"
#include "daemon/solver_pool.h"
#include "protocol/framing.h"
#include "protocol/status.h"
#include "spdlog/spdlog.h"
#include "zmq.hpp"
#include "zmq_addon.hpp"

namespace phasor::daemon {

using protocol::MessageType;

namespace {

constexpr const char* kWakeEndpoint = "inproc://phasord-solved";

std::string TypeLabel(std::optional<MessageType> type) {
  return type ? std::string(protocol::MessageTypeName(*type)) : std::string("unknown");
}

// ${NAME} in `value` replaced by the environment's NAME (a pod's
// advertise_endpoint: tcp://${POD_IP}:7410). InvalidArgument when unset.
absl::StatusOr<std::string> ExpandEnvironment(const std::string& value) {
  std::string out;
  for (size_t i = 0; i < value.size();) {
    const size_t open = value.find("${", i);
    if (open == std::string::npos) {
      out += value.substr(i);
      break;
    }
    const size_t close = value.find('}', open);
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("state_store.etcd.advertise_endpoint: '", value, "': '${' without '}'"));
    }
    const std::string name = value.substr(open + 2, close - open - 2);
    const char* v = std::getenv(name.c_str());
    if (v == nullptr || *v == '\0') {
      return absl::InvalidArgumentError(
          absl::StrCat("state_store.etcd.advertise_endpoint: '", value, "': $", name, " is not set"));
    }
    out += value.substr(i, open - i);
    out += v;
    i = close + 1;
  }
  return out;
}

}  // namespace

class Daemon::Impl {
 public:
  Impl(DaemonOptions options, Clock clock) : options_(std::move(options)), clock_(std::move(clock)) {}

  ~Impl() {
    pool_.reset();  // joins the solvers before the sockets they wake go
    auth_.reset();
    http_.reset();
    for (zmq::socket_t* s : {&router_, &pull_, &pub_, &wake_}) {
      if (s->handle() != nullptr) s->close();
    }
    ctx_.close();
  }

  absl::Status Start();
  void Run(const std::atomic<bool>& stop);

  BoundEndpoints endpoints_;
  Metrics metrics_;
  bool lost_ = false;

 private:
  // backend etcd: opens the Service on the etcd store, fenced by this
  // leadership, once the election is won. False (logged) when it cannot.
  bool TakeOver();
  // backend etcd: the Error a standby (or a leader past its lease) answers.
  absl::Status NotServing() const;
  absl::StatusOr<std::string> Bind(zmq::socket_t& socket, const std::string& endpoint, const char* key);

  void HandleRequest(std::vector<zmq::message_t>& frames, SteadyTime arrival);
  void HandleProfile(std::vector<zmq::message_t>& frames);
  void Dispatch(const std::vector<std::string>& routing, const protocol::Envelope& env, SteadyTime arrival);
  void OnRank(const std::vector<std::string>& routing, const protocol::Envelope& env, SteadyTime arrival);

  void Reply(const std::vector<std::string>& routing, MessageType type, const google::protobuf::MessageLite& msg);
  void ReplyError(const std::vector<std::string>& routing, std::optional<MessageType> type,
                  const absl::Status& status, uint64_t request_id = 0);
  void Publish(const v1::OffsetUpdate& update);

  DaemonOptions options_;
  Clock clock_;
  protocol::FramingOptions framing_;
  int64_t last_republish_us_ = 0;

  zmq::context_t ctx_;
  zmq::socket_t router_;
  zmq::socket_t pull_;
  zmq::socket_t pub_;
  zmq::socket_t wake_;
  std::unique_ptr<CurveAuthenticator> auth_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<SolverPool> pool_;
  std::unique_ptr<MetricsHttpServer> http_;
  std::unique_ptr<LeaderElection> election_;
  EtcdStateStore* etcd_store_ = nullptr;  // owned by service_
};

absl::StatusOr<std::string> Daemon::Impl::Bind(zmq::socket_t& socket, const std::string& endpoint,
                                               const char* key) {
  socket.set(zmq::sockopt::linger, 0);
  if (auth_) auth_->Secure(socket);
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat(key, ": cannot bind '", endpoint, "': ", e.what()));
  }
  return socket.get(zmq::sockopt::last_endpoint);
}

absl::Status Daemon::Impl::Start() {
  framing_.max_message_bytes = options_.max_message_bytes;
  const bool etcd = options_.state_store.backend == "etcd";
  if (!etcd) {
    absl::StatusOr<std::unique_ptr<Service>> service =
        Service::Open(options_, &metrics_, clock_, [this](const v1::OffsetUpdate& u) { Publish(u); });
    if (!service.ok()) return service.status();
    service_ = *std::move(service);
  } else if (absl::Status s = ValidateDaemonOptions(options_); !s.ok()) {
    return s;
  }

  if (options_.curve.enabled()) {
    absl::StatusOr<std::unique_ptr<CurveAuthenticator>> auth =
        CurveAuthenticator::Start(ctx_, options_.curve, &metrics_);
    if (!auth.ok()) return auth.status();
    auth_ = *std::move(auth);
  }
  router_ = zmq::socket_t(ctx_, zmq::socket_type::router);
  pull_ = zmq::socket_t(ctx_, zmq::socket_type::pull);
  pub_ = zmq::socket_t(ctx_, zmq::socket_type::pub);
  wake_ = zmq::socket_t(ctx_, zmq::socket_type::pull);
  // Oversized payloads up to twice the limit still get a TOO_LARGE reply;
  // larger ones make libzmq drop the connection before reading them.
  const int64_t hard_limit = static_cast<int64_t>(options_.max_message_bytes) * 2 + 65536;
  router_.set(zmq::sockopt::maxmsgsize, hard_limit);
  pull_.set(zmq::sockopt::maxmsgsize, hard_limit);
  wake_.set(zmq::sockopt::linger, 0);
  wake_.bind(kWakeEndpoint);
  absl::StatusOr<std::string> ep = Bind(router_, options_.request_endpoint, "request_endpoint");
  if (!ep.ok()) return ep.status();
  endpoints_.request = *ep;
  ep = Bind(pull_, options_.profile_endpoint, "profile_endpoint");
  if (!ep.ok()) return ep.status();
  endpoints_.profile = *ep;
  ep = Bind(pub_, options_.offset_endpoint, "offset_endpoint");
  if (!ep.ok()) return ep.status();
  endpoints_.offset = *ep;

  if (!options_.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> http = MetricsHttpServer::Start(options_.metrics_listen, &metrics_);
    if (!http.ok()) return http.status();
    http_ = *std::move(http);
    endpoints_.metrics_port = http_->port();
  }
  // Each solver wakes the socket thread through its own inproc PUSH (a
  // ZeroMQ socket belongs to one thread).
  pool_ = std::make_unique<SolverPool>(
      options_.solver_threads,
      [this] {
        thread_local std::optional<zmq::socket_t> wake;
        if (!wake) {
          wake.emplace(ctx_, zmq::socket_type::push);
          wake->set(zmq::sockopt::linger, 0);
          wake->connect(kWakeEndpoint);
        }
        wake->send(zmq::str_buffer("."), zmq::send_flags::dontwait);
      },
      options_.max_queued_rankings);

  metrics_.Set("phasord_up", {}, 1);
  if (etcd) {
    const EtcdOptions& e = options_.state_store.etcd;
    absl::StatusOr<std::string> expanded = ExpandEnvironment(e.advertise_endpoint);
    if (!expanded.ok()) return expanded.status();
    std::string advertise = expanded->empty() ? endpoints_.request : *expanded;
    if (advertise.find("://0.0.0.0:") != std::string::npos || advertise.find("://*:") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("state_store.etcd.advertise_endpoint: required when "
                                                     "request_endpoint binds every address ('", advertise, "')"));
    }
    std::string name = e.name;
    if (name.empty()) {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      name = absl::StrCat(host, ":", getpid());
    }
    absl::StatusOr<std::unique_ptr<LeaderElection>> election = LeaderElection::Start(e, name, advertise);
    if (!election.ok()) return election.status();
    election_ = *std::move(election);
    metrics_.Set("phasord_leader", {}, 0);
    metrics_.Set("phasord_standby", {}, 1);
    spdlog::info("phasord: '{}' on {} stands by for the lead (etcd {}, prefix {})", name, advertise,
                 absl::StrJoin(e.endpoints, ","), e.prefix);
    if (election_->Leads() && !TakeOver()) return absl::UnavailableError("state_store.etcd: cannot take over");
    return absl::OkStatus();
  }
  spdlog::info("phasord: serving requests on {}, profiles on {}, offsets on {}, metrics on port {}; {} ({})",
               endpoints_.request, endpoints_.profile, endpoints_.offset, endpoints_.metrics_port,
               options_.curve.enabled() ? "CURVE" : "plain", options_.state_path);
  service_->PublishAll();
  last_republish_us_ = clock_();
  return absl::OkStatus();
}

bool Daemon::Impl::TakeOver() {
  const auto begin = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<EtcdStateStore>> store = EtcdStateStore::Open(
      options_.state_store.etcd, {election_->leader_key(), election_->create_revision()});
  if (!store.ok()) {
    spdlog::error("phasord: taking over: {}", std::string(store.status().message()));
    return false;
  }
  EtcdStateStore* raw = store->get();
  absl::StatusOr<std::unique_ptr<Service>> service = Service::Open(
      options_, &metrics_, clock_, [this](const v1::OffsetUpdate& u) { Publish(u); }, *std::move(store));
  if (!service.ok()) {
    spdlog::error("phasord: taking over: {}", std::string(service.status().message()));
    return false;
  }
  service_ = *std::move(service);
  etcd_store_ = raw;
  metrics_.Set("phasord_leader", {}, 1);
  metrics_.Set("phasord_standby", {}, 0);
  spdlog::info("phasord: leads: serving requests on {}, profiles on {}, offsets on {} ({} jobs restored in {} ms)",
               endpoints_.request, endpoints_.profile, endpoints_.offset, service_->jobs(),
               std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - begin).count());
  service_->PublishAll();
  last_republish_us_ = clock_();
  return true;
}

absl::Status Daemon::Impl::NotServing() const {
  const LeaderInfo leader = election_->leader();
  const std::string self = election_->Leads() || !election_->Lost() ? "a standby" : "a deposed leader";
  if (leader.name.empty() || leader.create_revision == election_->create_revision()) {
    return protocol::NotLeaderStatus(absl::StrCat("not the leader: this phasord is ", self, "; no leader is known "
                                                  "yet (try again, or another endpoint)"),
                                     "");
  }
  return protocol::NotLeaderStatus(absl::StrCat("not the leader: this phasord is ", self, "; '", leader.name,
                                                "' leads at ", leader.endpoint),
                                   leader.endpoint);
}

void Daemon::Impl::Run(const std::atomic<bool>& stop) {
  while (!stop) {
    if (election_) {
      if (service_ && (!election_->Leads() || etcd_store_->fenced())) {
        // Stop answering before another can lead (the lease's deadline), and
        // exit: phasord restarts as a standby (as kube-scheduler does).
        spdlog::error("phasord: lost the lead ({}): stopping", etcd_store_->fenced() ? "a write was fenced"
                                                                                    : "the lease ran out");
        metrics_.Set("phasord_leader", {}, 0);
        lost_ = true;
        return;
      }
      if (!service_ && election_->Leads()) (void)TakeOver();
      if (!service_ && election_->Lost()) {
        lost_ = true;
        return;
      }
    }
    zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                               {pull_.handle(), 0, ZMQ_POLLIN, 0},
                               {wake_.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 3, std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      spdlog::error("phasord: poll: {}", e.what());
      continue;
    }
    // Bounded batches keep one busy socket from starving the others. The
    // batch is read before it is handled, so every request's time starts
    // when the socket thread saw it, not after the requests ahead of it.
    if (items[0].revents & ZMQ_POLLIN) {
      const SteadyTime arrival = std::chrono::steady_clock::now();
      std::vector<std::vector<zmq::message_t>> batch;
      for (int i = 0; i < 256; ++i) {
        std::vector<zmq::message_t> frames;
        if (!zmq::recv_multipart(router_, std::back_inserter(frames), zmq::recv_flags::dontwait)) break;
        batch.push_back(std::move(frames));
      }
      for (std::vector<zmq::message_t>& frames : batch) HandleRequest(frames, arrival);
    }
    for (int i = 0; i < 256 && (items[1].revents & ZMQ_POLLIN); ++i) {
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(pull_, std::back_inserter(frames), zmq::recv_flags::dontwait)) break;
      HandleProfile(frames);
    }
    if (items[2].revents & ZMQ_POLLIN) {
      zmq::message_t m;
      while (wake_.recv(m, zmq::recv_flags::dontwait)) {
      }
      pool_->TakeDone();
    }
    const int64_t now = clock_();
    if (service_ && options_.republish_interval_ms > 0 &&
        now - last_republish_us_ >= static_cast<int64_t>(options_.republish_interval_ms) * 1000) {
      service_->PublishAll();
      last_republish_us_ = now;
    }
  }
}

void Daemon::Impl::Reply(const std::vector<std::string>& routing, MessageType type,
                         const google::protobuf::MessageLite& msg) {
  std::vector<zmq::const_buffer> out;
  for (const std::string& r : routing) out.push_back(zmq::buffer(r));
  const std::vector<std::string> frames = protocol::EncodeFrames(type, msg);
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  zmq::send_multipart(router_, out, zmq::send_flags::dontwait);
}

void Daemon::Impl::ReplyError(const std::vector<std::string>& routing, std::optional<MessageType> type,
                              const absl::Status& status, uint64_t request_id) {
  const v1::Error error = protocol::ErrorFromStatus(status, request_id);
  metrics_.Increment("phasord_errors_total",
                     {{"type", TypeLabel(type)}, {"code", std::string(protocol::ErrorCodeName(error.code()))}});
  spdlog::debug("phasord: {} -> Error {}: {}", TypeLabel(type), std::string(protocol::ErrorCodeName(error.code())),
                error.message());
  if (!routing.empty()) Reply(routing, MessageType::kError, error);
}

void Daemon::Impl::Publish(const v1::OffsetUpdate& update) {
  const std::vector<std::string> frames = protocol::EncodeFrames(MessageType::kOffsetUpdate, update);
  std::vector<zmq::const_buffer> out = {zmq::buffer(update.job())};
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  zmq::send_multipart(pub_, out, zmq::send_flags::dontwait);
}

void Daemon::Impl::HandleRequest(std::vector<zmq::message_t>& frames, SteadyTime arrival) {
  // [identity, (empty delimiter,) version, type, payload]
  std::vector<std::string> routing;
  size_t i = 0;
  if (!frames.empty()) routing.push_back(frames[i++].to_string());
  if (i < frames.size() && frames[i].size() == 0) routing.push_back(frames[i++].to_string());
  std::vector<std::string> body;
  for (; i < frames.size(); ++i) body.push_back(frames[i].to_string());
  absl::StatusOr<protocol::Envelope> env = protocol::DecodeFrames(body, framing_);
  if (!env.ok()) {
    std::optional<MessageType> type;
    if (body.size() >= 2) type = protocol::MessageTypeFromName(body[1]);
    return ReplyError(routing, type, env.status());
  }
  metrics_.Increment("phasord_requests_total", {{"type", TypeLabel(env->type)}});
  if (election_ && (!service_ || !election_->Leads())) {
    uint64_t id = 0;
    v1::Health probe;  // request_id is field 1 of every request
    if (probe.ParseFromString(env->payload)) id = probe.request_id();
    return ReplyError(routing, env->type, NotServing(), id);
  }
  Dispatch(routing, *env, arrival);
}

namespace {

// Parses the payload as Request, runs `call` and replies with its result
// (of wire type `reply_type`) or the Error for its Status.
template <typename Request, typename Call, typename Send, typename Fail>
void Serve(const protocol::Envelope& env, MessageType reply_type, Call call, Send send, Fail fail) {
  Request req;
  if (absl::Status s = protocol::ParsePayload(env, req); !s.ok()) return fail(s, 0);
  auto result = call(req);
  if (!result.ok()) return fail(result.status(), req.request_id());
  send(reply_type, *result);
}

}  // namespace

void Daemon::Impl::Dispatch(const std::vector<std::string>& routing, const protocol::Envelope& env,
                            SteadyTime arrival) {
  auto send = [&](MessageType type, const google::protobuf::MessageLite& msg) { Reply(routing, type, msg); };
  auto fail = [&](const absl::Status& s, uint64_t id) { ReplyError(routing, env.type, s, id); };
  switch (env.type) {
    case MessageType::kRankRequest:
      return OnRank(routing, env, arrival);
    case MessageType::kCommitPlacement:
      return Serve<v1::CommitPlacement>(
          env, MessageType::kCommitReply, [&](const v1::CommitPlacement& r) { return service_->Commit(r); }, send,
          fail);
    case MessageType::kGetOffset:
      return Serve<v1::GetOffset>(
          env, MessageType::kOffsetUpdate, [&](const v1::GetOffset& r) { return service_->GetOffset(r); }, send,
          fail);
    case MessageType::kHealth:
      return Serve<v1::Health>(
          env, MessageType::kHealthReply,
          [&](const v1::Health& r) { return absl::StatusOr<v1::HealthReply>(service_->Health(r)); }, send, fail);
    case MessageType::kGetSnapshot:
      return Serve<v1::GetSnapshot>(
          env, MessageType::kSnapshot, [&](const v1::GetSnapshot& r) { return service_->GetSnapshot(r); }, send,
          fail);
    case MessageType::kReleasePlacement:
      return Serve<v1::ReleasePlacement>(
          env, MessageType::kReleaseReply, [&](const v1::ReleasePlacement& r) { return service_->Release(r); },
          send, fail);
    default:
      return fail(protocol::WireStatus(v1::Error::UNKNOWN_TYPE,
                                       absl::StrCat("frame 1: '", std::string(protocol::MessageTypeName(env.type)),
                                                    "' is not a request phasord serves on this socket")),
                  0);
  }
}

void Daemon::Impl::OnRank(const std::vector<std::string>& routing, const protocol::Envelope& env,
                          SteadyTime arrival) {
  v1::RankRequest req;
  if (absl::Status s = protocol::ParsePayload(env, req); !s.ok()) return ReplyError(routing, env.type, s);
  absl::StatusOr<PreparedRanking> prepared = service_->PrepareRank(req, arrival);
  if (!prepared.ok()) return ReplyError(routing, env.type, prepared.status(), req.request_id());
  // The solve runs on the pool; its completion (on this thread) stores the
  // ranking and answers. A full queue answers at once; a request still
  // queued when its time has passed is answered unsolved (Service::Solve).
  auto task = std::make_shared<PreparedRanking>(*std::move(prepared));
  const bool queued = pool_->Submit([this, routing, task]() -> std::function<void()> {
    auto reply = std::make_shared<absl::StatusOr<SolvedRanking>>(Service::Solve(*task));
    return [this, routing, task, reply] {
      if (reply->ok()) {
        if (absl::Status s = service_->RecordRanking(*task, **reply); !s.ok()) {
          return ReplyError(routing, MessageType::kRankRequest, s, task->request_id);
        }
        return Reply(routing, MessageType::kRankReply, (*reply)->reply);
      }
      if (absl::IsResourceExhausted(reply->status())) {
        metrics_.Increment("phasord_rankings_dropped_total", {{"reason", "time"}});
        spdlog::warn("phasord: {}", std::string(reply->status().message()));
      } else {
        spdlog::error("phasord: ranking {} failed: {}", task->ranking_id, std::string(reply->status().message()));
      }
      ReplyError(routing, MessageType::kRankRequest, reply->status(), task->request_id);
    };
  });
  if (!queued) {
    metrics_.Increment("phasord_rankings_dropped_total", {{"reason", "queue_full"}});
    ReplyError(routing, MessageType::kRankRequest,
               absl::ResourceExhaustedError(absl::StrCat("max_queued_rankings: ", options_.max_queued_rankings,
                                                         " rankings already wait for a solver; try again")),
               task->request_id);
  }
}

void Daemon::Impl::HandleProfile(std::vector<zmq::message_t>& frames) {
  std::vector<std::string> body;
  for (zmq::message_t& f : frames) body.push_back(f.to_string());
  const std::vector<std::string> no_reply;
  absl::StatusOr<protocol::Envelope> env = protocol::DecodeFrames(body, framing_);
  if (!env.ok()) {
    std::optional<MessageType> type;
    if (body.size() >= 2) type = protocol::MessageTypeFromName(body[1]);
    spdlog::warn("phasord: profile socket: {}", std::string(env.status().message()));
    return ReplyError(no_reply, type, env.status());
  }
  metrics_.Increment("phasord_requests_total", {{"type", TypeLabel(env->type)}});
  if (election_ && (!service_ || !election_->Leads())) {
    metrics_.Increment("phasord_profiles_ignored_total", {{"reason", "standby"}});
    return;
  }
  auto reject = [&](const absl::Status& s) {
    spdlog::warn("phasord: profile socket: {}", std::string(s.message()));
    ReplyError(no_reply, env->type, s);
  };
  if (env->type != MessageType::kProfileUpdate) {
    return reject(protocol::WireStatus(v1::Error::UNKNOWN_TYPE,
                                       absl::StrCat("frame 1: '", std::string(protocol::MessageTypeName(env->type)),
                                                    "' is not accepted on the profile socket")));
  }
  v1::ProfileUpdate update;
  if (absl::Status s = protocol::ParsePayload(*env, update); !s.ok()) return reject(s);
  if (absl::Status s = service_->AcceptProfile(update); !s.ok()) {
    if (absl::IsInternal(s)) return;  // logged by the service; not the probe's fault
    return reject(s);
  }
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const DaemonOptions& options, Clock clock) {
  auto impl = std::make_unique<Impl>(options, std::move(clock));
  if (absl::Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() = default;
void Daemon::Run(const std::atomic<bool>& stop) { impl_->Run(stop); }
const BoundEndpoints& Daemon::endpoints() const { return impl_->endpoints_; }
const Metrics& Daemon::metrics() const { return impl_->metrics_; }
bool Daemon::lost_leadership() const { return impl_->lost_; }

}  // namespace phasor::daemon
