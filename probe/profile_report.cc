#include "probe/profile_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace phasor::probe {

absl::StatusOr<FlowJobTable> FlowJobTable::Parse(const std::string& text, const std::string& name) {
  FlowJobTable table;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.empty()) continue;
    const std::string where = absl::StrCat("flow table '", name, "' line ", line_no, ": ");
    if (f.size() < 3 || f.size() > 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "want '<job> <src_ip|*> <dst_ip|*> [<dest_qp>|*]', got ", f.size(), " fields"));
    }
    Rule rule;
    rule.job = f[0];
    for (int i = 1; i <= 2; ++i) {
      if (f[i] == "*") continue;
      std::array<uint8_t, 16> ip;
      if (!ParseIp(f[i], &ip)) {
        return absl::InvalidArgumentError(absl::StrCat(where, i == 1 ? "src_ip" : "dst_ip", ": '",
                                                       f[i], "' is not an IP address"));
      }
      (i == 1 ? rule.src : rule.dst) = ip;
    }
    if (f.size() == 4 && (f[3].starts_with("tcp") || f[3].starts_with("udp"))) {
      const std::string t = f[3].substr(0, 3);
      rule.transport = t == "tcp" ? Transport::kTcp : Transport::kUdp;
      if (f[3].size() > 3) {
        uint32_t port = 0;
        if (f[3][3] != ':' || !absl::SimpleAtoi(f[3].substr(4), &port) || port == 0 ||
            port > 65535) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "transport: '", f[3], "' is not ", t, " or ", t, ":<port 1-65535>"));
        }
        rule.port = static_cast<uint16_t>(port);
      }
    } else if (f.size() == 4 && f[3] != "*") {
      uint32_t qp = 0;
      const bool hex = f[3].starts_with("0x") || f[3].starts_with("0X");
      const bool ok = hex ? absl::SimpleHexAtoi(f[3].substr(2), &qp) : absl::SimpleAtoi(f[3], &qp);
      if (!ok || qp > 0xffffff) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "dest_qp: '", f[3], "' is not a 24-bit queue pair number"));
      }
      rule.qp = qp;
    }
    table.rules_.push_back(std::move(rule));
  }
  return table;
}

absl::StatusOr<ServerAddresses> ServerAddresses::Parse(const std::string& text,
                                                      const std::string& name) {
  ServerAddresses out;
  std::istringstream in(text);
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string server;
    if (!(fields >> server)) continue;
    const std::string where = absl::StrCat("servers '", name, "' line ", line_no, ": ");
    if (out.ips.contains(server)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "server '", server, "' is given twice"));
    }
    auto& ips = out.ips[server];
    for (std::string word; fields >> word;) {
      std::array<uint8_t, 16> ip;
      if (!ParseIp(word, &ip)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "ip: '", word, "' is not an IP address"));
      }
      ips.push_back(ip);
    }
    if (ips.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "want '<server> <ip> [<ip>...]', server '", server, "' has no ip"));
    }
  }
  return out;
}

absl::StatusOr<FlowJobTable> FlowJobTable::FromPlacement(
    const std::map<std::string, std::vector<std::string>>& job_servers,
    const ServerAddresses& addresses) {
  FlowJobTable table;
  for (const auto& [job, servers] : job_servers) {
    for (const std::string& server : servers) {
      if (!addresses.ips.contains(server)) {
        return absl::InvalidArgumentError(
            absl::StrCat("job '", job, "': server '", server, "' has no address"));
      }
    }
    for (const std::string& a : servers) {
      for (const std::string& b : servers) {
        if (a == b) continue;
        for (const auto& ip_a : addresses.ips.at(a)) {
          for (const auto& ip_b : addresses.ips.at(b)) {
            Rule rule;
            rule.job = job;
            rule.src = ip_a;
            rule.dst = ip_b;
            table.rules_.push_back(std::move(rule));
          }
        }
      }
    }
  }
  return table;
}

FlowJobTable FlowJobTable::Concat(const FlowJobTable& first, const FlowJobTable& then) {
  FlowJobTable table = first;
  table.rules_.insert(table.rules_.end(), then.rules_.begin(), then.rules_.end());
  return table;
}

