// phasord's metrics in the Prometheus text exposition format, and the small
// HTTP endpoint that serves them (GET /metrics).
//
// Metrics is thread-safe (one mutex): the socket thread, the CURVE
// authenticator and the HTTP thread all touch it.
#ifndef PHASOR_CMD_PHASORD_METRICS_H_
#define PHASOR_CMD_PHASORD_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace phasor::daemon {

// Label set, e.g. {{"type", "RankRequest"}}; rendered in key order.
using Labels = std::map<std::string, std::string>;

class Metrics {
 public:
  Metrics();

  void Increment(const std::string& name, const Labels& labels = {}, double by = 1);
  void Set(const std::string& name, const Labels& labels, double value);
  // Observes one solve latency (seconds) in phasord_solve_seconds.
  void ObserveSolveSeconds(double seconds);

  // The value of a counter or gauge (0 when never touched).
  double Value(const std::string& name, const Labels& labels = {}) const;

  // Every metric in the Prometheus text format, with HELP and TYPE lines.
  std::string Render() const;

 private:
  struct Family {
    std::string type;  // counter or gauge
    std::map<Labels, double> series;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  std::vector<double> bucket_bounds_;
  std::vector<uint64_t> bucket_counts_;  // cumulative at render time, per-bucket here
  uint64_t solve_count_ = 0;
  double solve_sum_ = 0;
};

// Serves GET /metrics on one thread until destroyed.
class MetricsHttpServer {
 public:
  // Binds `listen` ("HOST:PORT"; port 0 picks a free one). Unavailable when
  // the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& listen,
                                                                   const Metrics* metrics);
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  MetricsHttpServer(int fd, uint16_t port, const Metrics* metrics);
  void Serve();

  int fd_;
  uint16_t port_;
  const Metrics* metrics_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Fetches http://HOST:PORT/PATH with a plain HTTP/1.0 GET (for `phasor
// status` and tests). Unavailable when nothing answers within timeout_ms.
absl::StatusOr<std::string> HttpGet(const std::string& host_port, const std::string& path, int timeout_ms);

}  // namespace phasor::daemon

#endif  // PHASOR_CMD_PHASORD_METRICS_H_
