// phasord's ZeroMQ server (SPEC section 9): the sockets in front of the
// transport-free Service (service.h).
//
// Sockets: ROUTER (RankRequest, CommitPlacement, GetOffset, Health,
// GetSnapshot; each gets one reply, an Error when anything is wrong), PULL
// (ProfileUpdate from probes; no reply), PUB (OffsetUpdate, topic = job id).
// State lives in SQLite (StateStore) and is written before the reply that
// acknowledges it.
//
// Threads: Run() owns every socket and the Service (hence the database);
// RankRequests are solved on the SolverPool's `solver_threads` threads; the
// CURVE authenticator's thread (when CURVE is on) and the metrics HTTP
// server's threads run beside them. Start() and the
// destructor are called from one thread; Run() from one (possibly other)
// thread; metrics() may be read from any thread.
#ifndef PHASOR_DAEMON_SERVER_H_
#define PHASOR_DAEMON_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/metrics.h"
#include "daemon/service.h"

namespace phasor::daemon {

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

  // Serves until `stop` becomes true (checked at least every 100 ms). With
  // state_store.backend etcd it answers every request UNAVAILABLE naming the
  // leader until it wins the election, then restores the state from etcd and
  // serves; it returns when it loses the lead (lost_leadership()).
  void Run(const std::atomic<bool>& stop);

  const BoundEndpoints& endpoints() const;
  const Metrics& metrics() const;
  // state_store.backend etcd: Run() returned because this phasord led and
  // lost the lead (its lease ran out, or a write was fenced).
  bool lost_leadership() const;

  class Impl;

 private:
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_SERVER_H_
