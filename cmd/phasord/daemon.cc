#include "cmd/phasord/daemon.h"

#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/phasord/state_store.h"
#include "placer/candidate_routing.h"
#include "placer/ranker.h"
#include "placer/traffic_profile.h"
#include "protocol/convert.h"
#include "protocol/curve_keys.h"
#include "protocol/framing.h"
#include "spdlog/spdlog.h"
#include "topology/router.h"
#include "topology/topology_file.h"
#include "topology/topology_yaml.h"
#include "topology/traffic.h"
#include "zmq.hpp"
#include "zmq_addon.hpp"

namespace phasor::daemon {

using protocol::MessageType;

Clock SystemClock() {
  return [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
}

namespace {

constexpr const char* kWakeEndpoint = "inproc://phasord-solved";
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

std::string TypeLabel(std::optional<MessageType> type) {
  return type ? std::string(protocol::MessageTypeName(*type)) : std::string("unknown");
}

struct SolveTask {
  std::vector<std::string> routing;
  std::vector<placer::RejectedCandidate> unrouted;  // server-form candidates that could not be routed
  uint64_t request_id = 0;
  uint64_t ranking_id = 0;
  placer::RankRequest request;
  std::string candidates;  // serialized RankRequest with only the candidates
};

struct SolveDone {
  std::vector<std::string> routing;
  std::vector<placer::RejectedCandidate> unrouted;
  uint64_t request_id = 0;
  uint64_t ranking_id = 0;
  std::string candidates;
  std::optional<v1::RankReply> reply;  // nullopt: the solver failed
  std::string failure;
  double seconds = 0;
};

}  // namespace

class Daemon::Impl {
 public:
  Impl(DaemonOptions options, Clock clock) : options_(std::move(options)), clock_(std::move(clock)) {}

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    zap_stop_ = true;
    if (zap_thread_.joinable()) zap_thread_.join();
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

 private:
  absl::Status SetUpCurve();
  absl::StatusOr<std::string> Bind(zmq::socket_t& socket, const std::string& endpoint, const char* key);
  void ZapLoop(zmq::socket_t& zap);
  void WorkerLoop();

  void HandleRequest(std::vector<zmq::message_t>& frames);
  void HandleProfile(std::vector<zmq::message_t>& frames);
  void HandleSolved();

  void OnRank(const std::vector<std::string>& routing, const protocol::Envelope& env);
  void OnCommit(const std::vector<std::string>& routing, const protocol::Envelope& env);
  void OnGetOffset(const std::vector<std::string>& routing, const protocol::Envelope& env);
  void OnHealth(const std::vector<std::string>& routing, const protocol::Envelope& env);
  void OnGetSnapshot(const std::vector<std::string>& routing, const protocol::Envelope& env);
  void OnRelease(const std::vector<std::string>& routing, const protocol::Envelope& env);

  void Reply(const std::vector<std::string>& routing, MessageType type, const google::protobuf::MessageLite& msg);
  void ReplyError(const std::vector<std::string>& routing, std::optional<MessageType> type, const v1::Error& error);
  void Publish(const StoredOffset& offset);
  void PublishAll();
  v1::OffsetUpdate ToUpdate(const StoredOffset& offset) const;
  void MaybeRealign(const std::string& job, int64_t t0_epoch_us);
  void ScoreLinkProfile(const std::string& link, const placer::TrafficProfile& profile);
  void RouteCandidates(placer::RankRequest& request, std::vector<placer::RejectedCandidate>& unrouted) const;

  DaemonOptions options_;
  Clock clock_;
  int64_t started_us_ = 0;
  int64_t epoch_us_ = 0;

  zmq::context_t ctx_;
  zmq::socket_t router_;
  zmq::socket_t pull_;
  zmq::socket_t pub_;
  zmq::socket_t wake_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<MetricsHttpServer> http_;
  protocol::FramingOptions framing_;
  std::unique_ptr<topology::Topology> fabric_;
  std::unique_ptr<topology::Router> fabric_router_;

  // CURVE.
  std::string server_secret_;
  std::string server_public_;
  std::set<std::string> allowed_clients_;
  std::thread zap_thread_;
  std::atomic<bool> zap_stop_{false};

  // Solvers.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<SolveTask> tasks_;
  std::deque<SolveDone> done_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  uint64_t next_ranking_id_ = 1;

  // State mirrored from the database (the socket thread only).
  std::map<std::string, StoredOffset> offsets_;
  std::map<std::string, v1::ProfileUpdate> job_profiles_;
  std::map<std::string, double> link_capacity_gbps_;
  // The profiles RankRequests gave inline (the latest per job), for GetSnapshot.
  std::map<std::string, placer::TrafficProfile> request_profiles_;
  std::map<std::string, int64_t> last_realign_us_;
  size_t placements_ = 0;
  int64_t last_republish_us_ = 0;
};

absl::Status Daemon::Impl::SetUpCurve() {
  const CurveOptions& c = options_.curve;
  absl::StatusOr<std::string> sec = protocol::ReadKeyFile(c.server_secret_key_file);
  if (!sec.ok()) return absl::InvalidArgumentError(absl::StrCat("curve.server_secret_key_file: ", sec.status().message()));
  absl::StatusOr<std::string> pub = protocol::ReadKeyFile(c.server_public_key_file);
  if (!pub.ok()) return absl::InvalidArgumentError(absl::StrCat("curve.server_public_key_file: ", pub.status().message()));
  absl::StatusOr<std::set<std::string>> allowed = protocol::ReadAllowList(c.allowed_clients_file);
  if (!allowed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("curve.allowed_clients_file: ", allowed.status().message()));
  }
  if (!zmq_has("curve")) return absl::UnavailableError("curve: this libzmq has no CURVE support");
  server_secret_ = *sec;
  server_public_ = *pub;
  allowed_clients_ = *allowed;
  // The ZAP handler must be bound before any CURVE socket binds.
  zmq::socket_t zap(ctx_, zmq::socket_type::rep);
  zap.set(zmq::sockopt::linger, 0);
  zap.bind(kZapEndpoint);
  zap_thread_ = std::thread([this, s = std::move(zap)]() mutable { ZapLoop(s); });
  return absl::OkStatus();
}

void Daemon::Impl::ZapLoop(zmq::socket_t& zap) {
  while (!zap_stop_) {
    zmq::pollitem_t item{zap.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
    std::vector<zmq::message_t> req;
    if (!zmq::recv_multipart(zap, std::back_inserter(req), zmq::recv_flags::dontwait)) continue;
    // ZAP request: version, request id, domain, address, identity, mechanism, credentials...
    std::string status = "400";
    std::string text = "malformed ZAP request";
    std::string client_key;
    std::string address = req.size() > 3 ? req[3].to_string() : "?";
    if (req.size() >= 7 && req[5].to_string() == "CURVE" && req[6].size() == 32) {
      char z85[41] = {};
      zmq_z85_encode(z85, static_cast<const uint8_t*>(req[6].data()), 32);
      client_key = z85;
      if (allowed_clients_.count(client_key) > 0) {
        status = "200";
        text = "OK";
      } else {
        text = "client key not allowed";
      }
    } else if (req.size() >= 6) {
      text = "mechanism " + req[5].to_string() + " refused";
    }
    if (status != "200") {
      metrics_.Increment("phasord_curve_refused_total");
      spdlog::warn("curve: refused client key '{}' from {}: {}", client_key, address, text);
    }
    const std::string id = req.size() > 1 ? req[1].to_string() : std::string();
    const std::vector<zmq::const_buffer> reply = {zmq::str_buffer("1.0"), zmq::buffer(id),
                                                  zmq::buffer(status),     zmq::buffer(text),
                                                  zmq::buffer(client_key), zmq::const_buffer(nullptr, 0)};
    zmq::send_multipart(zap, reply);
  }
}

absl::StatusOr<std::string> Daemon::Impl::Bind(zmq::socket_t& socket, const std::string& endpoint,
                                               const char* key) {
  socket.set(zmq::sockopt::linger, 0);
  if (options_.curve.enabled()) {
    socket.set(zmq::sockopt::curve_server, 1);
    socket.set(zmq::sockopt::curve_secretkey, server_secret_);
    socket.set(zmq::sockopt::zap_domain, "phasord");
  }
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat(key, ": cannot bind '", endpoint, "': ", e.what()));
  }
  return socket.get(zmq::sockopt::last_endpoint);
}

