// The Kubernetes API server as the extender talks to it (its URL, token and
// CA), and the binder of the bind verb: POST
// /api/v1/namespaces/<ns>/pods/<name>/binding with a v1 Binding (what
// kube-scheduler's DefaultBinder does), authenticated by the service
// account's bearer token. The bind verb is off by default (extender.h).
//
// Thread-safe (one HTTP connection per call).
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_API_BINDER_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_API_BINDER_H_

#include <string>

#include "absl/status/statusor.h"
#include "integrations/kubernetes/extender.h"

namespace phasor::kubernetes {

struct ApiServerOptions {
  // The API server (https:// or http://, e.g. a kubectl proxy).
  std::string url = "https://kubernetes.default.svc";
  // Bearer token file; empty: no Authorization header.
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  // CA bundle for https; empty: the system's.
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  // Per-call timeout (default 2 s).
  int timeout_ms = 2000;
};

// The Binding body for `args` (apiVersion v1, kind Binding, target Node).
std::string BindingBody(const ExtenderBindingArgs& args);

// A BindFunction on the API server. InvalidArgument for a url that is not
// http(s)://host[:port]. The token is re-read on every call (projected
// tokens rotate). The namespace, pod and node names must be Kubernetes names
// (k8s_names.h: InvalidArgument naming the field, and no request is made),
// and go into the URL escaped. An answer other than 2xx is an error with its
// body.
absl::StatusOr<BindFunction> MakeApiServerBinder(ApiServerOptions options);

// InvalidArgument naming api_server for a url that is not http(s)://host[:port]
// (a path is refused: the API paths are the extender's).
absl::Status CheckApiServerUrl(const std::string& url);


}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_API_BINDER_H_
