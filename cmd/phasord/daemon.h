// phasord: the placement service (SPEC sections 7 and 9).
//
// Sockets: ROUTER (RankRequest, CommitPlacement, GetOffset, Health,
// GetSnapshot; each gets one reply, an Error when anything is wrong), PULL
// (ProfileUpdate from probes; no reply), PUB (OffsetUpdate, topic = job id).
// State lives in SQLite (StateStore) and is written before the reply that
// acknowledges it.
//
// Threads: Run() owns every socket and the database; RankRequests are solved
// on `solver_threads` worker threads; a CURVE authenticator thread (when
// CURVE is on) and the metrics HTTP thread run beside them. Start() and the
// destructor are called from one thread; Run() from one (possibly other)
// thread; metrics() may be read from any thread.
#ifndef PHASOR_CMD_PHASORD_DAEMON_H_
#define PHASOR_CMD_PHASORD_DAEMON_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cmd/phasord/config.h"
#include "cmd/phasord/metrics.h"

namespace phasor::daemon {

// Now, in microseconds since the Unix epoch.
using Clock = std::function<int64_t()>;
Clock SystemClock();

// The endpoints actually bound (a tcp://HOST:* wildcard resolved to its port).
struct BoundEndpoints {
  std::string request;
  std::string profile;
  std::string offset;
  uint16_t metrics_port = 0;  // 0 when metrics are off
};

class Daemon {
 public:
  // Opens the state database, binds the sockets, starts the worker threads
  // and the metrics endpoint, and re-publishes every stored offset.
  // InvalidArgument for bad options or key files; Unavailable when a socket
  // or the database cannot be opened.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(const DaemonOptions& options,
                                                       Clock clock = SystemClock());
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Serves until `stop` becomes true (checked at least every 100 ms).
  void Run(const std::atomic<bool>& stop);

  const BoundEndpoints& endpoints() const;
  const Metrics& metrics() const;

  class Impl;

 private:
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_CMD_PHASORD_DAEMON_H_
