// Kubernetes object names as the API server defines them, checked before any
// of them goes into a request to it (a name is a path segment of the API's
// URLs: `../` in a pod name must never reach the server as a path).
//
//   namespace: a DNS-1123 label: 1..63 of [a-z0-9-], starting and ending
//              alphanumeric;
//   pod, node: a DNS-1123 subdomain: 1..253 characters, dot-separated
//              DNS-1123 labels.
//
// Pure functions; thread-safe.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_K8S_NAMES_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_K8S_NAMES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace phasor::kubernetes {

bool IsDns1123Label(absl::string_view name);
bool IsDns1123Subdomain(absl::string_view name);

// InvalidArgument naming the field and the rule ("PodNamespace: 'Kube_System'
// is not a DNS-1123 label (lowercase letters, digits and '-', 1..63, starting
// and ending with a letter or digit)").
absl::Status CheckNamespace(absl::string_view field, absl::string_view name);
absl::Status CheckObjectName(absl::string_view field, absl::string_view name);

// `segment` percent-encoded for a URL path (everything but A-Z a-z 0-9 - . _ ~):
// a valid name comes out unchanged; nothing that comes out contains '/'.
std::string EscapePathSegment(absl::string_view segment);
// The same for a query parameter's value.
std::string EscapeQueryValue(absl::string_view value);

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_K8S_NAMES_H_