absl::Status Daemon::Impl::Start() {
  if (absl::Status s = ValidateDaemonOptions(options_); !s.ok()) return s;
  started_us_ = clock_();
  framing_.max_message_bytes = options_.max_message_bytes;

  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(options_.state_path, options_.sqlite_synchronous);
  if (!store.ok()) return store.status();
  store_ = *std::move(store);
  absl::StatusOr<int64_t> epoch = store_->EpochOr(started_us_);
  if (!epoch.ok()) return epoch.status();
  epoch_us_ = *epoch;
  absl::StatusOr<uint64_t> max_id = store_->MaxRankingId();
  if (!max_id.ok()) return max_id.status();
  next_ranking_id_ = *max_id + 1;
  absl::StatusOr<std::vector<StoredOffset>> offsets = store_->LoadOffsets();
  if (!offsets.ok()) return offsets.status();
  for (const StoredOffset& o : *offsets) offsets_[o.job] = o;
  absl::StatusOr<std::vector<StoredPlacement>> placements = store_->LoadPlacements();
  if (!placements.ok()) return placements.status();
  placements_ = placements->size();
  absl::StatusOr<std::vector<StoredProfile>> profiles = store_->LoadProfiles();
  if (!profiles.ok()) return profiles.status();
  for (const StoredProfile& p : *profiles) {
    v1::ProfileUpdate update;
    if (p.kind == v1::ProfileUpdate::JOB && update.ParseFromString(p.update)) job_profiles_[p.subject] = update;
  }
  absl::StatusOr<CommittedInputs> committed = store_->LoadCommittedInputs();
  if (!committed.ok()) return committed.status();
  for (const auto& [job, bytes] : committed->profiles) {
    v1::TrafficProfile profile;
    if (profile.ParseFromString(bytes)) {
      request_profiles_[job] = protocol::FromProto(profile);
    } else {
      spdlog::warn("phasord: state_path: the stored profile of job '{}' does not parse; skipped", job);
    }
  }
  link_capacity_gbps_ = committed->capacities_gbps;

  if (!options_.topology_path.empty()) {
    absl::StatusOr<topology::Topology> fabric = topology::LoadTopologyFile(options_.topology_path);
    if (!fabric.ok()) {
      return absl::Status(fabric.status().code(), absl::StrCat("topology_path: ", fabric.status().message()));
    }
    fabric_ = std::make_unique<topology::Topology>(*std::move(fabric));
    fabric_router_ = std::make_unique<topology::Router>(*fabric_);
  }
  if (options_.curve.enabled()) {
    if (absl::Status s = SetUpCurve(); !s.ok()) return s;
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
  for (uint32_t i = 0; i < options_.solver_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });

  metrics_.Set("phasord_up", {}, 1);
  metrics_.Set("phasord_epoch_us", {}, static_cast<double>(epoch_us_));
  metrics_.Set("phasord_jobs", {}, static_cast<double>(offsets_.size()));
  spdlog::info("phasord: serving requests on {}, profiles on {}, offsets on {}, metrics on port {}; {} ({})",
               endpoints_.request, endpoints_.profile, endpoints_.offset, endpoints_.metrics_port,
               options_.curve.enabled() ? "CURVE" : "plain", options_.state_path);
  spdlog::info("phasord: epoch {} us; {} offsets, {} placements, {} job profiles restored; next ranking {}",
               epoch_us_, offsets_.size(), placements_, job_profiles_.size(), next_ranking_id_);
  PublishAll();
  return absl::OkStatus();
}

