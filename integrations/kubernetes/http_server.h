// The extender's HTTP side (cpp-httplib): kube-scheduler POSTs JSON to
// <url_prefix>/filter, /prioritize and /bind (extender_types.h); GET /healthz
// answers "ok" and GET /metrics the extender's counters (Prometheus text).
//
// A body that is not the verb's JSON gets HTTP 400 with a one-line message
// naming the field; a body above max_body_bytes gets 413 (cpp-httplib); a
// wrong path 404. The server never lets an exception out of a handler.
//
// Start() binds and serves on its own threads; Stop() (or the destructor)
// stops them. The Extender must outlive the server.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_HTTP_SERVER_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "integrations/kubernetes/extender.h"

namespace httplib {
class Server;
}

namespace phasor::kubernetes {

struct HttpServerOptions {
  // Address and TCP port to listen on (default 0.0.0.0:8888).
  std::string host = "0.0.0.0";
  int port = 8888;
  // The urlPrefix of the scheduler's extender config, path part (default
  // "/phasor"; a trailing '/' is ignored, as the scheduler trims it).
  std::string url_prefix = "/phasor";
  // Largest request body accepted (default 32 MiB: 1,000 full Node objects
  // are about 5 MiB).
  size_t max_body_bytes = 32u << 20;
  // Threads serving requests (default 4).
  int threads = 4;
};

class ExtenderHttpServer {
 public:
  // InvalidArgument for bad options; Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<ExtenderHttpServer>> Start(Extender* extender, HttpServerOptions options);
  ~ExtenderHttpServer();
  void Stop();
  // Bad requests answered with 400 so far.
  uint64_t bad_requests() const { return bad_requests_; }

 private:
  ExtenderHttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::atomic<bool> listen_returned_{false};
  std::thread thread_;
  std::atomic<uint64_t> bad_requests_{0};
};

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_HTTP_SERVER_H_
