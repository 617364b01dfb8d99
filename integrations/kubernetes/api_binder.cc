#include "integrations/kubernetes/api_binder.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "integrations/kubernetes/api_server_client.h"
#include "integrations/kubernetes/k8s_names.h"
#include "nlohmann/json.hpp"

namespace phasor::kubernetes {

std::string BindingBody(const ExtenderBindingArgs& args) {
  nlohmann::json metadata = {{"name", args.pod_name}, {"namespace", args.pod_namespace}};
  if (!args.pod_uid.empty()) metadata["uid"] = args.pod_uid;
  return nlohmann::json{{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", std::move(metadata)},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", args.node}}}}
      .dump();
}

absl::Status CheckApiServerUrl(const std::string& url) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "https://") && !absl::ConsumePrefix(&rest, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat("api_server: must start with https:// or http://, got '", url, "'"));
  }
  while (absl::ConsumeSuffix(&rest, "/")) {
  }
  if (rest.empty() || rest.find('/') != absl::string_view::npos || rest.find('?') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("api_server: must be http(s)://host[:port] without a path, got '", url, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ApiServerClient> MakeApiServerClient(const ApiServerOptions& options, int read_timeout_ms) {
  if (absl::Status s = CheckApiServerUrl(options.url); !s.ok()) return s;
  std::string url = options.url;
  while (absl::EndsWith(url, "/")) url.pop_back();
  ApiServerClient c;
  c.client = std::make_unique<httplib::Client>(url);
  if (!c.client->is_valid()) return absl::InvalidArgumentError(absl::StrCat("api_server: bad url '", url, "'"));
  auto set = [](int ms, auto setter) { setter(ms / 1000, (ms % 1000) * 1000); };
  set(options.timeout_ms, [&](time_t s, time_t us) { c.client->set_connection_timeout(s, us); });
  set(options.timeout_ms, [&](time_t s, time_t us) { c.client->set_write_timeout(s, us); });
  set(read_timeout_ms, [&](time_t s, time_t us) { c.client->set_read_timeout(s, us); });
  if (absl::StartsWith(url, "https://") && !options.ca_file.empty()) c.client->set_ca_cert_path(options.ca_file.c_str());
  if (!options.token_file.empty()) {
    std::ifstream in(options.token_file);
    if (!in) return absl::UnavailableError(absl::StrCat("api_token_file: cannot read '", options.token_file, "'"));
    std::stringstream token;
    token << in.rdbuf();
    c.headers.emplace("Authorization", absl::StrCat("Bearer ", absl::StripAsciiWhitespace(token.str())));
  }
  return c;
}

absl::StatusOr<BindFunction> MakeApiServerBinder(ApiServerOptions options) {
  if (absl::Status s = CheckApiServerUrl(options.url); !s.ok()) return s;
  if (options.timeout_ms < 1) return absl::InvalidArgumentError("api_timeout_ms: must be > 0");
  return BindFunction([options](const ExtenderBindingArgs& args) -> absl::Status {
    // Kubernetes names only, each escaped as one path segment: nothing in a
    // name can leave the pod's own binding path.
    for (const absl::Status& s : {CheckNamespace("PodNamespace", args.pod_namespace),
                                  CheckObjectName("PodName", args.pod_name), CheckObjectName("Node", args.node)}) {
      if (!s.ok()) return s;
    }
    absl::StatusOr<ApiServerClient> api = MakeApiServerClient(options, options.timeout_ms);
    if (!api.ok()) return api.status();
    const std::string path = absl::StrCat("/api/v1/namespaces/", EscapePathSegment(args.pod_namespace), "/pods/",
                                          EscapePathSegment(args.pod_name), "/binding");
    httplib::Result res = api->client->Post(path.c_str(), api->headers, BindingBody(args), "application/json");
    if (!res) {
      return absl::UnavailableError(absl::StrCat("api server ", options.url, ": ", httplib::to_string(res.error())));
    }
    if (res->status < 200 || res->status >= 300) {
      return absl::FailedPreconditionError(absl::StrCat("api server answered ", res->status, ": ", res->body));
    }
    return absl::OkStatus();
  });
}

}  // namespace phasor::kubernetes