void Daemon::Impl::WorkerLoop() {
  zmq::socket_t wake(ctx_, zmq::socket_type::push);
  wake.set(zmq::sockopt::linger, 0);
  wake.connect(kWakeEndpoint);
  while (true) {
    SolveTask task;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    SolveDone done;
    done.routing = std::move(task.routing);
    done.unrouted = std::move(task.unrouted);
    done.request_id = task.request_id;
    done.ranking_id = task.ranking_id;
    done.candidates = std::move(task.candidates);
    const auto begin = std::chrono::steady_clock::now();
    try {
      placer::Ranking ranking = placer::Rank(task.request);
      ranking.rejected.insert(ranking.rejected.end(), done.unrouted.begin(), done.unrouted.end());
      v1::RankReply reply = protocol::ToProto(ranking, task.request);
      done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      reply.set_request_id(task.request_id);
      reply.set_ranking_id(task.ranking_id);
      reply.set_solve_seconds(done.seconds);
      done.reply = std::move(reply);
    } catch (const std::exception& e) {
      done.failure = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      done_.push_back(std::move(done));
    }
    wake.send(zmq::str_buffer("."), zmq::send_flags::dontwait);
  }
}

void Daemon::Impl::Run(const std::atomic<bool>& stop) {
  while (!stop) {
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
    // Bounded batches keep one busy socket from starving the others.
    for (int i = 0; i < 256 && (items[0].revents & ZMQ_POLLIN); ++i) {
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(router_, std::back_inserter(frames), zmq::recv_flags::dontwait)) break;
      HandleRequest(frames);
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
      HandleSolved();
    }
    const int64_t now = clock_();
    if (options_.republish_interval_ms > 0 &&
        now - last_republish_us_ >= static_cast<int64_t>(options_.republish_interval_ms) * 1000) {
      PublishAll();
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
                              const v1::Error& error) {
  metrics_.Increment("phasord_errors_total",
                     {{"type", TypeLabel(type)}, {"code", std::string(protocol::ErrorCodeName(error.code()))}});
  spdlog::debug("phasord: {} -> Error {}: {}", TypeLabel(type), std::string(protocol::ErrorCodeName(error.code())),
                error.message());
  if (!routing.empty()) Reply(routing, MessageType::kError, error);
}

void Daemon::Impl::HandleRequest(std::vector<zmq::message_t>& frames) {
  // [identity, (empty delimiter,) version, type, payload]
  std::vector<std::string> routing;
  size_t i = 0;
  if (!frames.empty()) routing.push_back(frames[i++].to_string());
  if (i < frames.size() && frames[i].size() == 0) routing.push_back(frames[i++].to_string());
  std::vector<std::string> body;
  for (; i < frames.size(); ++i) body.push_back(frames[i].to_string());
  auto decoded = protocol::DecodeFrames(body, framing_);
  if (const v1::Error* error = std::get_if<v1::Error>(&decoded)) {
    std::optional<MessageType> type;
    if (body.size() >= 2) type = protocol::MessageTypeFromName(body[1]);
    ReplyError(routing, type, *error);
    return;
  }
  const protocol::Envelope& env = std::get<protocol::Envelope>(decoded);
  metrics_.Increment("phasord_requests_total", {{"type", TypeLabel(env.type)}});
  switch (env.type) {
    case MessageType::kRankRequest:
      OnRank(routing, env);
      break;
    case MessageType::kCommitPlacement:
      OnCommit(routing, env);
      break;
    case MessageType::kGetOffset:
      OnGetOffset(routing, env);
      break;
    case MessageType::kHealth:
      OnHealth(routing, env);
      break;
    case MessageType::kGetSnapshot:
      OnGetSnapshot(routing, env);
      break;
    case MessageType::kReleasePlacement:
      OnRelease(routing, env);
      break;
    default:
      ReplyError(routing, env.type,
                 protocol::MakeError(v1::Error::UNKNOWN_TYPE,
                                     absl::StrCat("frame 1: '", std::string(protocol::MessageTypeName(env.type)),
                                                  "' is not a request phasord serves on this socket")));
  }
}

void Daemon::Impl::OnRank(const std::vector<std::string>& routing, const protocol::Envelope& env) {
  v1::RankRequest req;
  if (auto error = protocol::ParsePayload(env, req)) return ReplyError(routing, env.type, *error);
  const uint64_t id = req.request_id();
  auto limit = [&](const char* field, int n, uint32_t max) -> bool {
    if (static_cast<uint32_t>(n) <= max) return false;
    ReplyError(routing, env.type,
               protocol::MakeError(v1::Error::LIMIT_EXCEEDED,
                                   absl::StrCat(field, ": ", n, " entries exceed the limit of ", max), id));
    return true;
  };
  if (limit("jobs", req.jobs_size(), options_.max_jobs_per_request) ||
      limit("links", req.links_size(), options_.max_links_per_request) ||
      limit("candidates", req.candidates_size(), options_.max_candidates_per_request)) {
    return;
  }
  absl::StatusOr<placer::RankRequest> request =
      protocol::FromProto(req, [this](const std::string& job) -> std::optional<placer::TrafficProfile> {
        auto it = job_profiles_.find(job);
        if (it == job_profiles_.end()) return std::nullopt;
        return protocol::ProfileFromUpdate(it->second);
      });
  if (!request.ok()) {
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::NOT_FOUND, std::string(request.status().message()), id));
  }
  std::vector<placer::RejectedCandidate> unrouted;
  RouteCandidates(*request, unrouted);
  if (absl::Status s = placer::ValidateRankRequest(*request); !s.ok()) {
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::INVALID_ARGUMENT, std::string(s.message()), id));
  }
  for (const placer::Link& l : request->links) link_capacity_gbps_[l.id] = l.capacity_gbps;
  for (int j = 0; j < req.jobs_size(); ++j) {
    if (req.jobs(j).has_profile()) request_profiles_[request->jobs[j].id] = request->jobs[j].profile;
  }
  // The request as ranked (options aside): server-form candidates routed to
  // link shares, so that a commit records the links each job loads, and the
  // jobs' profiles and links' capacities, which a commit keeps.
  v1::RankRequest as_ranked = protocol::ToProto(*request);
  as_ranked.clear_options();
  SolveTask task;
  task.routing = routing;
  task.request_id = id;
  task.ranking_id = next_ranking_id_++;
  task.request = *std::move(request);
  task.unrouted = std::move(unrouted);
  task.candidates = as_ranked.SerializeAsString();
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    tasks_.push_back(std::move(task));
  }
  queue_cv_.notify_one();
}

