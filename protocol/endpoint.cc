#include "protocol/endpoint.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace phasor::protocol {

bool IsZmqEndpoint(absl::string_view e) {
  return absl::StartsWith(e, "tcp://") || absl::StartsWith(e, "ipc://") || absl::StartsWith(e, "inproc://");
}

bool IsLocalEndpoint(absl::string_view endpoint) {
  if (absl::StartsWith(endpoint, "ipc://") || absl::StartsWith(endpoint, "inproc://")) return true;
  if (!absl::StartsWith(endpoint, "tcp://")) return false;
  const absl::string_view host = endpoint.substr(6);
  return absl::StartsWith(host, "127.") || absl::StartsWith(host, "localhost:") || absl::StartsWith(host, "[::1]:");
}

absl::Status CheckEndpoint(absl::string_view field, absl::string_view endpoint) {
  if (IsZmqEndpoint(endpoint)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": '", endpoint, "' is not a tcp://, ipc:// or inproc:// endpoint"));
}

absl::Status CheckPlainEndpoint(absl::string_view field, absl::string_view endpoint, absl::string_view remedy) {
  if (absl::Status s = CheckEndpoint(field, endpoint); !s.ok()) return s;
  if (IsLocalEndpoint(endpoint)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": '", endpoint, "' is not ipc:// or loopback: plain sockets are refused there; ", remedy));
}

}  // namespace phasor::protocol
