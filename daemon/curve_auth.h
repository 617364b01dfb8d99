// CURVE authentication of phasord's sockets (SPEC section 9): the server's
// key pair, and a ZAP handler thread that admits the allow-listed client
// public keys and refuses (logs and counts) every other. Start it before any
// CURVE socket binds; Secure() makes a socket a CURVE server.
//
// Thread safety: Secure() from the thread that owns the socket; the ZAP
// thread runs until the authenticator is destroyed (before its context).
#ifndef PHASOR_DAEMON_CURVE_AUTH_H_
#define PHASOR_DAEMON_CURVE_AUTH_H_

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/metrics.h"
#include "zmq.hpp"

namespace phasor::daemon {

class CurveAuthenticator {
 public:
  // Reads the key files and the allow-list and starts the ZAP handler on
  // `context`. InvalidArgument naming the config key of a bad file;
  // Unavailable when libzmq has no CURVE.
  static absl::StatusOr<std::unique_ptr<CurveAuthenticator>> Start(zmq::context_t& context,
                                                                   const CurveOptions& options, Metrics* metrics);
  ~CurveAuthenticator();
  CurveAuthenticator(const CurveAuthenticator&) = delete;
  CurveAuthenticator& operator=(const CurveAuthenticator&) = delete;

  // Makes `socket` a CURVE server in phasord's ZAP domain (before bind).
  void Secure(zmq::socket_t& socket) const;

 private:
  CurveAuthenticator(std::string secret, std::set<std::string> allowed, Metrics* metrics)
      : secret_(std::move(secret)), allowed_(std::move(allowed)), metrics_(metrics) {}
  void Serve(zmq::socket_t& zap);

  std::string secret_;
  std::set<std::string> allowed_;
  Metrics* metrics_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_CURVE_AUTH_H_
