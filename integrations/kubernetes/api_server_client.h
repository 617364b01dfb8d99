// An HTTP(S) client of the Kubernetes API server, for the module's own files
// (the binder, the pod watcher): this header includes cpp-httplib, which stays
// out of the module's public headers.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_API_SERVER_CLIENT_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_API_SERVER_CLIENT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "httplib.h"
#include "integrations/kubernetes/api_binder.h"

namespace phasor::kubernetes {

struct ApiServerClient {
  std::unique_ptr<httplib::Client> client;
  httplib::Headers headers;  // Authorization: Bearer <token>, when a token file is set
};

// A client of `options.url` with options.timeout_ms to connect and write,
// `read_timeout_ms` to read, the CA for https, and the token file read now
// (projected tokens rotate: make one per request or watch). Unavailable when
// the token file cannot be read; InvalidArgument for a bad url.
absl::StatusOr<ApiServerClient> MakeApiServerClient(const ApiServerOptions& options, int read_timeout_ms);

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_API_SERVER_CLIENT_H_
