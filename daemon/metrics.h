// phasord's metrics on prometheus-cpp (Debian's prometheus-cpp-dev), and the
// HTTP endpoint that serves them (GET /metrics, on cpp-httplib).
//
// Metrics keeps one prometheus::Registry; a family is a counter when first
// touched by Increment, a gauge when first touched by Set, and
// phasord_solve_seconds is a histogram. Thread-safe: the socket thread, the
// CURVE authenticator and the HTTP threads all touch it.
#ifndef PHASOR_DAEMON_METRICS_H_
#define PHASOR_DAEMON_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "http/server_thread.h"

namespace prometheus {
class Registry;
class Histogram;
}  // namespace prometheus

namespace httplib {
class Server;
}  // namespace httplib

namespace phasor::daemon {

// Label set, e.g. {{"type", "RankRequest"}}.
using Labels = std::map<std::string, std::string>;

class Metrics {
 public:
  Metrics();
  ~Metrics();

  void Increment(const std::string& name, const Labels& labels = {}, double by = 1);
  void Set(const std::string& name, const Labels& labels, double value);
  // Observes one solve latency (seconds) in phasord_solve_seconds.
  void ObserveSolveSeconds(double seconds);

  // The value of a counter or gauge (0 when never touched).
  double Value(const std::string& name, const Labels& labels = {}) const;
  // True when the counter or gauge has a series with exactly these labels.
  bool Has(const std::string& name, const Labels& labels = {}) const;
  // Drops the series with exactly these labels from a counter or gauge (the
  // per-job and per-link series of a released job); no-op when absent.
  void Remove(const std::string& name, const Labels& labels);

  // Every metric in the Prometheus text format, with HELP and TYPE lines.
  std::string Render() const;

 private:
  struct Families;
  mutable std::mutex mu_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  prometheus::Histogram* solve_seconds_ = nullptr;
};

// Serves GET /metrics until destroyed.
class MetricsHttpServer {
 public:
  // Binds `listen` ("HOST:PORT"; port 0 picks a free one). InvalidArgument
  // for a malformed address, Unavailable when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& listen,
                                                                   const Metrics* metrics);
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  MetricsHttpServer(std::unique_ptr<httplib::Server> server, uint16_t port);

  std::unique_ptr<httplib::Server> server_;
  uint16_t port_;
  http::ServerThread thread_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_METRICS_H_