void Daemon::Impl::HandleSolved() {
  std::deque<SolveDone> done;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    done.swap(done_);
  }
  for (SolveDone& d : done) {
    if (!d.reply) {
      spdlog::error("phasord: ranking {} failed: {}", d.ranking_id, d.failure);
      ReplyError(d.routing, MessageType::kRankRequest,
                 protocol::MakeError(v1::Error::INTERNAL, "ranking failed: " + d.failure, d.request_id));
      continue;
    }
    metrics_.ObserveSolveSeconds(d.seconds);
    StoredRanking stored{d.ranking_id, clock_(), d.reply->SerializeAsString(), std::move(d.candidates)};
    if (absl::Status s = store_->PutRanking(stored, options_.keep_rankings); !s.ok()) {
      spdlog::error("phasord: cannot store ranking {}: {}", d.ranking_id, std::string(s.message()));
      ReplyError(d.routing, MessageType::kRankRequest,
                 protocol::MakeError(v1::Error::INTERNAL, std::string(s.message()), d.request_id));
      continue;
    }
    Reply(d.routing, MessageType::kRankReply, *d.reply);
  }
}

v1::OffsetUpdate Daemon::Impl::ToUpdate(const StoredOffset& o) const {
  v1::OffsetUpdate u;
  u.set_job(o.job);
  u.set_origin_epoch_us(o.origin_epoch_us);
  u.set_period_us(o.period_us);
  u.set_shift_us(o.shift_us);
  u.set_version(o.version);
  return u;
}

