// phasor-k8s-extender's configuration: one YAML file (docs/kubernetes.md
// lists every key), each key with the default of the option it sets.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_CONFIG_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "integrations/kubernetes/api_binder.h"
#include "integrations/kubernetes/extender.h"
#include "integrations/kubernetes/http_server.h"
#include "integrations/kubernetes/pod_watcher.h"

namespace phasor::kubernetes {

struct ExtenderConfig {
  ExtenderOptions extender;
  HttpServerOptions http;
  ApiServerOptions api_server;
  // Follow the scheduler's pods on the API server (default on): where they
  // land, and when their jobs end (released in phasord). watch.api is
  // api_server.
  bool watch_pods = true;
  PodWatcherOptions watch;
  // CURVE key files for phasord (all three, or none: plain). Read by
  // LoadCurveKeys into extender.curve.
  std::string phasord_server_public_key_file;
  std::string phasord_client_public_key_file;
  std::string phasord_client_secret_key_file;
  // spdlog level: trace, debug, info, warn, error, critical, off.
  std::string log_level = "info";
};

// Parses YAML text. Unknown keys and wrongly typed values are
// InvalidArgument naming the key; keys left out keep their defaults. The
// result is validated (ValidateExtenderConfig).
absl::StatusOr<ExtenderConfig> ParseExtenderConfig(const std::string& yaml_text);

// What only the whole config can check: the HTTP side (TLS, loopback),
// and every bound against http_timeout_ms (the scheduler's httpTimeout): a
// plan's two phasord calls, and with bind_verb one API call
// (api_timeout_ms). InvalidArgument naming the key.
absl::Status ValidateExtenderConfig(const ExtenderConfig& config);
absl::StatusOr<ExtenderConfig> LoadExtenderConfig(const std::string& path);

// Reads the phasord_*_key_file keys into config.extender.curve (nothing when
// none is set). InvalidArgument naming the key for a missing or bad file.
absl::Status LoadCurveKeys(ExtenderConfig& config);

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_EXTENDER_CONFIG_H_
