// Interface byte counters streamed over gNMI (OpenConfig's gRPC Network
// Management Interface) as a CounterSource: the telemetry that SONiC, Arista
// EOS, NVIDIA Cumulus and Juniper switches stream.
//
// Each target gets one Subscribe RPC (spec section 3.5): a SubscriptionList
// in STREAM mode, one SAMPLE subscription per path (default: the in-octets
// and out-octets leaves of /interfaces/interface[name=*]/state/counters)
// every sample_interval_us, in the encoding asked for. Every update whose
// path names an interface (OpenConfig's interface[name=X], or SONiC's
// COUNTERS/<port> in COUNTERS_DB) and an octet counter (in-octets,
// out-octets, SAI_PORT_STAT_IF_IN_OCTETS, SAI_PORT_STAT_IF_OUT_OCTETS) is a
// reading "<target>/<interface>/in" or ".../out" at the notification's
// timestamp (the target's clock; the receive time when it is 0). Values may
// be uint_val or int_val (PROTO), a bare number or quoted number (JSON,
// JSON_IETF, ASCII, string), or a JSON subtree holding such leaves (a
// container subscription, SONiC's per-port objects).
//
// The spec lets targets send notifications out of timestamp order, so each
// series is sorted by timestamp when it is read; a reading repeated with the
// same timestamp and value is a duplicate (dropped, counted), one with the
// same timestamp and another value a conflict (the first kept, counted).
// Counter64 wraps (top quarter to bottom quarter of 2^64) are unwrapped;
// any other decrease is a reset (a cleared counter, a restarted agent): that
// interval is dropped and counted. Intervals are the same CounterIntervals as
// every other source's, so the same resampling and extraction follow.
//
// Transport: TLS (the spec's requirement) with the system's or a given CA,
// an optional client certificate (mutual TLS) and a name override; plaintext
// only when `insecure` (lab targets, EOS's default transport). Credentials:
// the spec's "username" and "password" metadata on the Subscribe RPC.
// Failures: a target that cannot be connected to within connect_timeout_us,
// a stream that closes or fails, and a stream silent for stall_timeout_us
// are retried with exponential backoff (backoff_initial_us doubling up to
// backoff_max_us, +-20% jitter); a target that refuses the subscription for
// good (UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT, UNIMPLEMENTED,
// NOT_FOUND, FAILED_PRECONDITION) is not retried. Memory is bounded: at most
// max_series series, each keeping the newest window_us of readings (at most
// max_readings_per_series).
//
// gRPC and the generated gNMI messages stay inside this module's target
// (phasor_probe_gnmi): this header includes neither.
#ifndef PHASOR_PROBE_GNMI_SOURCE_H_
#define PHASOR_PROBE_GNMI_SOURCE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "probe/counter_series.h"

