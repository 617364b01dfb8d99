#include "daemon/curve_auth.h"

#include <zmq.h>

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "protocol/curve_keys.h"
#include "spdlog/spdlog.h"
#include "zmq_addon.hpp"

namespace phasor::daemon {

namespace {
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
}  // namespace

absl::StatusOr<std::unique_ptr<CurveAuthenticator>> CurveAuthenticator::Start(zmq::context_t& context,
                                                                              const CurveOptions& c,
                                                                              Metrics* metrics) {
  absl::StatusOr<protocol::CurveKeyPair> keys =
      protocol::LoadCurveServerKeys(c.server_secret_key_file, c.server_public_key_file,
                                    "curve.server_secret_key_file", "curve.server_public_key_file");
  if (!keys.ok()) return keys.status();
  absl::StatusOr<std::set<std::string>> allowed = protocol::ReadAllowList(c.allowed_clients_file);
  if (!allowed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("curve.allowed_clients_file: ", allowed.status().message()));
  }
  if (!zmq_has("curve")) return absl::UnavailableError("curve: this libzmq has no CURVE support");
  std::unique_ptr<CurveAuthenticator> auth(new CurveAuthenticator(keys->secret_key, *std::move(allowed), metrics));
  // The ZAP handler must be bound before any CURVE socket binds.
  zmq::socket_t zap(context, zmq::socket_type::rep);
  zap.set(zmq::sockopt::linger, 0);
  zap.bind(kZapEndpoint);
  auth->thread_ = std::thread([a = auth.get(), s = std::move(zap)]() mutable { a->Serve(s); });
  return auth;
}

CurveAuthenticator::~CurveAuthenticator() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void CurveAuthenticator::Secure(zmq::socket_t& socket) const {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, secret_);
  socket.set(zmq::sockopt::zap_domain, "phasord");
}

void CurveAuthenticator::Serve(zmq::socket_t& zap) {
  while (!stop_) {
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
      if (allowed_.count(client_key) > 0) {
        status = "200";
        text = "OK";
      } else {
        text = "client key not allowed";
      }
    } else if (req.size() >= 6) {
      text = "mechanism " + req[5].to_string() + " refused";
    }
    if (status != "200") {
      metrics_->Increment("phasord_curve_refused_total");
      spdlog::warn("curve: refused client key '{}' from {}: {}", client_key, address, text);
    }
    const std::string id = req.size() > 1 ? req[1].to_string() : std::string();
    const std::vector<zmq::const_buffer> reply = {zmq::str_buffer("1.0"), zmq::buffer(id),
                                                  zmq::buffer(status),     zmq::buffer(text),
                                                  zmq::buffer(client_key), zmq::const_buffer(nullptr, 0)};
    zmq::send_multipart(zap, reply);
  }
}

}  // namespace phasor::daemon