void Daemon::Impl::Publish(const StoredOffset& offset) {
  const v1::OffsetUpdate update = ToUpdate(offset);
  const std::vector<std::string> frames = protocol::EncodeFrames(MessageType::kOffsetUpdate, update);
  std::vector<zmq::const_buffer> out = {zmq::buffer(offset.job)};
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  zmq::send_multipart(pub_, out, zmq::send_flags::dontwait);
  metrics_.Increment("phasord_offsets_published_total");
}

void Daemon::Impl::PublishAll() {
  for (const auto& [job, offset] : offsets_) Publish(offset);
  last_republish_us_ = clock_();
}

void Daemon::Impl::OnCommit(const std::vector<std::string>& routing, const protocol::Envelope& env) {
  v1::CommitPlacement req;
  if (auto error = protocol::ParsePayload(env, req)) return ReplyError(routing, env.type, *error);
  const uint64_t id = req.request_id();
  absl::StatusOr<StoredRanking> stored = store_->GetRanking(req.ranking_id());
  if (!stored.ok()) {
    const bool missing = absl::IsNotFound(stored.status());
    return ReplyError(routing, env.type,
                      protocol::MakeError(missing ? v1::Error::NOT_FOUND : v1::Error::INTERNAL,
                                          std::string(stored.status().message()), id));
  }
  v1::RankReply ranking;
  v1::RankRequest candidates;
  if (!ranking.ParseFromString(stored->reply) || !candidates.ParseFromString(stored->candidates)) {
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::INTERNAL, "stored ranking does not parse", id));
  }
  const v1::RankedCandidate* chosen = nullptr;
  for (const v1::RankedCandidate& c : ranking.ranked()) {
    if (c.candidate() == req.candidate()) chosen = &c;
  }
  if (chosen == nullptr) {
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::NOT_FOUND,
                                          absl::StrCat("candidate: '", req.candidate(), "' is not ranked in ranking ",
                                                       req.ranking_id()),
                                          id));
  }
  const v1::Candidate* shares = nullptr;
  for (const v1::Candidate& c : candidates.candidates()) {
    if (c.id() == req.candidate()) shares = &c;
  }
  const int64_t now = clock_();
  std::vector<StoredPlacement> placements;
  std::vector<StoredOffset> offsets;
  std::vector<LinkScoreSample> samples;
  for (const v1::JobShift& s : chosen->shifts()) {
    StoredOffset o{s.job(), epoch_us_, s.period_us(), s.shift_us(), 1};
    auto old = offsets_.find(s.job());
    if (old != offsets_.end()) {
      o.version = old->second.version;
      if (old->second.period_us != o.period_us || old->second.shift_us != o.shift_us) ++o.version;
    }
    offsets.push_back(o);
    std::string links;
    if (shares != nullptr) {
      auto it = shares->links().find(s.job());
      if (it != shares->links().end()) links = it->second.SerializeAsString();
    }
    placements.push_back({s.job(), req.candidate(), req.ranking_id(), links, now});
  }
  for (const v1::LinkResult& l : chosen->links()) samples.push_back({l.id(), now, l.score(), 1 - l.score(), "commit"});
  // The committed jobs' profiles and links' capacities as the request gave
  // them (rankings stored before they were kept have none).
  std::set<std::string> committed_jobs, loaded_links;
  for (const StoredOffset& o : offsets) committed_jobs.insert(o.job);
  if (shares != nullptr) {
    for (const auto& [job, job_shares] : shares->links()) {
      for (const auto& [link, share] : job_shares.shares()) loaded_links.insert(link);
    }
  }
  CommittedInputs inputs;
  for (const v1::Job& job : candidates.jobs()) {
    if (job.has_profile() && committed_jobs.contains(job.id())) {
      inputs.profiles[job.id()] = job.profile().SerializeAsString();
    }
  }
  for (const v1::Link& link : candidates.links()) {
    if (loaded_links.contains(link.id())) inputs.capacities_gbps[link.id()] = link.capacity_gbps();
  }
  if (absl::Status s = store_->Commit(placements, offsets, samples, inputs); !s.ok()) {
    spdlog::error("phasord: commit of '{}' failed: {}", req.candidate(), std::string(s.message()));
    return ReplyError(routing, env.type, protocol::MakeError(v1::Error::INTERNAL, std::string(s.message()), id));
  }
  v1::CommitReply reply;
  reply.set_request_id(id);
  for (const StoredOffset& o : offsets) {
    if (offsets_.count(o.job) == 0) ++placements_;
    offsets_[o.job] = o;
    Publish(o);
    *reply.add_offsets() = ToUpdate(o);
  }
  for (const LinkScoreSample& s : samples) {
    metrics_.Set("phasord_link_score", {{"link", s.link}, {"source", s.source}}, s.score);
    metrics_.Set("phasord_link_excess", {{"link", s.link}, {"source", s.source}}, s.excess);
  }
  metrics_.Set("phasord_jobs", {}, static_cast<double>(offsets_.size()));
  spdlog::info("phasord: committed candidate '{}' of ranking {} ({} jobs)", req.candidate(), req.ranking_id(),
               offsets.size());
  Reply(routing, MessageType::kCommitReply, reply);
}

