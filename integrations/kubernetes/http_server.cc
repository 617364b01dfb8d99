#include "integrations/kubernetes/http_server.h"

#include <chrono>
#include <exception>
#include <thread>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "spdlog/spdlog.h"

namespace phasor::kubernetes {
namespace {

// filter and prioritize are written straight to text (their 1,000-node
// replies), bind through the JSON tree.
std::string ReplyText(const HostPriorityList& r) { return ToJsonText(r); }
std::string ReplyText(const ExtenderFilterResult& r) { return ToJsonText(r); }
std::string ReplyText(const ExtenderBindingResult& r) { return ToJson(r).dump(); }

}  // namespace

absl::StatusOr<std::unique_ptr<ExtenderHttpServer>> ExtenderHttpServer::Start(Extender* extender,
                                                                              HttpServerOptions options) {
  if (options.port < 1 || options.port > 65535) return absl::InvalidArgumentError("port: must be in 1..65535");
  if (options.threads < 1) return absl::InvalidArgumentError("threads: must be >= 1");
  if (options.max_body_bytes < 1024) return absl::InvalidArgumentError("max_body_bytes: must be >= 1024");
  std::string prefix = options.url_prefix;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty() && prefix.front() != '/') prefix.insert(prefix.begin(), '/');

  std::unique_ptr<ExtenderHttpServer> self(new ExtenderHttpServer());
  self->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *self->server_;
  const int threads = options.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server.set_payload_max_length(options.max_body_bytes);
  // Replies go out in one piece without waiting for a delayed ACK (Nagle);
  // kube-scheduler's Go client sets TCP_NODELAY on its side too.
  server.set_tcp_nodelay(true);
  ExtenderHttpServer* raw = self.get();

  // Runs one verb: parse, decide, answer; a parse error is a 400.
  auto verb = [raw](auto parse, auto decide) {
    return [raw, parse, decide](const httplib::Request& req, httplib::Response& res) {
      try {
        auto args = parse(req.body);
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
  server.Post(prefix + "/filter",
              verb(ParseExtenderArgs, [extender](const ExtenderArgs& a) { return extender->Filter(a); }));
  server.Post(prefix + "/prioritize",
              verb(ParseExtenderArgs, [extender](const ExtenderArgs& a) { return extender->Prioritize(a); }));
  server.Post(prefix + "/bind",
              verb(ParseExtenderBindingArgs, [extender](const ExtenderBindingArgs& a) { return extender->Bind(a); }));
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server.Get("/metrics", [extender, raw](const httplib::Request&, httplib::Response& res) {
    res.set_content(extender->MetricsText() +
                        absl::StrCat("# HELP phasor_k8s_bad_requests_total Requests answered 400.\n",
                                     "# TYPE phasor_k8s_bad_requests_total counter\n",
                                     "phasor_k8s_bad_requests_total ", raw->bad_requests_.load(), "\n"),
                    "text/plain; version=0.0.4");
  });
  if (!server.bind_to_port(options.host, options.port)) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.host, ":", options.port));
  }
  self->thread_ = std::thread([raw] {
    raw->server_->listen_after_bind();
    raw->listen_returned_ = true;
  });
  return self;
}

ExtenderHttpServer::~ExtenderHttpServer() { Stop(); }

void ExtenderHttpServer::Stop() {
  if (!thread_.joinable()) return;
  // httplib's stop() acts only on a server already listening: one stopped
  // before its thread entered listen would then wait in accept() forever.
  while (!server_->is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->stop();
  thread_.join();
}

}  // namespace phasor::kubernetes
