#include "cmd/phasord/metrics.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace phasor::daemon {
namespace {

const std::map<std::string, std::string>& Help() {
  static const auto* help = new std::map<std::string, std::string>{
      {"phasord_requests_total", "Requests received, by message type."},
      {"phasord_errors_total", "Error replies and rejected messages, by message type and error code."},
      {"phasord_profiles_total", "ProfileUpdates accepted, by subject kind."},
      {"phasord_profiles_ignored_total", "ProfileUpdates ignored, by reason."},
      {"phasord_offsets_published_total", "OffsetUpdates published on the PUB socket."},
      {"phasord_released_total", "Jobs whose placement a ReleasePlacement withdrew."},
      {"phasord_realignments_total", "Offsets re-sent because a job's observed phase drifted (closed loop)."},
      {"phasord_curve_refused_total", "CURVE handshakes refused (client key not in the allow-list)."},
      {"phasord_link_score", "Latest score per link (source: commit = predicted, probe = observed)."},
      {"phasord_link_excess", "Latest mean excess over capacity per link, as a fraction of capacity."},
      {"phasord_jobs", "Jobs with an offset."},
      {"phasord_epoch_us", "The epoch all offsets are relative to (us since the Unix epoch)."},
      {"phasord_up", "1 while phasord serves."},
  };
  return *help;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string LabelText(const Labels& labels, const std::string& extra = "") {
  if (labels.empty() && extra.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    out += absl::StrCat(k, "=\"", Escape(v), "\"");
  }
  if (!extra.empty()) out += (first ? "" : ",") + extra;
  return out + "}";
}

}  // namespace

Metrics::Metrics()
    : bucket_bounds_{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
      bucket_counts_(bucket_bounds_.size(), 0) {}

void Metrics::Increment(const std::string& name, const Labels& labels, double by) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.type = "counter";
  f.series[labels] += by;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.type = "gauge";
  f.series[labels] = value;
}

void Metrics::ObserveSolveSeconds(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < bucket_bounds_.size(); ++i) {
    if (seconds <= bucket_bounds_[i]) {
      ++bucket_counts_[i];
      break;
    }
  }
  ++solve_count_;
  solve_sum_ += seconds;
}

double Metrics::Value(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.series.find(labels);
  return s == f->second.series.end() ? 0 : s->second;
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    auto help = Help().find(name);
    if (help != Help().end()) absl::StrAppend(&out, "# HELP ", name, " ", help->second, "\n");
    absl::StrAppend(&out, "# TYPE ", name, " ", family.type, "\n");
    for (const auto& [labels, value] : family.series) {
      absl::StrAppend(&out, name, LabelText(labels), " ", FormatValue(value), "\n");
    }
  }
  absl::StrAppend(&out, "# HELP phasord_solve_seconds Time to rank one RankRequest.\n",
                  "# TYPE phasord_solve_seconds histogram\n");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bucket_bounds_.size(); ++i) {
    cumulative += bucket_counts_[i];
    absl::StrAppend(&out, "phasord_solve_seconds_bucket{le=\"", FormatValue(bucket_bounds_[i]), "\"} ",
                    cumulative, "\n");
  }
  absl::StrAppend(&out, "phasord_solve_seconds_bucket{le=\"+Inf\"} ", solve_count_, "\n");
  absl::StrAppend(&out, "phasord_solve_seconds_sum ", FormatValue(solve_sum_), "\n");
  absl::StrAppend(&out, "phasord_solve_seconds_count ", solve_count_, "\n");
  return out;
}

namespace {

absl::StatusOr<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port) || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", host_port, "' is not HOST:PORT"));
  }
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::make_pair(host, static_cast<uint16_t>(port));
}