namespace phasor::probe {

inline constexpr char kGnmiInOctetsPath[] =
    "/interfaces/interface[name=*]/state/counters/in-octets";
inline constexpr char kGnmiOutOctetsPath[] =
    "/interfaces/interface[name=*]/state/counters/out-octets";

struct GnmiTarget {
  std::string name;     // prefix of the subjects ("leaf1"); the address when not given
  std::string address;  // host:port ("10.0.0.1:6030", "[fd00::1]:9339")
};

// "[NAME=]HOST:PORT". InvalidArgument naming the text when the port is
// missing or not a number in 1..65535, or the name holds a '/'.
absl::StatusOr<GnmiTarget> ParseGnmiTarget(absl::string_view text);

struct GnmiOptions {
  std::vector<GnmiTarget> targets;  // required, one or more
  // Subscription paths, gNMI path strings "[origin:]/elem[key=value]/..."
  // (the leading '/' optional; '/' inside brackets is literal; '\' escapes).
  std::vector<std::string> paths = {kGnmiInOctetsPath, kGnmiOutOctetsPath};
  std::string prefix_target;  // the prefix's Path.target (SONiC: "OC-YANG", "COUNTERS_DB")
  int64_t sample_interval_us = 100000;  // SAMPLE interval, 1 ms .. 1 h
  std::string encoding = "proto";       // proto, json, json_ietf or ascii
  // Transport.
  bool insecure = false;        // plaintext HTTP/2 instead of TLS
  std::string ca_file;          // PEM roots that sign the target's certificate; empty: system roots
  std::string cert_file;        // PEM client certificate chain (with key_file: mutual TLS)
  std::string key_file;         // PEM client private key
  std::string tls_server_name;  // the name checked in the target's certificate; empty: the host
  std::string username;         // "username" metadata; empty: none
  std::string password;         // "password" metadata (with username)
  // Failures.
  int64_t connect_timeout_us = 5000000;  // TCP, TLS and HTTP/2 set-up of one attempt
  int64_t stall_timeout_us = 0;          // an open stream silent this long is restarted;
                                         // 0: max(5 s, 20 sample intervals)
  int64_t backoff_initial_us = 500000;   // first wait after a failure
  int64_t backoff_max_us = 30000000;     // longest wait
  // Memory.
  int64_t window_us = 3600000000;           // readings older than the newest minus this are dropped
  size_t max_readings_per_series = 200000;  // and at most this many per series
  size_t max_series = 16384;                // series beyond this are not kept (counted)
  // Collect(): how long to stream.
  int64_t duration_us = 10000000;
};

// What one target's stream did so far.
struct GnmiTargetStats {
  std::string name, address;
  uint64_t attempts = 0;           // connection attempts
  uint64_t streams = 0;            // streams that delivered at least one message
  uint64_t failures = 0;           // attempts or streams that ended in an error (retried or not)
  uint64_t notifications = 0;      // Notification messages
  uint64_t readings = 0;           // octet counter values taken
  uint64_t sync_responses = 0;     // sync_response messages
  uint64_t out_of_order = 0;       // new readings older than the series' newest on arrival
  uint64_t duplicates = 0;         // same timestamp, same value: dropped
  uint64_t conflicts = 0;          // same timestamp, another value: the first kept
  uint64_t wraps = 0;              // counter64 wraps unwrapped (as of the last Snapshot())
  uint64_t resets = 0;             // decreases that are not wraps, interval dropped (same)
  uint64_t other_leaves = 0;       // updates of leaves that are not octet counters (ignored)
  uint64_t bad_values = 0;         // octet counters whose value is not a count (ignored)
  uint64_t unattributed = 0;       // octet counters whose path names no interface (ignored)
  uint64_t series_over_limit = 0;  // readings of series beyond max_series (ignored)
  uint64_t trimmed = 0;            // readings dropped by the window or the per-series bound
  bool gave_up = false;            // a permanent refusal: not retried
  std::string last_error;          // the newest failure ("" when none)
  std::string first_bad_value;     // the first ignored value, for the user
};

// Streams from every target on its own thread until stopped. Start()
// returns once the threads run; Snapshot() and Stats() may be called from
// any thread at any time (each target's data is copied under its own lock).
class GnmiCollector {
 public:
  // InvalidArgument for options out of range or a path that does not parse
  // (naming it); NotFound for a TLS file that cannot be read.
  static absl::StatusOr<std::unique_ptr<GnmiCollector>> Start(const GnmiOptions& options);
  ~GnmiCollector();  // Stop()s
  GnmiCollector(const GnmiCollector&) = delete;
  GnmiCollector& operator=(const GnmiCollector&) = delete;

  // Cancels every stream and joins the threads (within about the connect
  // timeout at worst). Idempotent.
  void Stop();

  // Every series so far (the kept window), sorted, de-duplicated, as
  // intervals; source "gnmi:<address>", bin_us = the sample interval, each
  // series' SamplingReport saying how regular the target's samples were
  // (jitter: how far each interval between two samples is from the sample
  // interval). Notes: per target, what its stream did (reconnects, errors,
  // out-of-order and duplicate updates, wraps, resets, ignored values).
  CounterCollection Snapshot() const;

  std::vector<GnmiTargetStats> Stats() const;

  // True once every target gave up for good (nothing more will arrive).
  bool AllGaveUp() const;

 private:
  struct Impl;
  explicit GnmiCollector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The error when no target delivered a counter: Unavailable naming each
// target and its last error, Unauthenticated or PermissionDenied when every
// target refused the credentials.
absl::Status GnmiNoCountersError(const std::vector<GnmiTargetStats>& stats);

// The CounterSource: streams for options.duration_us (or until `stop` is
// set, or every target gave up), then returns the Snapshot.
// GnmiNoCountersError() when no series came; the Start() errors otherwise.
class GnmiSource : public CounterSource {
 public:
  explicit GnmiSource(GnmiOptions options, const std::atomic<bool>* stop = nullptr)
      : options_(std::move(options)), stop_(stop) {}
  absl::StatusOr<CounterCollection> Collect() override;

  // After Collect(): what each target's stream did.
  const std::vector<GnmiTargetStats>& stats() const { return stats_; }

 private:
  GnmiOptions options_;
  const std::atomic<bool>* stop_;
  std::vector<GnmiTargetStats> stats_;
};

// One decoded octet counter reading.
struct GnmiCounterReading {
  std::string interface;
  bool out = false;  // out-octets (else in-octets)
  uint64_t value = 0;
  int64_t time_us = 0;
};

// What decoding a SubscribeResponse found besides readings.
struct GnmiDecodeCounts {
  uint64_t notifications = 0, sync_responses = 0, other_leaves = 0, bad_values = 0,
           unattributed = 0;
  std::string first_bad_value;
};

// Decodes one serialized gnmi.SubscribeResponse (as the collector does with
// every message it receives): the octet counter readings it carries, in
// order. `receive_time_us` stamps a notification whose timestamp is 0.
// InvalidArgument when the bytes are not a SubscribeResponse. Exposed for
// tests and tools.
absl::StatusOr<std::vector<GnmiCounterReading>> DecodeGnmiResponse(absl::string_view bytes,
                                                                   int64_t receive_time_us,
                                                                   GnmiDecodeCounts* counts);

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_GNMI_SOURCE_H_
