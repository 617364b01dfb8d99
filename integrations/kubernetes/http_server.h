// The extender's HTTP side (cpp-httplib): kube-scheduler POSTs JSON to
// <url_prefix>/filter, /prioritize and, with the extender's bind_verb,
// /bind (extender_types.h); GET /healthz answers "ok" and GET /metrics the
// extender's counters (Prometheus text).
//
// Who may call it. By default it listens on loopback only (127.0.0.1: the
// extender runs beside kube-scheduler, in its pod). To listen anywhere else
// it needs TLS with client certificates: tls_cert_file and tls_key_file (its
// own certificate) and tls_client_ca_file (the CA the scheduler's client
// certificate must chain to; a client without one is refused in the
// handshake). Start() refuses a non-loopback host without the three.
//
// A body that is not the verb's JSON gets HTTP 400 with a one-line message
// naming the field; a body above max_body_bytes gets 413 whatever its
// transfer encoding (Content-Length, chunked, compressed: http/bounded_body.h;
// a request holds at most max_body_bytes of it); a wrong path 404, a body
// sent to a GET path 405. Reading a request, and writing a reply, is bounded
// by the scheduler's httpTimeout (io_timeout_ms). The server never lets an
// exception out of a handler.
//
// Start() binds and serves on its own threads; Stop() (or the destructor)
// stops them. The Extender must outlive the server.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_HTTP_SERVER_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "http/server_thread.h"
#include "integrations/kubernetes/extender.h"

namespace httplib {
class Server;
}

namespace phasor::kubernetes {

struct HttpServerOptions {
  // Address and TCP port to listen on (default 127.0.0.1:8888: beside
  // kube-scheduler). Port 0 picks a free one (port() says which).
  std::string host = "127.0.0.1";
  int port = 8888;
  // TLS with client certificates (PEM files): required to listen on an
  // address that is not loopback; all three or none.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // The urlPrefix of the scheduler's extender config, path part (default
  // "/phasor"; a trailing '/' is ignored, as the scheduler trims it).
  std::string url_prefix = "/phasor";
  // Largest request body accepted (default 32 MiB: 1,000 full Node objects
  // are about 5 MiB).
  size_t max_body_bytes = 32u << 20;
  // Threads serving requests (default 4).
  int threads = 4;
  // Reading one request and writing one reply may take this long (default
  // 1 s: the scheduler's httpTimeout, ExtenderOptions::http_timeout_ms).
  int io_timeout_ms = 1000;
};

// True for 127.0.0.0/8, ::1 and localhost.
bool IsLoopbackHost(const std::string& host);

// InvalidArgument naming the key: the port, threads, body limit, the TLS
// files (all three or none), a host other than loopback without TLS.
absl::Status ValidateHttpServerOptions(const HttpServerOptions& options);

class ExtenderHttpServer {
 public:
  // InvalidArgument for bad options or TLS files that do not load (naming
  // the file); Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<ExtenderHttpServer>> Start(Extender* extender, HttpServerOptions options);
  ~ExtenderHttpServer();
  void Stop();
  // The port served (the one picked when options.port was 0).
  int port() const { return port_; }
  bool tls() const { return tls_; }
  // Bad requests answered with 400 so far.
  uint64_t bad_requests() const { return bad_requests_; }

 private:
  ExtenderHttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  http::ServerThread thread_;
  int port_ = 0;
  bool tls_ = false;
  std::atomic<uint64_t> bad_requests_{0};
};

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_HTTP_SERVER_H_