void Daemon::Impl::OnGetOffset(const std::vector<std::string>& routing, const protocol::Envelope& env) {
  v1::GetOffset req;
  if (auto error = protocol::ParsePayload(env, req)) return ReplyError(routing, env.type, *error);
  if (req.job().empty()) {
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::INVALID_ARGUMENT, "job: must not be empty", req.request_id()));
  }
  auto it = offsets_.find(req.job());
  if (it == offsets_.end()) {
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::NOT_FOUND,
                                          absl::StrCat("job: no offset for job '", req.job(), "'"),
                                          req.request_id()));
  }
  v1::OffsetUpdate reply = ToUpdate(it->second);
  reply.set_request_id(req.request_id());
  Reply(routing, MessageType::kOffsetUpdate, reply);
}

void Daemon::Impl::OnHealth(const std::vector<std::string>& routing, const protocol::Envelope& env) {
  v1::Health req;
  if (auto error = protocol::ParsePayload(env, req)) return ReplyError(routing, env.type, *error);
  v1::HealthReply reply;
  reply.set_request_id(req.request_id());
  for (const std::string& v : protocol::SupportedVersions()) reply.add_versions(v);
  reply.set_epoch_us(epoch_us_);
  reply.set_jobs(offsets_.size());
  reply.set_placements(placements_);
  reply.set_uptime_seconds(static_cast<double>(clock_() - started_us_) / 1e6);
  Reply(routing, MessageType::kHealthReply, reply);
}