absl::StatusOr<addrinfo*> Resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res); rc != 0 || res == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cannot resolve '", host, "': ", gai_strerror(rc)));
  }
  return res;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& listen,
                                                                             const Metrics* metrics) {
  absl::StatusOr<std::pair<std::string, uint16_t>> hp = SplitHostPort(listen);
  if (!hp.ok()) return absl::InvalidArgumentError(absl::StrCat("metrics_listen: ", hp.status().message()));
  absl::StatusOr<addrinfo*> ai = Resolve(hp->first, hp->second, true);
  if (!ai.ok()) return absl::InvalidArgumentError(absl::StrCat("metrics_listen: ", ai.status().message()));
  const int fd = ::socket((*ai)->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || ::bind(fd, (*ai)->ai_addr, (*ai)->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
    const std::string err = std::strerror(errno);
    freeaddrinfo(*ai);
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(absl::StrCat("metrics_listen: cannot listen on '", listen, "': ", err));
  }
  freeaddrinfo(*ai);
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const uint16_t port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                                   : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(fd, port, metrics));
}

MetricsHttpServer::MetricsHttpServer(int fd, uint16_t port, const Metrics* metrics)
    : fd_(fd), port_(port), metrics_(metrics), thread_([this] { Serve(); }) {}

MetricsHttpServer::~MetricsHttpServer() {
  stop_ = true;
  thread_.join();
  ::close(fd_);
}

void MetricsHttpServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    // Read the request head (bounded; one client at a time, with a deadline).
    std::string request;
    char buf[1024];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
      pollfd c{client, POLLIN, 0};
      if (::poll(&c, 1, 1000) <= 0) break;
      const ssize_t n = ::recv(client, buf, sizeof(buf), 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    std::string status = "200 OK";
    std::string body;
    std::string type = "text/plain; version=0.0.4";
    if (request.rfind("GET /metrics", 0) == 0) {
      body = metrics_->Render();
    } else if (request.rfind("GET / ", 0) == 0) {
      body = "phasord: metrics at /metrics\n";
    } else {
      status = "404 Not Found";
      body = "not found\n";
    }
    const std::string response = absl::StrCat("HTTP/1.0 ", status, "\r\nContent-Type: ", type,
                                              "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
    size_t sent = 0;
    while (sent < response.size()) {
      const ssize_t n = ::send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(client);
  }
}

absl::StatusOr<std::string> HttpGet(const std::string& host_port, const std::string& path, int timeout_ms) {
  absl::StatusOr<std::pair<std::string, uint16_t>> hp = SplitHostPort(host_port);
  if (!hp.ok()) return hp.status();
  absl::StatusOr<addrinfo*> ai = Resolve(hp->first, hp->second, false);
  if (!ai.ok()) return ai.status();
  const int fd = ::socket((*ai)->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int rc = ::connect(fd, (*ai)->ai_addr, (*ai)->ai_addrlen);
  freeaddrinfo(*ai);
  if (rc != 0 && errno != EINPROGRESS) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to ", host_port, ": ", err));
  }
  pollfd p{fd, POLLOUT, 0};
  int so_error = 0;
  socklen_t len = sizeof(so_error);
  if (::poll(&p, 1, timeout_ms) <= 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0 ||
      so_error != 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to ", host_port, ": ",
                                               so_error ? std::strerror(so_error) : "timed out"));
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host_port, "\r\n\r\n");
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buf[4096];
  while (true) {
    pollfd r{fd, POLLIN, 0};
    if (::poll(&r, 1, timeout_ms) <= 0) {
      ::close(fd);
      return absl::UnavailableError(absl::StrCat(host_port, ": no complete answer within ", timeout_ms, " ms"));
    }
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t head_end = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) {
    return absl::UnavailableError(absl::StrCat(host_port, ": not an HTTP answer"));
  }
  if (response.find(" 200 ") > head_end) {
    return absl::NotFoundError(absl::StrCat(host_port, path, ": ", response.substr(0, response.find("\r\n"))));
  }
  return response.substr(head_end + 4);
}

}  // namespace phasor::daemon
