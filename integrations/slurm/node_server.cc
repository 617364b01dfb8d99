#include "integrations/slurm/node_server.h"

#include <zmq.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "integrations/client/client.h"
#include "integrations/slurm/hook_client.h"
#include "integrations/slurm/hook_server.h"
#include "protocol/curve_keys.h"
#include "protocol/endpoint.h"
#include "spdlog/spdlog.h"
#include "zmq_addon.hpp"

namespace phasor::slurm {
namespace {

constexpr const char* kVersion = "phasor.slurm.v1";
constexpr const char* kZap = "inproc://zeromq.zap.01";
constexpr const char* kResults = "inproc://phasor-slurm-node-results";
// How long AskController waits for the connection (and its CURVE handshake).
constexpr int64_t kConnectBudgetMs = 500;

std::string Busy() { return "ok=0\nreason=controller:%20too%20many%20requests%20waiting\n"; }

}  // namespace

absl::StatusOr<std::unique_ptr<NodeServer>> NodeServer::Start(const NodeServerOptions& o, SlurmController* controller) {
  if (o.endpoint.empty()) return absl::InvalidArgumentError("node_endpoint: required");
  if (o.threads == 0) return absl::InvalidArgumentError("node_threads: must be at least 1");
  std::unique_ptr<NodeServer> s(new NodeServer(controller));
  const int keys = !o.secret_key_file.empty() + !o.public_key_file.empty() + !o.allowed_clients_file.empty();
  if (keys != 0 && keys != 3) {
    return absl::InvalidArgumentError(
        "node_secret_key_file, node_public_key_file and node_allowed_clients_file: give all three, or none");
  }
  if (keys == 0) {
    if (absl::Status st = protocol::CheckPlainEndpoint("node_endpoint", o.endpoint, "give the CURVE key files");
        !st.ok()) {
      return st;
    }
  } else {
    if (absl::Status st = protocol::CheckEndpoint("node_endpoint", o.endpoint); !st.ok()) return st;
    absl::StatusOr<protocol::CurveKeyPair> pair = protocol::LoadCurveServerKeys(
        o.secret_key_file, o.public_key_file, "node_secret_key_file", "node_public_key_file");
    if (!pair.ok()) return pair.status();
    absl::StatusOr<std::set<std::string>> allowed = protocol::ReadAllowList(o.allowed_clients_file);
    if (!allowed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("node_allowed_clients_file: ", allowed.status().message()));
    }
    if (!zmq_has("curve")) return absl::UnavailableError("node_endpoint: this libzmq has no CURVE support");
    s->curve_secret_ = pair->secret_key;
    s->allowed_ = *std::move(allowed);
  }
  try {
    if (!s->curve_secret_.empty()) {
      // The ZAP handler is bound before the CURVE socket.
      zmq::socket_t zap(s->context_, zmq::socket_type::rep);
      zap.set(zmq::sockopt::linger, 0);
      zap.bind(kZap);
      s->threads_.emplace_back([srv = s.get(), z = std::move(zap)]() mutable { srv->ServeZap(std::move(z)); });
    }
    zmq::socket_t router(s->context_, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    if (!s->curve_secret_.empty()) {
      router.set(zmq::sockopt::curve_server, 1);
      router.set(zmq::sockopt::curve_secretkey, s->curve_secret_);
      router.set(zmq::sockopt::zap_domain, "phasor-slurm");
    }
    router.bind(o.endpoint);
    s->endpoint_ = router.get(zmq::sockopt::last_endpoint);
    zmq::socket_t results(s->context_, zmq::socket_type::pull);
    results.set(zmq::sockopt::linger, 0);
    results.bind(kResults);
    s->threads_.emplace_back([srv = s.get(), r = std::move(router), p = std::move(results)]() mutable {
      srv->ServeSocket(std::move(r), std::move(p));
    });
  } catch (const zmq::error_t& e) {
    s->stop_ = true;
    for (std::thread& t : s->threads_) t.join();
    s->threads_.clear();
    return absl::UnavailableError(absl::StrCat("node_endpoint: cannot bind '", o.endpoint, "': ", e.what()));
  }
  for (uint32_t i = 0; i < o.threads; ++i) s->threads_.emplace_back([srv = s.get(), i] { srv->Work(static_cast<int>(i)); });
  spdlog::info("phasor slurm: nodes reach the controller at {}{}", s->endpoint_,
               s->curve_secret_.empty() ? " (plain)" : " (CURVE)");
  return s;
}

NodeServer::~NodeServer() {
  stop_ = true;
  ready_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void NodeServer::ServeZap(zmq::socket_t zap) {
  while (!stop_) {
    zmq::pollitem_t item{zap.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
    std::vector<zmq::message_t> req;
    if (!zmq::recv_multipart(zap, std::back_inserter(req), zmq::recv_flags::dontwait)) continue;
    // version, request id, domain, address, identity, mechanism, credentials
    bool ok = false;
    std::string key;
    if (req.size() >= 7 && req[5].to_string() == "CURVE" && req[6].size() == 32) {
      char z85[41] = {};
      zmq_z85_encode(z85, static_cast<const uint8_t*>(req[6].data()), 32);
      key = z85;
      ok = allowed_.contains(key);
    }
    if (!ok) {
      spdlog::warn("phasor slurm: refused a node connection from {} (key '{}' not allowed)",
                   req.size() > 3 ? req[3].to_string() : "?", key);
    }
    const std::string id = req.size() > 1 ? req[1].to_string() : std::string();
    const std::vector<zmq::const_buffer> reply = {zmq::str_buffer("1.0"), zmq::buffer(id),
                                                  zmq::buffer(std::string_view(ok ? "200" : "400")),
                                                  zmq::buffer(std::string_view(ok ? "OK" : "key not allowed")),
                                                  zmq::str_buffer(""), zmq::str_buffer("")};
    zmq::send_multipart(zap, reply);
  }
}

void NodeServer::ServeSocket(zmq::socket_t router, zmq::socket_t results) {
  while (!stop_) {
    zmq::pollitem_t items[] = {{router.handle(), 0, ZMQ_POLLIN, 0}, {results.handle(), 0, ZMQ_POLLIN, 0}};
    if (zmq::poll(items, 2, std::chrono::milliseconds(100)) <= 0) continue;
    if (items[0].revents & ZMQ_POLLIN) {
      std::vector<zmq::message_t> msg;
      if (zmq::recv_multipart(router, std::back_inserter(msg), zmq::recv_flags::dontwait)) {
        // identity, empty delimiter (REQ), version, text
        if (msg.size() == 4 && msg[1].size() == 0 && msg[2].to_string() == kVersion) {
          std::lock_guard<std::mutex> lock(mu_);
          if (queue_.size() < kMaxQueued) {
            queue_.push_back({msg[0].to_string(), msg[3].to_string()});
            ready_.notify_one();
            continue;
          }
        }
        if (!msg.empty()) {
          const std::string reply = msg.size() == 4 && msg[2].to_string() == kVersion
                                        ? Busy()
                                        : "ok=0\nreason=request:%20not%20phasor.slurm.v1\n";
          const std::vector<zmq::const_buffer> out = {zmq::buffer(msg[0].to_string()), zmq::str_buffer(""),
                                                      zmq::buffer(std::string_view(kVersion)), zmq::buffer(reply)};
          zmq::send_multipart(router, out, zmq::send_flags::dontwait);
        }
      }
    }
    if (items[1].revents & ZMQ_POLLIN) {
      std::vector<zmq::message_t> done;
      if (zmq::recv_multipart(results, std::back_inserter(done), zmq::recv_flags::dontwait) && done.size() == 2) {
        const std::vector<zmq::const_buffer> out = {zmq::buffer(done[0].data(), done[0].size()), zmq::str_buffer(""),
                                                    zmq::buffer(std::string_view(kVersion)),
                                                    zmq::buffer(done[1].data(), done[1].size())};
        zmq::send_multipart(router, out, zmq::send_flags::dontwait);
      }
    }
  }
}

void NodeServer::Work(int) {
  zmq::socket_t push(context_, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 0);
  push.connect(kResults);
  while (true) {
    Request r;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      if (queue_.empty()) continue;
      r = std::move(queue_.front());
      queue_.pop_front();
    }
    const std::string reply = AnswerHookRequest(*controller_, r.text, HookAccess::kLifecycle);
    const std::vector<zmq::const_buffer> out = {zmq::buffer(r.identity), zmq::buffer(reply)};
    zmq::send_multipart(push, out);
  }
}

absl::StatusOr<std::string> AskController(const NodeConfig& config, const std::string& request) {
  const int64_t deadline = MonotonicMs() + config.controller_timeout_ms;
  if (absl::StartsWith(config.controller, "unix://")) {
    HookExchange e = AskUnixSocket(config.controller.substr(7), request, deadline);
    if (!e.ok) return absl::UnavailableError(e.reply);
    return e.reply;
  }
  zmq::context_t context(1);
  zmq::socket_t socket(context, zmq::socket_type::req);
  socket.set(zmq::sockopt::linger, 0);
  if (!config.controller_public_key_file.empty()) {
    absl::StatusOr<protocol::CurveClientKeys> keys = protocol::LoadCurveClientKeys(
        config.controller_public_key_file, config.client_key_prefix, "controller_public_key_file", "client_key_prefix");
    if (!keys.ok()) return keys.status();
    if (absl::Status s = client::ApplyCurve(socket, *keys); !s.ok()) return s;
  }
  try {
    // Messages go only to a connection that is up: a controller that is down
    // costs the Epilog kConnectBudgetMs, not its whole bound.
    socket.set(zmq::sockopt::immediate, 1);
    socket.connect(config.controller);
    const int64_t connect_by = std::min<int64_t>(deadline, MonotonicMs() + kConnectBudgetMs);
    while (true) {
      const int64_t left = connect_by - MonotonicMs();
      zmq::pollitem_t out{socket.handle(), 0, ZMQ_POLLOUT, 0};
      if (left > 0 && zmq::poll(&out, 1, std::chrono::milliseconds(left)) > 0) break;
      if (MonotonicMs() >= connect_by) {
        return absl::UnavailableError(absl::StrCat("controller at ", config.controller, ": no connection in ",
                                                   std::min<int64_t>(kConnectBudgetMs, config.controller_timeout_ms),
                                                   " ms"));
      }
    }
    const std::string text =
        request + "deadline_us=" + std::to_string(SystemUs() + (deadline - MonotonicMs()) * 1000) + "\n";
    const std::vector<zmq::const_buffer> out = {zmq::buffer(std::string_view(kVersion)), zmq::buffer(text)};
    zmq::send_multipart(socket, out);
    while (true) {
      const int64_t left = deadline - MonotonicMs();
      if (left <= 0) break;
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(left)) <= 0) continue;
      std::vector<zmq::message_t> reply;
      if (!zmq::recv_multipart(socket, std::back_inserter(reply), zmq::recv_flags::dontwait)) continue;
      if (reply.size() != 2 || reply[0].to_string() != kVersion) {
        return absl::UnavailableError(absl::StrCat("controller at ", config.controller, ": malformed reply"));
      }
      return reply[1].to_string();
    }
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat("controller at ", config.controller, ": ", e.what()));
  }
  return absl::UnavailableError(
      absl::StrCat("controller at ", config.controller, ": no answer in ", config.controller_timeout_ms, " ms"));
}

}  // namespace phasor::slurm