absl::StatusOr<FlowJobTable> FlowJobTable::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("flow table '", path, "': cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

std::vector<std::string> FlowJobTable::Jobs() const {
  std::vector<std::string> jobs;
  for (const Rule& r : rules_) jobs.push_back(r.job);
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  return jobs;
}

std::string FlowJobTable::JobOf(const FlowKey& key) const {
  for (const Rule& r : rules_) {
    if (r.src && *r.src != key.src) continue;
    if (r.dst && *r.dst != key.dst) continue;
    if (r.qp && (key.transport != Transport::kRoce || *r.qp != key.dest_qp)) continue;
    if (r.transport && *r.transport != key.transport) continue;
    if (r.port && *r.port != key.src_port && *r.port != key.dst_port) continue;
    return r.job;
  }
  return "";
}

std::vector<SubjectSeries> GroupBySubject(const std::vector<FlowSeries>& flows,
                                          const FlowJobTable& table) {
  std::map<std::string, SubjectSeries> by;
  for (const FlowSeries& f : flows) {
    std::string subject = table.JobOf(f.key);
    if (subject.empty()) subject = FlowKeyString(f.key);
    auto [it, inserted] = by.try_emplace(subject);
    SubjectSeries& s = it->second;
    if (inserted) {
      s.subject = subject;
      s.series.t0_epoch_us = f.t0_epoch_us;
      s.series.bin_us = f.bin_us;
      s.series.bytes.assign(f.bytes.size(), 0.0);
    }
    if (s.series.bytes.size() < f.bytes.size()) s.series.bytes.resize(f.bytes.size(), 0.0);
    for (size_t i = 0; i < f.bytes.size(); ++i) s.series.bytes[i] += f.bytes[i];
  }
  std::vector<SubjectSeries> out;
  for (auto& [name, s] : by) out.push_back(std::move(s));
  return out;
}

nlohmann::json ProfileJson(const std::string& subject, const std::string& source,
                           const ExtractedProfile& p) {
  auto round6 = [](double x) { return std::round(x * 1e6) / 1e6; };
  nlohmann::json j;
  j["subject"] = subject;
  j["source"] = source;
  j["periodic"] = p.periodic;
  if (p.periodic) {
    nlohmann::json gbps = nlohmann::json::array();
    for (double g : p.gbps) gbps.push_back(round6(g));
    j["profile"] = {{"period_us", p.period_us},
                    {"bin_us", p.bin_us},
                    {"gbps", gbps},
                    {"t0_epoch_us", p.t0_epoch_us}};
    j["up_fraction"] = round6(p.up_fraction);
    j["peak_gbps"] = round6(p.peak_gbps);
  } else {
    j["reason"] = p.reason;
  }
  j["confidence"] = round6(p.confidence);
  j["mean_gbps"] = round6(p.mean_gbps);
  return j;
}

nlohmann::json ProfileJson(const MeasuredProfile& m) {
  nlohmann::json j = ProfileJson(m.subject, m.source, m.extracted);
  if (m.sampling) {
    auto round1 = [](double x) { return std::round(x * 10) / 10; };
    j["sampling"] = {{"interval_us", m.sampling->interval_us},
                     {"reads", m.sampling->reads},
                     {"late", m.sampling->late},
                     {"jitter_mean_us", round1(m.sampling->jitter_mean_us)},
                     {"jitter_p99_us", round1(m.sampling->jitter_p99_us)},
                     {"jitter_max_us", round1(m.sampling->jitter_max_us)}};
  }
  return j;
}

nlohmann::json StatsJson(const ProbeStats& stats, const CaptureStats& capture, bool final) {
  nlohmann::json kinds = nlohmann::json::object();
  for (int k = 0; k < kPacketKinds; ++k) {
    kinds[PacketKindName(static_cast<PacketKind>(k))] = stats.by_kind[k];
  }
  static constexpr const char* kClasses[] = {"rc", "uc", "rd", "ud", "cnp", "xrc", "other"};
  nlohmann::json classes = nlohmann::json::object();
  for (int c = 0; c < 7; ++c) classes[kClasses[c]] = stats.by_opcode_class[c];
  nlohmann::json j;
  j["stats"] = {
      {"final", final},
      {"packets", stats.packets},
      {"pps", capture.elapsed_s > 0 ? std::round(capture.packets / capture.elapsed_s) : 0.0},
      {"dropped", capture.dropped},
      {"roce_bytes", stats.roce_bytes},
      {"tcp_udp_bytes", stats.tcp_udp_bytes},
      {"kinds", kinds},
      {"opcode_classes", classes},
      {"snapped", stats.snapped},
      {"late", stats.late},
      {"table_full", stats.table_full}};
  return j;
}

}  // namespace phasor::probe
