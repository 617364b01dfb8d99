// The gNMI counter source at scale, end to end: a gNMI target in a child
// process (gRPC C++, pinned to the last core) streams the octet counters of
// N interfaces, each a square wave with its own period (2-6 s), sampled
// every S ms, one Notification per interface and sample (prefix
// /interfaces/interface[name=EthernetK]/state/counters, in-octets and
// out-octets as uint_val), the way a switch streams them; the collector
// (probe::GnmiCollector, PROTO encoding) runs in this process pinned to
// core 0. Measured: this process's CPU time (every thread, gRPC's included)
// over the streaming window as a share of one core, and afterwards the
// profiles of every series against the generated periods.
//
//   probe_gnmi_bench [--interfaces 1000] [--sample-ms 100] [--seconds 60]
//
// Prints one JSON object (docs/probe.md, "Benchmarks" quotes it).
#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "nlohmann/json.hpp"
#include "probe/gnmi.grpc.pb.h"
#include "probe/gnmi_source.h"
#include "probe/measure.h"

namespace {

struct Wave {
  double period_s, duty = 0.3, up_bps = 40e9 / 8, down_bps = 2e9 / 8;
};

Wave WaveOf(int k) { return {2.0 + 4.0 * ((k * 37) % 100) / 100.0}; }

// Bytes sent by t seconds after the start.
uint64_t BytesAt(const Wave& w, double t) {
  const double full = std::floor(t / w.period_s);
  const double rest = t - full * w.period_s;
  const double per = w.up_bps * w.duty * w.period_s + w.down_bps * (1 - w.duty) * w.period_s;
  const double up = std::min(rest, w.duty * w.period_s);
  return static_cast<uint64_t>(full * per + up * w.up_bps + (rest - up) * w.down_bps);
}

void Pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec / 1e6;
}

class Target final : public gnmi::gNMI::Service {
 public:
  Target(int interfaces, int64_t start_ns) : interfaces_(interfaces), start_ns_(start_ns) {}
  grpc::Status Subscribe(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<gnmi::SubscribeResponse, gnmi::SubscribeRequest>* stream) override {
    gnmi::SubscribeRequest request;
    if (!stream->Read(&request)) return grpc::Status::OK;
    const int64_t interval_ns =
        static_cast<int64_t>(request.subscribe().subscription(0).sample_interval());
    std::vector<std::string> names;
    for (int k = 0; k < interfaces_; ++k) names.push_back("Ethernet" + std::to_string(k));
    int64_t tick = start_ns_;
    gnmi::SubscribeResponse r;
    while (!context->IsCancelled()) {
      const auto at = std::chrono::system_clock::time_point(std::chrono::nanoseconds(tick));
      std::this_thread::sleep_until(at);
      const double t = (tick - start_ns_) / 1e9;
      for (int k = 0; k < interfaces_; ++k) {
        r.Clear();
        gnmi::Notification* n = r.mutable_update();
        n->set_timestamp(tick);
        gnmi::Path* p = n->mutable_prefix();
        p->add_elem()->set_name("interfaces");
        gnmi::PathElem* e = p->add_elem();
        e->set_name("interface");
        (*e->mutable_key())["name"] = names[k];
        p->add_elem()->set_name("state");
        p->add_elem()->set_name("counters");
        const uint64_t out = BytesAt(WaveOf(k), t);
        gnmi::Update* u = n->add_update();
        u->mutable_path()->add_elem()->set_name("in-octets");
        u->mutable_val()->set_uint_val(out / 2);
        u = n->add_update();
        u->mutable_path()->add_elem()->set_name("out-octets");
        u->mutable_val()->set_uint_val(out);
        bytes_ += r.ByteSizeLong();
        if (!stream->Write(r)) return grpc::Status::OK;
      }
      tick += interval_ns;
    }
    return grpc::Status::OK;
  }
  uint64_t bytes() const { return bytes_.load(); }

