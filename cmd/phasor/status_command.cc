// `phasor status`: reads phasord's Prometheus metrics endpoint and prints a
// summary (or the raw text with --raw).
#include <httplib.h>

#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cmd/phasor/commands.h"

namespace phasor::cmd {
namespace {

// GET http://HOST:PORT/metrics. InvalidArgument for an address that is not
// HOST:PORT, Unavailable when nothing answers in time, NotFound for a
// non-200 answer.
absl::StatusOr<std::string> FetchMetrics(const std::string& host_port, int timeout_ms) {
  const size_t colon = host_port.rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port) || port == 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics: '", host_port, "' is not HOST:PORT"));
  }
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  httplib::Client client(host, static_cast<int>(port));
  client.set_connection_timeout(timeout_ms / 1000, (timeout_ms % 1000) * 1000);
  client.set_read_timeout(timeout_ms / 1000, (timeout_ms % 1000) * 1000);
  httplib::Result res = client.Get("/metrics");
  if (!res) {
    return absl::UnavailableError(absl::StrCat("cannot connect to ", host_port, ": ", httplib::to_string(res.error())));
  }
  if (res->status != 200) return absl::NotFoundError(absl::StrCat(host_port, "/metrics: HTTP ", res->status));
  return res->body;
}

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses `name{k="v",...} value` lines; comments and malformed lines are skipped.
std::vector<Sample> ParseMetrics(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') s.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string key;
        while (i < line.size() && line[i] != '=') key += line[i++];
        i += 2;  // ="
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) ++i;
          value += line[i++];
        }
        ++i;  // closing quote
        if (i < line.size() && line[i] == ',') ++i;
        s.labels[key] = value;
      }
      ++i;
    }
    if (!absl::SimpleAtod(line.substr(std::min(i, line.size())), &s.value)) continue;
    out.push_back(s);
  }
  return out;
}

std::string Labels(const Sample& s, const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& k : keys) {
    auto it = s.labels.find(k);
    if (it == s.labels.end()) continue;
    if (!out.empty()) out += " ";
    out += it->second;
  }
  return out;
}

}  // namespace

void AddStatusCommand(CLI::App& app) {
  struct Flags {
    std::string metrics = "127.0.0.1:9464";
    bool raw = false;
    int timeout_ms = 2000;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("status", "Show a running phasord's state from its metrics endpoint.");
  sub->add_option("--metrics,-m", flags->metrics, "phasord's metrics_listen address (HOST:PORT)")->capture_default_str();
  sub->add_flag("--raw", flags->raw, "print the Prometheus text as served");
  sub->add_option("--timeout-ms", flags->timeout_ms, "how long to wait for phasord")->capture_default_str();
  sub->callback([flags] {
    absl::StatusOr<std::string> text = FetchMetrics(flags->metrics, flags->timeout_ms);
    if (!text.ok()) {
      std::cerr << "phasor status: " << text.status().message() << "\n";
      throw CLI::RuntimeError(absl::IsInvalidArgument(text.status()) ? kExitBadInput : kExitFailure);
    }
    if (flags->raw) {
      std::cout << *text;
      return;
    }
    const std::vector<Sample> samples = ParseMetrics(*text);
    double up = 0, jobs = 0, solves = 0, solve_sum = 0;
    for (const Sample& s : samples) {
      if (s.name == "phasord_up") up = s.value;
      if (s.name == "phasord_jobs") jobs = s.value;
      if (s.name == "phasord_solve_seconds_count") solves = s.value;
      if (s.name == "phasord_solve_seconds_sum") solve_sum = s.value;
    }
    std::cout << absl::StrFormat("phasord at %s: %s\n", flags->metrics, up == 1 ? "up" : "not reporting up");
    std::cout << absl::StrFormat("  jobs with offsets  %.0f\n", jobs);
    std::cout << absl::StrFormat("  rankings solved    %.0f (mean %.3f ms)\n", solves,
                                 solves > 0 ? solve_sum / solves * 1e3 : 0.0);
    auto section = [&](const std::string& title, const std::string& name, const std::vector<std::string>& keys,
                       const char* format) {
      bool any = false;
      for (const Sample& s : samples) {
        if (s.name != name) continue;
        if (!any) std::cout << "  " << title << "\n";
        any = true;
        std::cout << absl::StrFormat("    %-40s ", Labels(s, keys)) << absl::StrFormat(format, s.value) << "\n";
      }
    };
    section("requests", "phasord_requests_total", {"type"}, "%.0f");
    section("errors", "phasord_errors_total", {"type", "code"}, "%.0f");
    section("link scores", "phasord_link_score", {"link", "source"}, "%.4f");
    section("re-alignments", "phasord_realignments_total", {"job"}, "%.0f");
    section("CURVE refusals", "phasord_curve_refused_total", {}, "%.0f");
  });
}

}  // namespace phasor::cmd