void Daemon::Impl::OnGetSnapshot(const std::vector<std::string>& routing, const protocol::Envelope& env) {
  v1::GetSnapshot req;
  if (auto error = protocol::ParsePayload(env, req)) return ReplyError(routing, env.type, *error);
  const uint64_t id = req.request_id();
  absl::StatusOr<std::vector<StoredPlacement>> placements = store_->LoadPlacements();
  if (!placements.ok()) {
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::INTERNAL, std::string(placements.status().message()), id));
  }
  v1::Snapshot reply;
  reply.set_request_id(id);
  reply.set_epoch_us(epoch_us_);
  v1::RankRequest& placement = *reply.mutable_placement();
  v1::Candidate& committed = *placement.add_candidates();
  committed.set_id("committed");
  std::set<std::string> links;
  for (const StoredPlacement& p : *placements) {
    v1::LinkShares shares;
    if (!shares.ParseFromString(p.links)) {
      return ReplyError(routing, env.type,
                        protocol::MakeError(v1::Error::INTERNAL,
                                            absl::StrCat("stored placement of job '", p.job, "' does not parse"), id));
    }
    std::optional<placer::TrafficProfile> profile;
    if (auto it = job_profiles_.find(p.job); it != job_profiles_.end()) {
      profile = protocol::ProfileFromUpdate(it->second);
    } else if (auto r = request_profiles_.find(p.job); r != request_profiles_.end()) {
      profile = r->second;
    }
    if (!profile) {
      reply.add_jobs_without_profile(p.job);
      continue;
    }
    v1::Job& job = *placement.add_jobs();
    job.set_id(p.job);
    *job.mutable_profile() = protocol::ToProto(*profile);
    for (const auto& [link, share] : shares.shares()) links.insert(link);
    (*committed.mutable_links())[p.job] = std::move(shares);
    if (auto o = offsets_.find(p.job); o != offsets_.end()) *reply.add_offsets() = ToUpdate(o->second);
  }
  for (const std::string& link : links) {
    std::optional<double> capacity;
    if (fabric_) {
      if (std::optional<topology::LinkIndex> l = fabric_->FindLink(link)) capacity = fabric_->link(*l).capacity_gbps;
    }
    if (auto it = link_capacity_gbps_.find(link); !capacity && it != link_capacity_gbps_.end()) capacity = it->second;
    if (!capacity) {
      reply.add_links_without_capacity(link);
      for (auto& [job, shares] : *committed.mutable_links()) shares.mutable_shares()->erase(link);
      continue;
    }
    v1::Link& l = *placement.add_links();
    l.set_id(link);
    l.set_capacity_gbps(*capacity);
  }
  Reply(routing, MessageType::kSnapshot, reply);
}

// The jobs leave the committed placement: their rows go, their offsets are
// no longer published (agents keep the last one they got, SPEC section 7).
void Daemon::Impl::OnRelease(const std::vector<std::string>& routing, const protocol::Envelope& env) {
  v1::ReleasePlacement req;
  if (auto error = protocol::ParsePayload(env, req)) return ReplyError(routing, env.type, *error);
  const uint64_t id = req.request_id();
  if (req.jobs().empty()) {
    return ReplyError(routing, env.type, protocol::MakeError(v1::Error::INVALID_ARGUMENT, "jobs: must not be empty", id));
  }
  if (static_cast<uint32_t>(req.jobs_size()) > options_.max_jobs_per_request) {
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::LIMIT_EXCEEDED,
                                          absl::StrCat("jobs: ", req.jobs_size(), " entries exceed the limit of ",
                                                       options_.max_jobs_per_request),
                                          id));
  }
  for (int i = 0; i < req.jobs_size(); ++i) {
    if (req.jobs(i).empty()) {
      return ReplyError(routing, env.type,
                        protocol::MakeError(v1::Error::INVALID_ARGUMENT, absl::StrCat("jobs[", i, "]: must not be empty"), id));
    }
  }
  absl::StatusOr<std::vector<std::string>> released =
      store_->Release(std::vector<std::string>(req.jobs().begin(), req.jobs().end()));
  if (!released.ok()) {
    spdlog::error("phasord: release failed: {}", std::string(released.status().message()));
    return ReplyError(routing, env.type,
                      protocol::MakeError(v1::Error::INTERNAL, std::string(released.status().message()), id));
  }
  v1::ReleaseReply reply;
  reply.set_request_id(id);
  for (const std::string& job : *released) {
    if (offsets_.erase(job) > 0 && placements_ > 0) --placements_;
    request_profiles_.erase(job);
    last_realign_us_.erase(job);
    reply.add_released(job);
  }
  metrics_.Increment("phasord_released_total", {}, static_cast<double>(released->size()));
  metrics_.Set("phasord_jobs", {}, static_cast<double>(offsets_.size()));
  spdlog::info("phasord: released {} of {} named jobs", released->size(), req.jobs_size());
  Reply(routing, MessageType::kReleaseReply, reply);
}

