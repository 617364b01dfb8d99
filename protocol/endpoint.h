// ZeroMQ endpoints of the phasor wire: which schemes are spoken, and the
// security rule for plain (non-CURVE) sockets (SPEC section 9): plain only
// on ipc://, inproc:// or loopback TCP. phasord's config, the probes'
// publisher and every client apply this one rule. Pure; thread-safe.
#ifndef PHASOR_PROTOCOL_ENDPOINT_H_
#define PHASOR_PROTOCOL_ENDPOINT_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace phasor::protocol {

// True for tcp://, ipc:// and inproc:// endpoints.
bool IsZmqEndpoint(absl::string_view endpoint);

// True for ipc://, inproc:// and TCP endpoints on 127.0.0.0/8, [::1] or localhost.
bool IsLocalEndpoint(absl::string_view endpoint);

// OK when `endpoint` may carry a plain socket: a ZeroMQ endpoint, and local
// (IsLocalEndpoint). InvalidArgument naming `field` otherwise, ending with
// `remedy` (what the user should do instead).
absl::Status CheckPlainEndpoint(absl::string_view field, absl::string_view endpoint,
                                absl::string_view remedy = "configure curve");

// OK for a ZeroMQ endpoint; InvalidArgument naming `field` otherwise.
absl::Status CheckEndpoint(absl::string_view field, absl::string_view endpoint);

}  // namespace phasor::protocol

#endif  // PHASOR_PROTOCOL_ENDPOINT_H_
