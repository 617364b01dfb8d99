#include "integrations/kubernetes/api_binder.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "httplib.h"
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

absl::StatusOr<BindFunction> MakeApiServerBinder(ApiServerOptions options) {
  if (!absl::StartsWith(options.url, "https://") && !absl::StartsWith(options.url, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat("api_server: must start with https:// or http://, got '",
                                                   options.url, "'"));
  }
  if (options.timeout_ms < 1) return absl::InvalidArgumentError("api_timeout_ms: must be > 0");
  while (absl::EndsWith(options.url, "/")) options.url.pop_back();
  return BindFunction([options](const ExtenderBindingArgs& args) -> absl::Status {
    httplib::Client client(options.url);
    if (!client.is_valid()) return absl::InvalidArgumentError(absl::StrCat("api_server: bad url '", options.url, "'"));
    const auto timeout_s = options.timeout_ms / 1000;
    const auto timeout_us = (options.timeout_ms % 1000) * 1000;
    client.set_connection_timeout(timeout_s, timeout_us);
    client.set_read_timeout(timeout_s, timeout_us);
    client.set_write_timeout(timeout_s, timeout_us);
    if (absl::StartsWith(options.url, "https://") && !options.ca_file.empty()) {
      client.set_ca_cert_path(options.ca_file.c_str());
    }
    httplib::Headers headers;
    if (!options.token_file.empty()) {
      std::ifstream in(options.token_file);
      if (!in) return absl::UnavailableError(absl::StrCat("token_file: cannot read '", options.token_file, "'"));
      std::stringstream token;
      token << in.rdbuf();
      headers.emplace("Authorization",
                      absl::StrCat("Bearer ", absl::StripAsciiWhitespace(token.str())));
    }
    const std::string path =
        absl::StrCat("/api/v1/namespaces/", args.pod_namespace, "/pods/", args.pod_name, "/binding");
    httplib::Result res = client.Post(path.c_str(), headers, BindingBody(args), "application/json");
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
