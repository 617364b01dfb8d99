// The one client of the controller's Unix socket (hook_server.h), used by
// the hook's helper `phasor-slurm-ask` and by `phasor slurm prolog|epilog`
// on a single host. Plain C++ and libc only (no abseil), so the helper
// starts in about a millisecond.
//
// The timeout rule: one deadline for the whole exchange (connect, send, the
// reply), on the monotonic clock; every step polls until that deadline, and
// the request names it (deadline_us=, the system clock), so the controller
// stops working on a request whose client has given up.
//
// Pure function of its arguments and the socket; thread-safe.
#ifndef PHASOR_INTEGRATIONS_SLURM_HOOK_CLIENT_H_
#define PHASOR_INTEGRATIONS_SLURM_HOOK_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace phasor::slurm {

// Requests and replies are at most this long (both sides refuse more).
inline constexpr size_t kMaxHookMessageBytes = 4096;

struct HookExchange {
  bool ok = false;      // a whole reply arrived in time
  std::string reply;    // the reply text (ok), or what went wrong (!ok)
  bool timed_out = false;  // !ok because the deadline passed
};

// Now on the monotonic clock, in milliseconds.
int64_t MonotonicMs();
// Now on the system clock, in microseconds since the epoch (deadline_us=).
int64_t SystemUs();

// Connects to `socket_path`, sends `request` followed by a
// "deadline_us=<system clock>" line for the deadline, shuts the write side
// and reads the reply until the server closes, all before
// `deadline_monotonic_ms`. Never blocks past it.
HookExchange AskUnixSocket(const std::string& socket_path, const std::string& request, int64_t deadline_monotonic_ms);

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_HOOK_CLIENT_H_
