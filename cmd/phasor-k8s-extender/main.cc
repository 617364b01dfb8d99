// phasor-k8s-extender: the kube-scheduler extender that places whole
// training jobs through phasord (docs/kubernetes.md). Runs in the
// foreground, logging to stderr; SIGTERM or SIGINT stops it cleanly.
//
//   phasor-k8s-extender --config /etc/phasor/extender.yaml
//   phasor-k8s-extender --phasord tcp://phasord:7410 --topology fabric.yaml --listen 0.0.0.0:8888
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "integrations/kubernetes/api_binder.h"
#include "integrations/kubernetes/extender.h"
#include "integrations/kubernetes/extender_config.h"
#include "integrations/kubernetes/http_server.h"
#include "spdlog/spdlog.h"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnSignal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  namespace k8s = phasor::kubernetes;
  CLI::App app{"phasor-k8s-extender: a kube-scheduler extender placing whole training jobs through phasord "
               "(see docs/kubernetes.md)"};
  std::string config_path, listen, phasord, topology, api_server, log_level, models_dir;
  bool filter_to_plan = false;
  app.add_option("--config,-c", config_path, "YAML config file (keys and defaults: docs/kubernetes.md)");
  app.add_option("--listen", listen, "host:port to serve on (config key listen; default 0.0.0.0:8888)");
  app.add_option("--phasord", phasord, "phasord's request endpoint (config key phasord_endpoint)");
  app.add_option("--topology", topology, "the fabric's topology YAML (config key topology_path)");
  app.add_option("--api-server", api_server, "the API server that binds pods (config key api_server)");
  app.add_option("--models-dir", models_dir, "model catalogue folder (config key models_dir)");
  app.add_flag("--filter-to-plan", filter_to_plan, "filter drops nodes outside a job's plan");
  app.add_option("--log-level", log_level, "override the config's log_level");
  app.set_version_flag("--version", "phasor-k8s-extender 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  absl::StatusOr<k8s::ExtenderConfig> config =
      config_path.empty() ? k8s::ParseExtenderConfig("") : k8s::LoadExtenderConfig(config_path);
  if (!config.ok()) {
    std::cerr << "phasor-k8s-extender: " << config.status().message() << "\n";
    return 2;
  }
  if (!listen.empty()) {
    absl::StatusOr<k8s::ExtenderConfig> l = k8s::ParseExtenderConfig("listen: \"" + listen + "\"");
    if (!l.ok()) {
      std::cerr << "phasor-k8s-extender: --" << l.status().message() << "\n";
      return 2;
    }
    config->http.host = l->http.host;
    config->http.port = l->http.port;
  }
  if (!phasord.empty()) config->extender.phasord_endpoint = phasord;
  if (!topology.empty()) config->extender.topology_path = topology;
  if (!api_server.empty()) config->api_server.url = api_server;
  if (!models_dir.empty()) config->extender.models_dir = models_dir;
  if (filter_to_plan) config->extender.filter_to_plan = true;
  if (!log_level.empty()) config->log_level = log_level;
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  if (absl::Status s = k8s::LoadCurveKeys(*config); !s.ok()) {
    std::cerr << "phasor-k8s-extender: " << s.message() << "\n";
    return 2;
  }

  absl::StatusOr<k8s::BindFunction> binder = k8s::MakeApiServerBinder(config->api_server);
  if (!binder.ok()) {
    std::cerr << "phasor-k8s-extender: " << binder.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<k8s::Extender>> extender = k8s::Extender::Create(config->extender, *binder);
  if (!extender.ok()) {
    std::cerr << "phasor-k8s-extender: " << extender.status().message() << "\n";
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<std::unique_ptr<k8s::ExtenderHttpServer>> server =
      k8s::ExtenderHttpServer::Start(extender->get(), config->http);
  if (!server.ok()) {
    std::cerr << "phasor-k8s-extender: " << server.status().message() << "\n";
    return absl::IsInvalidArgument(server.status()) ? 2 : 1;
  }
  spdlog::info("phasor-k8s-extender: serving {}:{}{} (phasord {}, fabric {} with {} servers)", config->http.host,
               config->http.port, config->http.url_prefix, config->extender.phasord_endpoint,
               config->extender.topology_path, (*extender)->fabric().num_servers());
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  spdlog::info("phasor-k8s-extender: stopping");
  (*server)->Stop();
  return 0;
}
