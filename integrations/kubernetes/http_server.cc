#include "integrations/kubernetes/http_server.h"

#include <exception>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "http/bounded_body.h"
#include "httplib.h"
#include "spdlog/spdlog.h"

namespace phasor::kubernetes {
namespace {

// filter and prioritize are written straight to text (their 1,000-node
// replies), bind through the JSON tree.
std::string ReplyText(const HostPriorityList& r) { return ToJsonText(r); }
std::string ReplyText(const ExtenderFilterResult& r) { return ToJsonText(r); }
std::string ReplyText(const ExtenderBindingResult& r) { return ToJson(r).dump(); }

// An SSLServer that verifies its clients: TLS 1.2 or later, the server's
// certificate and key, and client certificates required and checked against
// the CA file. `error` names the file that did not load.
std::unique_ptr<httplib::Server> MakeTlsServer(const HttpServerOptions& o, std::string& error) {
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) -> bool {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, o.tls_cert_file.c_str()) != 1) {
      error = absl::StrCat("tls_cert_file: cannot load '", o.tls_cert_file, "' (a PEM certificate chain)");
      return false;
    }
    ERR_clear_error();
    if (SSL_CTX_use_PrivateKey_file(&ctx, o.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      // OpenSSL 3 checks the key against the certificate as it loads it.
      const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
      error = mismatch ? absl::StrCat("tls_key_file: '", o.tls_key_file, "' is not the key of tls_cert_file")
                       : absl::StrCat("tls_key_file: cannot load '", o.tls_key_file, "' (a PEM private key)");
      return false;
    }
    if (SSL_CTX_check_private_key(&ctx) != 1) {
      error = absl::StrCat("tls_key_file: '", o.tls_key_file, "' is not the key of tls_cert_file");
      return false;
    }
    if (SSL_CTX_load_verify_locations(&ctx, o.tls_client_ca_file.c_str(), nullptr) != 1) {
      error = absl::StrCat("tls_client_ca_file: cannot load '", o.tls_client_ca_file, "' (PEM CA certificates)");
      return false;
    }
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.tls_client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(&ctx, names);  // tells clients which CA to present a certificate of
    }
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    return true;
  });
  if (!server->is_valid() && error.empty()) error = "tls: cannot set up the TLS context";
  return server;
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  if (!absl::StartsWith(host, "127.")) return false;
  int parts = 0;
  for (absl::string_view p : absl::StrSplit(host, '.')) {
    int v = 0;
    if (!absl::SimpleAtoi(p, &v) || v < 0 || v > 255) return false;
    ++parts;
  }
  return parts == 4;
}

absl::Status ValidateHttpServerOptions(const HttpServerOptions& o) {
  if (o.port < 0 || o.port > 65535) return absl::InvalidArgumentError("listen: port must be in 0..65535");
  if (o.threads < 1) return absl::InvalidArgumentError("http_threads: must be >= 1");
  if (o.max_body_bytes < 1024) return absl::InvalidArgumentError("max_body_bytes: must be >= 1024");
  if (o.io_timeout_ms < 1) return absl::InvalidArgumentError("http_timeout_ms: must be > 0");
  const int tls_files = !o.tls_cert_file.empty() + !o.tls_key_file.empty() + !o.tls_client_ca_file.empty();
  if (tls_files != 0 && tls_files != 3) {
    return absl::InvalidArgumentError(
        "tls_cert_file, tls_key_file, tls_client_ca_file: all three or none (TLS here always checks the "
        "scheduler's client certificate)");
  }
  if (tls_files == 0 && !IsLoopbackHost(o.host)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "listen: '", o.host,
        "' is not loopback: anyone who reaches it could call the extender; listen on 127.0.0.1 beside "
        "kube-scheduler, or set tls_cert_file, tls_key_file and tls_client_ca_file (TLS with client "
        "certificates)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ExtenderHttpServer>> ExtenderHttpServer::Start(Extender* extender,
                                                                              HttpServerOptions options) {
  if (absl::Status s = ValidateHttpServerOptions(options); !s.ok()) return s;
  std::string prefix = options.url_prefix;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty() && prefix.front() != '/') prefix.insert(prefix.begin(), '/');

  std::unique_ptr<ExtenderHttpServer> self(new ExtenderHttpServer());
  if (!options.tls_cert_file.empty()) {
    std::string error;
    self->server_ = MakeTlsServer(options, error);
    if (!error.empty()) return absl::InvalidArgumentError(error);
    self->tls_ = true;
  } else {
    self->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& server = *self->server_;
  const int threads = options.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // Reading a request and writing its reply within the scheduler's timeout.
  const int io = options.io_timeout_ms;
  server.set_read_timeout(io / 1000, (io % 1000) * 1000);
  server.set_write_timeout(io / 1000, (io % 1000) * 1000);
  // Replies go out in one piece without waiting for a delayed ACK (Nagle);
  // kube-scheduler's Go client sets TCP_NODELAY on its side too.
  server.set_tcp_nodelay(true);
  ExtenderHttpServer* raw = self.get();

  // Runs one verb: parse, decide, answer; a parse error is a 400.
  auto verb = [raw](auto parse, auto decide) {
    return [raw, parse, decide](const httplib::Request&, const std::string& body, httplib::Response& res) {
      try {
        auto args = parse(body);
        if (!args.ok()) {
          ++raw->bad_requests_;
          res.status = 400;
          res.set_content(std::string(args.status().message()) + "\n", "text/plain");
          return;
        }
        res.set_content(ReplyText(decide(*args)), "application/json");
      } catch (const std::exception& e) {
        res.status = 500;
        res.set_content(absl::StrCat("internal error: ", e.what(), "\n"), "text/plain");
      }
    };
  };
  const http::BodyLimit limit{options.max_body_bytes, io, io};
  std::set<std::string> posts = {prefix + "/filter", prefix + "/prioritize"};
  http::PostBounded(server, prefix + "/filter", limit,
                    verb(ParseExtenderArgs, [extender](const ExtenderArgs& a) { return extender->Filter(a); }));
  http::PostBounded(server, prefix + "/prioritize", limit,
                    verb(ParseExtenderArgs, [extender](const ExtenderArgs& a) { return extender->Prioritize(a); }));
  if (extender->options().bind_verb) {
    posts.insert(prefix + "/bind");
    http::PostBounded(server, prefix + "/bind", limit,
                      verb(ParseExtenderBindingArgs,
                           [extender](const ExtenderBindingArgs& a) { return extender->Bind(a); }));
  }
  // Anything else that carries a body is answered before it is read.
  http::GuardBodies(server, posts);
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server.Get("/metrics", [extender, raw](const httplib::Request&, httplib::Response& res) {
    res.set_content(extender->MetricsText() +
                        absl::StrCat("# HELP phasor_k8s_bad_requests_total Requests answered 400.\n",
                                     "# TYPE phasor_k8s_bad_requests_total counter\n",
                                     "phasor_k8s_bad_requests_total ", raw->bad_requests_.load(), "\n"),
                    "text/plain; version=0.0.4");
  });
  std::string host = options.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const int bound = options.port == 0 ? server.bind_to_any_port(host)
                                      : (server.bind_to_port(host, options.port) ? options.port : -1);
  if (bound < 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", options.host, ":", options.port));
  self->port_ = bound;
  self->thread_.Start(self->server_.get());
  return self;
}

ExtenderHttpServer::~ExtenderHttpServer() { Stop(); }

void ExtenderHttpServer::Stop() { thread_.Stop(); }

}  // namespace phasor::kubernetes
