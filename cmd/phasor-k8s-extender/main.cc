// phasor-k8s-extender: the kube-scheduler extender that places whole
// training jobs through phasord (docs/kubernetes.md). Runs in the
// foreground, logging to stderr; SIGTERM or SIGINT stops it cleanly.
//
//   phasor-k8s-extender --config /etc/phasor/extender.yaml
//   phasor-k8s-extender --phasord ipc:///run/phasor/requests --topology fabric.yaml --listen 127.0.0.1:8888
#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "httplib.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "integrations/kubernetes/api_binder.h"
#include "integrations/kubernetes/extender.h"
#include "integrations/kubernetes/extender_config.h"
#include "integrations/kubernetes/http_server.h"
#include "integrations/kubernetes/pod_watcher.h"
#include "spdlog/spdlog.h"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnSignal(int) { g_stop = true; }

int Fail(const absl::Status& s, int code = 2) {
  std::cerr << "phasor-k8s-extender: " << s.message() << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  namespace k8s = phasor::kubernetes;
  CLI::App app{"phasor-k8s-extender: a kube-scheduler extender placing whole training jobs through phasord "
               "(see docs/kubernetes.md)"};
  std::string config_path, listen, phasord, topology, api_server, log_level, models_dir, ready_file;
  bool filter_to_plan = false;
  app.add_option("--config,-c", config_path, "YAML config file (keys and defaults: docs/kubernetes.md)");
  app.add_option("--listen", listen,
                 "host:port to serve on (config key listen; default 127.0.0.1:8888; port 0 picks one; not "
                 "loopback needs TLS with client certificates)");
  app.add_option("--phasord", phasord, "phasord's request endpoint (config key phasord_endpoint)");
  app.add_option("--topology", topology, "the fabric's topology YAML (config key topology_path)");
  app.add_option("--api-server", api_server, "the API server to watch pods on (config key api_server)");
  app.add_option("--models-dir", models_dir, "model catalogue folder (config key models_dir)");
  app.add_flag("--filter-to-plan", filter_to_plan, "filter drops nodes outside a job's plan");
  app.add_option("--log-level", log_level, "override the config's log_level");
  app.add_option("--ready-file", ready_file, "once serving, write {\"listen\": \"host:port\"} here");
  std::string check;
  app.add_option("--check", check,
                 "GET this http:// URL (the extender's /healthz on loopback) and exit 0 when it answers 200: "
                 "the container's probe");
  app.set_version_flag("--version", "phasor-k8s-extender 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!check.empty()) {
    httplib::Client probe(check.substr(0, check.find('/', check.find("//") + 2)));
    probe.set_connection_timeout(1, 0);
    probe.set_read_timeout(1, 0);
    const size_t path_at = check.find('/', check.find("//") + 2);
    httplib::Result r = probe.Get(path_at == std::string::npos ? "/" : check.substr(path_at));
    if (r && r->status == 200) return 0;
    std::cerr << "phasor-k8s-extender: " << check << ": "
              << (r ? absl::StrCat("answered ", r->status) : httplib::to_string(r.error())) << "\n";
    return 1;
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  absl::StatusOr<k8s::ExtenderConfig> config =
      config_path.empty() ? k8s::ParseExtenderConfig("") : k8s::LoadExtenderConfig(config_path);
  if (!config.ok()) return Fail(config.status());
  if (!listen.empty()) {
    const size_t colon = listen.rfind(':');
    int port = -1;
    if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--listen: '", listen, "' is not host:port")));
    }
    config->http.host = listen.substr(0, colon);
    config->http.port = port;
  }
  if (!phasord.empty()) config->extender.phasord_endpoint = phasord;
  if (!topology.empty()) config->extender.topology_path = topology;
  if (!api_server.empty()) config->api_server.url = api_server;
  config->watch.api = config->api_server;
  if (!models_dir.empty()) config->extender.models_dir = models_dir;
  if (filter_to_plan) config->extender.filter_to_plan = true;
  if (!log_level.empty()) config->log_level = log_level;
  if (absl::Status s = k8s::ValidateExtenderConfig(*config); !s.ok()) return Fail(s);
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  if (absl::Status s = k8s::LoadCurveKeys(*config); !s.ok()) return Fail(s);

  k8s::BindFunction binder;
  if (config->extender.bind_verb) {
    absl::StatusOr<k8s::BindFunction> b = k8s::MakeApiServerBinder(config->api_server);
    if (!b.ok()) return Fail(b.status());
    binder = *std::move(b);
  }
  absl::StatusOr<std::unique_ptr<k8s::Extender>> extender = k8s::Extender::Create(config->extender, binder);
  if (!extender.ok()) return Fail(extender.status());
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<std::unique_ptr<k8s::ExtenderHttpServer>> server =
      k8s::ExtenderHttpServer::Start(extender->get(), config->http);
  if (!server.ok()) return Fail(server.status(), absl::IsInvalidArgument(server.status()) ? 2 : 1);
  std::unique_ptr<k8s::PodWatcher> watcher;
  if (config->watch_pods) {
    absl::StatusOr<std::unique_ptr<k8s::PodWatcher>> w =
        k8s::PodWatcher::Start(config->watch, k8s::ExtenderSink(**extender));
    if (!w.ok()) return Fail(w.status());
    watcher = *std::move(w);
  }
  const std::string served = absl::StrCat(config->http.host, ":", (*server)->port());
  spdlog::info("phasor-k8s-extender: serving {}{} ({}; bind verb {}; phasord {}, fabric {} with {} servers; {})", served,
               config->http.url_prefix, (*server)->tls() ? "TLS, client certificates required" : "loopback, plain",
               config->extender.bind_verb ? "on" : "off", config->extender.phasord_endpoint,
               config->extender.topology_path, (*extender)->fabric().num_servers(),
               config->watch_pods ? absl::StrCat("watching the pods of scheduler ", config->watch.scheduler_name, " on ",
                                                 config->api_server.url)
                                  : std::string("not watching pods: jobs are not released"));
  if (!ready_file.empty()) {
    std::ofstream(ready_file) << "{\"listen\": \"" << served << "\"}\n";
  }
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  spdlog::info("phasor-k8s-extender: stopping");
  if (watcher) watcher->Stop();
  (*server)->Stop();
  return 0;
}
