#include "daemon/metrics.h"

#include <httplib.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "http/bounded_body.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace phasor::daemon {
namespace {

std::string Help(const std::string& name) {
  static const auto* help = new std::map<std::string, std::string>{
      {"phasord_requests_total", "Requests received, by message type."},
      {"phasord_errors_total", "Error replies and rejected messages, by message type and error code."},
      {"phasord_profiles_total", "ProfileUpdates accepted, by subject kind."},
      {"phasord_profiles_ignored_total", "ProfileUpdates ignored, by reason."},
      {"phasord_offsets_published_total", "OffsetUpdates published on the PUB socket."},
      {"phasord_released_total", "Jobs whose placement a ReleasePlacement withdrew."},
      {"phasord_quarantined_rows_total", "Stored rows set aside at start because they no longer validate, by table."},
      {"phasord_realignments_total", "Offsets re-sent because a job's observed phase drifted (closed loop)."},
      {"phasord_rankings_dropped_total",
       "RankRequests answered without a solve: queue_full (max_queued_rankings) or time (waited past their time)."},
      {"phasord_rankings_not_kept_total",
       "Rankings answered but too large for the state store to keep (one etcd write): their commits are NOT_FOUND."},
      {"phasord_curve_refused_total", "CURVE handshakes refused (client key not in the allow-list)."},
      {"phasord_link_score", "Latest score per link (source: commit = predicted, probe = observed)."},
      {"phasord_link_excess", "Latest mean excess over capacity per link, as a fraction of capacity."},
      {"phasord_phase_error_us", "Latest observed phase error per job (us; closed loop)."},
      {"phasord_jobs", "Jobs with an offset."},
      {"phasord_epoch_us", "The epoch all offsets are relative to (us since the Unix epoch)."},
      {"phasord_up", "1 while phasord serves."},
  };
  auto it = help->find(name);
  return it == help->end() ? name : it->second;
}

}  // namespace

struct Metrics::Families {
  std::map<std::string, prometheus::Family<prometheus::Counter>*> counters;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauges;
};

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()), families_(std::make_unique<Families>()) {
  solve_seconds_ = &prometheus::BuildHistogram()
                        .Name("phasord_solve_seconds")
                        .Help("Time to rank one RankRequest.")
                        .Register(*registry_)
                        .Add({}, prometheus::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                                          0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                                          1, 2.5, 5, 10});
}

Metrics::~Metrics() = default;

void Metrics::Increment(const std::string& name, const Labels& labels, double by) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& family = families_->counters[name];
  if (family == nullptr) family = &prometheus::BuildCounter().Name(name).Help(Help(name)).Register(*registry_);
  family->Add(labels).Increment(by);
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& family = families_->gauges[name];
  if (family == nullptr) family = &prometheus::BuildGauge().Name(name).Help(Help(name)).Register(*registry_);
  family->Add(labels).Set(value);
}

void Metrics::ObserveSolveSeconds(double seconds) { solve_seconds_->Observe(seconds); }

double Metrics::Value(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto c = families_->counters.find(name); c != families_->counters.end() && c->second->Has(labels)) {
    return c->second->Add(labels).Value();
  }
  if (auto g = families_->gauges.find(name); g != families_->gauges.end() && g->second->Has(labels)) {
    return g->second->Add(labels).Value();
  }
  return 0;
}

bool Metrics::Has(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto c = families_->counters.find(name); c != families_->counters.end() && c->second->Has(labels)) return true;
  auto g = families_->gauges.find(name);
  return g != families_->gauges.end() && g->second->Has(labels);
}

void Metrics::Remove(const std::string& name, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto c = families_->counters.find(name); c != families_->counters.end() && c->second->Has(labels)) {
    c->second->Remove(&c->second->Add(labels));
  }
  if (auto g = families_->gauges.find(name); g != families_->gauges.end() && g->second->Has(labels)) {
    g->second->Remove(&g->second->Add(labels));
  }
}

std::string Metrics::Render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& listen,
                                                                             const Metrics* metrics) {
  const size_t colon = listen.rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics_listen: '", listen, "' is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto server = std::make_unique<httplib::Server>();
  server->new_task_queue = [] { return new httplib::ThreadPool(2); };
  server->set_read_timeout(1, 0);
  server->set_write_timeout(1, 0);
  // GET only: a request with a body (of any encoding) is answered before it is read.
  http::GuardBodies(*server, {});
  server->Get("/metrics", [metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics->Render(), "text/plain; version=0.0.4");
  });
  // Readiness of one phasord among several (state_store.backend etcd): 200
  // while it serves (the leader, or any SQLite phasord), 503 for a standby;
  // a Kubernetes Service then routes only to the leader.
  server->Get("/leader", [metrics](const httplib::Request&, httplib::Response& res) {
    const bool standby = metrics->Value("phasord_leader") == 0 && metrics->Value("phasord_standby") == 1;
    res.status = standby ? 503 : 200;
    res.set_content(standby ? "standby\n" : "serving\n", "text/plain");
  });
  server->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("phasord: metrics at /metrics\n", "text/plain");
  });
  int bound = port == 0 ? server->bind_to_any_port(host) : (server->bind_to_port(host, static_cast<int>(port)) ? static_cast<int>(port) : -1);
  if (bound < 0) {
    return absl::UnavailableError(absl::StrCat("metrics_listen: cannot listen on '", listen, "'"));
  }
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(server), static_cast<uint16_t>(bound)));
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<httplib::Server> server, uint16_t port)
    : server_(std::move(server)), port_(port) {
  thread_.Start(server_.get());
}

MetricsHttpServer::~MetricsHttpServer() { thread_.Stop(); }

}  // namespace phasor::daemon