void Daemon::Impl::HandleProfile(std::vector<zmq::message_t>& frames) {
  std::vector<std::string> body;
  for (zmq::message_t& f : frames) body.push_back(f.to_string());
  auto decoded = protocol::DecodeFrames(body, framing_);
  const std::vector<std::string> no_reply;
  if (const v1::Error* error = std::get_if<v1::Error>(&decoded)) {
    std::optional<MessageType> type;
    if (body.size() >= 2) type = protocol::MessageTypeFromName(body[1]);
    spdlog::warn("phasord: profile socket: {}", error->message());
    return ReplyError(no_reply, type, *error);
  }
  const protocol::Envelope& env = std::get<protocol::Envelope>(decoded);
  metrics_.Increment("phasord_requests_total", {{"type", TypeLabel(env.type)}});
  auto reject = [&](v1::Error::Code code, const std::string& message) {
    spdlog::warn("phasord: profile socket: {}", message);
    ReplyError(no_reply, env.type, protocol::MakeError(code, message));
  };
  if (env.type != MessageType::kProfileUpdate) {
    return reject(v1::Error::UNKNOWN_TYPE,
                  absl::StrCat("frame 1: '", std::string(protocol::MessageTypeName(env.type)),
                               "' is not accepted on the profile socket"));
  }
  v1::ProfileUpdate update;
  if (auto error = protocol::ParsePayload(env, update)) return reject(error->code(), error->message());
  if (update.subject().empty()) return reject(v1::Error::INVALID_ARGUMENT, "subject: must not be empty");
  if (!(update.confidence() >= 0 && update.confidence() <= 1)) {
    return reject(v1::Error::INVALID_ARGUMENT, absl::StrCat("confidence: ", update.confidence(), " is not in 0..1"));
  }
  const placer::TrafficProfile profile = protocol::ProfileFromUpdate(update);
  if (absl::Status s = placer::ValidateProfile(profile); !s.ok()) {
    return reject(v1::Error::INVALID_ARGUMENT,
                  absl::StrCat("profile of '", update.subject(), "': ", std::string(s.message())));
  }
  if (update.confidence() < options_.min_profile_confidence) {
    metrics_.Increment("phasord_profiles_ignored_total", {{"reason", "low_confidence"}});
    return;
  }
  const int64_t now = clock_();
  if (absl::Status s = store_->PutProfile({update.kind(), update.subject(), update.SerializeAsString(), now}); !s.ok()) {
    spdlog::error("phasord: cannot store profile of '{}': {}", update.subject(), std::string(s.message()));
    return;
  }
  if (update.kind() == v1::ProfileUpdate::JOB) {
    metrics_.Increment("phasord_profiles_total", {{"kind", "job"}});
    job_profiles_[update.subject()] = update;
    if (update.has_t0_epoch_us()) MaybeRealign(update.subject(), update.t0_epoch_us());
  } else {
    metrics_.Increment("phasord_profiles_total", {{"kind", "link"}});
    ScoreLinkProfile(update.subject(), profile);
  }
}

void Daemon::Impl::MaybeRealign(const std::string& job, int64_t t0_epoch_us) {
  auto it = offsets_.find(job);
  if (it == offsets_.end() || it->second.period_us == 0) return;
  const StoredOffset& o = it->second;
  const int64_t period = o.period_us;
  int64_t error = (t0_epoch_us - o.origin_epoch_us - o.shift_us) % period;
  if (error < 0) error += period;
  if (error > period / 2) error -= period;
  metrics_.Set("phasord_phase_error_us", {{"job", job}}, static_cast<double>(error));
  if (std::llabs(error) <= static_cast<int64_t>(options_.realign_threshold_us)) return;
  const int64_t now = clock_();
  auto last = last_realign_us_.find(job);
  if (last != last_realign_us_.end() &&
      now - last->second < static_cast<int64_t>(options_.realign_min_interval_ms) * 1000) {
    return;
  }
  last_realign_us_[job] = now;
  metrics_.Increment("phasord_realignments_total", {{"job", job}});
  spdlog::info("phasord: job '{}' is {} us off its slot: re-sending its offset", job, error);
  Publish(o);
}

void Daemon::Impl::ScoreLinkProfile(const std::string& link, const placer::TrafficProfile& profile) {
  auto cap = link_capacity_gbps_.find(link);
  if (cap == link_capacity_gbps_.end() || cap->second <= 0) return;
  double excess = 0;
  for (const placer::DemandSegment& seg : placer::Segments(profile)) {
    excess += std::max(0.0, seg.gbps - cap->second) * (seg.end_us - seg.begin_us);
  }
  const double ratio = excess / (static_cast<double>(profile.period_us) * cap->second);
  const LinkScoreSample sample{link, clock_(), 1 - ratio, ratio, "probe"};
  if (absl::Status s = store_->AddLinkScore(sample); !s.ok()) {
    spdlog::error("phasord: cannot store link score of '{}': {}", link, std::string(s.message()));
  }
  metrics_.Set("phasord_link_score", {{"link", link}, {"source", "probe"}}, sample.score);
  metrics_.Set("phasord_link_excess", {{"link", link}, {"source", "probe"}}, sample.excess);
}

// Server-form candidates become link shares by the ring traffic model over the
// configured fabric (the semantics of `phasor rank --topology`); without a
// fabric Rank() rejects them itself.
void Daemon::Impl::RouteCandidates(placer::RankRequest& request,
                                   std::vector<placer::RejectedCandidate>& unrouted) const {
  if (fabric_router_) placer::RouteCandidates(*fabric_, *fabric_router_, request, unrouted);
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

}  // namespace phasor::daemon
