#include "cmd/phasor-probe/gnmi_mode.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <thread>

#include "nlohmann/json.hpp"
#include "probe/gnmi_source.h"
#include "probe/measure.h"
#include "probe/profile_report.h"
#include "probe/subject_table.h"

namespace phasor::cmd {
namespace {

nlohmann::json StatsJson(const std::vector<probe::GnmiTargetStats>& stats, bool final) {
  nlohmann::json targets = nlohmann::json::array();
  for (const probe::GnmiTargetStats& s : stats) {
    targets.push_back({{"name", s.name},
                       {"address", s.address},
                       {"attempts", s.attempts},
                       {"streams", s.streams},
                       {"failures", s.failures},
                       {"notifications", s.notifications},
                       {"readings", s.readings},
                       {"out_of_order", s.out_of_order},
                       {"duplicates", s.duplicates},
                       {"conflicts", s.conflicts},
                       {"wraps", s.wraps},
                       {"resets", s.resets},
                       {"bad_values", s.bad_values},
                       {"other_leaves", s.other_leaves},
                       {"unattributed", s.unattributed},
                       {"trimmed", s.trimmed},
                       {"gave_up", s.gave_up},
                       {"last_error", s.last_error}});
  }
  return {{"gnmi", {{"targets", targets}, {"final", final}}}};
}

}  // namespace

int RunGnmiProbe(const GnmiProbeOptions& o, const std::atomic<bool>& interrupted, std::ostream& out,
                 std::ostream& err) {
  auto bad = [&](const std::string& message) {
    err << "phasor-probe: " << message << "\n";
    return 2;
  };
  if (!(o.report_s >= 0) || !(o.duration_s >= 0)) {
    return bad("--report-s and --duration-s: must not be negative");
  }
  if (!(o.window_s > 0)) return bad("--window-s: must be positive");
  auto options = GnmiOptionsFromFlags(o.gnmi, o.duration_s);
  if (!options.ok()) return bad(std::string(options.status().message()));
  options->window_us = std::llround(o.window_s * 1e6);
  // Publishing: the subject table says what each interface direction is.
  probe::SubjectTable subjects;
  std::unique_ptr<client::ProfilePublisher> publisher;
  if (!o.publish.endpoint.empty()) {
    if (o.publish_subjects.empty()) {
      return bad(
          "--publish with --gnmi needs --publish-subjects (switch ports are not job or link ids)");
    }
    auto table = probe::LoadSubjectTable(o.publish_subjects);
    if (!table.ok()) return bad("--publish-subjects: " + std::string(table.status().message()));
    subjects = *std::move(table);
    client::PublisherOptions p = o.publish;
    if (!o.publish_server_key.empty() || !o.publish_keys.empty()) {
      auto keys = client::LoadPublishKeys(o.publish_server_key, o.publish_keys);
      if (!keys.ok()) return bad(std::string(keys.status().message()));
      p.curve = *keys;
    }
    auto created = client::ProfilePublisher::Create(p, err);
    if (!created.ok()) return bad(std::string(created.status().message()));
    publisher = *std::move(created);
  } else if (!o.publish_subjects.empty()) {
    return bad("--publish-subjects needs --publish");
  }
  auto collector = probe::GnmiCollector::Start(*options);
  if (!collector.ok()) {
    err << "phasor-probe: --gnmi: " << collector.status().message() << "\n";
    return collector.status().code() == absl::StatusCode::kInvalidArgument ||
                   collector.status().code() == absl::StatusCode::kNotFound
               ? 2
               : 1;
  }
  probe::MeasureOptions measure;
  measure.extract = o.extract;
  bool reported_any = false;
  auto report = [&](bool final) {
    const probe::CounterCollection snapshot = (*collector)->Snapshot();
    if (snapshot.series.empty()) {
      err << StatsJson((*collector)->Stats(), final).dump() << "\n";
      return;
    }
    auto measured = probe::MeasureCollection(snapshot, measure);
    if (!measured.ok()) {
      err << "phasor-probe: --gnmi: " << measured.status().message() << "\n";
      return;
    }
    reported_any = true;
    for (const probe::MeasuredProfile& m : measured->profiles) {
      out << probe::ProfileJson(m).dump() << "\n";
      if (publisher == nullptr) continue;
      auto it = subjects.find(m.subject);
      if (it == subjects.end()) {
        publisher->Skip("unmapped_subject");
      } else if (!m.extracted.periodic) {
        publisher->Skip("not_periodic");
      } else {
        publisher->Publish(client::ToProfileUpdate(
            it->second.id, it->second.link ? v1::ProfileUpdate::LINK : v1::ProfileUpdate::JOB,
            m.source, m.extracted));
      }
    }
    out.flush();
    err << StatsJson((*collector)->Stats(), final).dump() << "\n";
  };
  const auto start = std::chrono::steady_clock::now();
  auto next_report = start + std::chrono::microseconds(std::llround(o.report_s * 1e6));
  const auto end = start + std::chrono::microseconds(std::llround(o.duration_s * 1e6));
  while (!interrupted.load() && !(*collector)->AllGaveUp()) {
    const auto now = std::chrono::steady_clock::now();
    if (o.duration_s > 0 && now >= end) break;
    if (o.report_s > 0 && now >= next_report) {
      report(false);
      next_report += std::chrono::microseconds(std::llround(o.report_s * 1e6));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  (*collector)->Stop();
  report(true);
  for (const std::string& note : (*collector)->Snapshot().notes) {
    err << "phasor-probe: " << note << "\n";
  }
  if (publisher != nullptr) err << publisher->SummaryJson().dump() << "\n";
  if (!reported_any) {
    err << "phasor-probe: --gnmi: " << probe::GnmiNoCountersError((*collector)->Stats()).message()
        << "\n";
    return 1;
  }
  return 0;
}

}  // namespace phasor::cmd