 private:
  int interfaces_;
  int64_t start_ns_;
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace

int main(int argc, char** argv) {
  int interfaces = 1000;
  double sample_ms = 100, seconds = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--interfaces")) interfaces = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--sample-ms")) sample_ms = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  int port_pipe[2], bytes_pipe[2];
  if (pipe(port_pipe) != 0 || pipe(bytes_pipe) != 0) return 1;
  // Samples on a grid starting one second from now (both processes agree).
  const int64_t start_ns = (std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                    .count() /
                                1000000000 +
                            1) *
                           1000000000;
  const pid_t child = fork();  // before any gRPC state exists in either process
  if (child == 0) {
    Pin(cores - 1);
    Target target(interfaces, start_ns);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&target);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (write(port_pipe[1], &port, sizeof(port)) != sizeof(port)) std::_Exit(1);
    // Serves until SIGTERM, then reports the bytes it sent.
    static Target* current = &target;
    static int bytes_fd = bytes_pipe[1];
    signal(SIGTERM, [](int) {
      const uint64_t b = current->bytes();
      if (write(bytes_fd, &b, sizeof(b)) != sizeof(b)) std::_Exit(1);
      std::_Exit(0);
    });
    server->Wait();
    std::_Exit(0);
  }
  Pin(0);
  int port = 0;
  if (read(port_pipe[0], &port, sizeof(port)) != sizeof(port)) return 1;
  phasor::probe::GnmiOptions o;
  o.targets = {{"bench", "127.0.0.1:" + std::to_string(port)}};
  o.insecure = true;
  o.sample_interval_us = std::llround(sample_ms * 1000);
  o.max_series = 2 * interfaces + 16;
  auto collector = phasor::probe::GnmiCollector::Start(o);
  if (!collector.ok()) {
    std::cerr << collector.status() << "\n";
    return 1;
  }
  // Wait for the first samples, then measure a window of `seconds`.
  std::this_thread::sleep_until(
      std::chrono::system_clock::time_point(std::chrono::nanoseconds(start_ns + 2'000'000'000)));
  const uint64_t readings0 = (*collector)->Stats()[0].readings;
  const double cpu0 = CpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const double cpu = CpuSeconds() - cpu0;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const uint64_t readings = (*collector)->Stats()[0].readings - readings0;
  (*collector)->Stop();
  kill(child, SIGTERM);
  uint64_t bytes = 0;
  if (read(bytes_pipe[0], &bytes, sizeof(bytes)) != sizeof(bytes)) bytes = 0;
  waitpid(child, nullptr, 0);
  const phasor::probe::GnmiTargetStats stats = (*collector)->Stats()[0];

  // The profiles.
  const double extract_cpu0 = CpuSeconds();
  auto measured = phasor::probe::MeasureCollection((*collector)->Snapshot(), {});
  const double extract_cpu = CpuSeconds() - extract_cpu0;
  if (!measured.ok()) {
    std::cerr << measured.status() << "\n";
    return 1;
  }
  int right = 0, total = 0;
  double worst = 0;
  for (const auto& p : measured->profiles) {
    const size_t slash = p.subject.find("/Ethernet");
    const int k = std::atoi(p.subject.c_str() + slash + 9);
    const double want = WaveOf(k).period_s * 1e6;
    ++total;
    const double error =
        p.extracted.periodic ? std::abs(p.extracted.period_exact_us - want) / want : 1.0;
    worst = std::max(worst, error);
    right += error <= 0.01;
  }
  const nlohmann::json out = {
      {"interfaces", interfaces},
      {"sample_ms", sample_ms},
      {"window_s", wall},
      {"readings_per_s", readings / wall},
      {"notifications_total", stats.notifications},
      {"client_cpu_s", cpu},
      {"client_cpu_share_of_one_core", cpu / wall},
      {"client_cpu_us_per_reading", 1e6 * cpu / std::max<uint64_t>(1, readings)},
      {"wire_bytes_per_notification",
       static_cast<double>(bytes) / std::max<uint64_t>(1, stats.notifications)},
      {"wire_bytes_per_s", static_cast<double>(bytes) / std::max<uint64_t>(1, stats.notifications) *
                               interfaces * 1000.0 / sample_ms},
      {"failures", stats.failures},
      {"out_of_order", stats.out_of_order},
      {"series", total},
      {"profiles_within_1pct", right},
      {"worst_period_error_pct", 100 * worst},
      {"extraction_cpu_s", extract_cpu},
      {"client_max_rss_mb",
       [] {
         rusage u{};
         getrusage(RUSAGE_SELF, &u);
         return u.ru_maxrss / 1024.0;
       }()},
      {"load_average_1m", [] {
         double l[3] = {0, 0, 0};
         getloadavg(l, 3);
         return l[0];
       }()}};
  std::cout << out.dump(2) << "\n";
  return right == total ? 0 : 1;
}
