// `phasor profile`: traffic profiles (SPEC section 2) measured from the
// network, one JSON object per line and subject (flow/job, NIC port, switch
// port), in the format of probe/profile_report.h. Each periodic subject's
// "profile" member can be pasted into `jobs[].profile` of `phasor rank`.
// The measuring is shared with `phasor diagnose` (profile_sources.h).
// With --publish the periodic profiles also go to phasord as ProfileUpdates,
// as phasor-probe's do: jobs by the --flows table's names, NIC and switch
// ports by a --publish-subjects table (a port is not a job or link id).
//
//   phasor profile --pcap FILE [--flows TABLE] [-- <EAL arguments>]
//   phasor profile --counters DIR
//   phasor profile --switch-csv FILE...
//   phasor profile --netdev IF[,IF...] [--interval-ms 10 --duration-s 10]
//   phasor profile --gnmi [NAME=]HOST:PORT[,...] [--gnmi-* options] [--duration-s 10]
//   ... --publish ENDPOINT [--publish-subjects TABLE] [--publish-server-key F --publish-keys P]
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cmd/phasor/commands.h"
#include "cmd/phasor/profile_sources.h"
#include "integrations/client/profile_publisher.h"
#include "probe/profile_report.h"
#include "probe/subject_table.h"

namespace phasor::cmd {
namespace {

struct PublishFlags {
  client::PublisherOptions publisher;
  std::string server_key, keys, subjects;
};

// A measured subject published under this kind and id.
using SubjectTable = std::map<std::string, std::pair<v1::ProfileUpdate::SubjectKind, std::string>>;

[[noreturn]] void FailProfile(int code, const std::string& message) {
  FailCommand("profile", code, message);
}

// --publish-subjects: lines "<measured subject> job|link <id>", '#' comments.
SubjectTable ReadSubjects(const std::string& path) {
  auto parsed = probe::LoadSubjectTable(path);
  if (!parsed.ok()) {
    const std::string message(parsed.status().message());
    FailProfile(kExitBadInput,
                message.starts_with("cannot read") ? "--publish-subjects: " + message : message);
  }
  SubjectTable table;
  for (const auto& [subject, to] : *parsed) {
    table[subject] = {to.link ? v1::ProfileUpdate::LINK : v1::ProfileUpdate::JOB, to.id};
  }
  return table;
}

// The ProfileUpdate of a periodic measured subject, with the values the
// JSON line shows (rounded to 1e-6).
v1::ProfileUpdate UpdateOf(const probe::MeasuredProfile& m, v1::ProfileUpdate::SubjectKind kind,
                           const std::string& id) {
  auto round6 = [](double x) { return std::round(x * 1e6) / 1e6; };
  const probe::ExtractedProfile& p = m.extracted;
  v1::ProfileUpdate u;
  u.set_subject(id);
  u.set_kind(kind);
  u.set_period_us(p.period_us);
  u.set_bin_us(p.bin_us);
  for (double g : p.gbps) u.add_gbps(round6(g));
  u.set_t0_epoch_us(p.t0_epoch_us);
  u.set_confidence(round6(p.confidence));
  u.set_source(m.source);
  return u;
}

// What --publish needs, checked before anything is measured: the subject
// table and a publisher (a bad endpoint, key or table fails the command with
// nothing printed).
struct Publishing {
  SubjectTable subjects;
  std::unique_ptr<client::ProfilePublisher> publisher;
  std::string endpoint;
};

Publishing PreparePublishing(const ProfileSourceFlags& source, const PublishFlags& flags) {
  Publishing out;
  if (!flags.subjects.empty()) {
    out.subjects = ReadSubjects(flags.subjects);
  } else {
    auto table = probe::FlowJobTable::Load(source.flows);
    if (!table.ok()) FailProfile(kExitBadInput, std::string(table.status().message()));
    for (const std::string& job : table->Jobs()) out.subjects[job] = {v1::ProfileUpdate::JOB, job};
  }
  client::PublisherOptions options = flags.publisher;
  options.program = "phasor profile";
  if (!flags.server_key.empty() || !flags.keys.empty()) {
    auto keys = client::LoadPublishKeys(flags.server_key, flags.keys);
    if (!keys.ok()) FailProfile(kExitBadInput, std::string(keys.status().message()));
    options.curve = *keys;
  }
  auto publisher = client::ProfilePublisher::Create(options, std::cerr);
  if (!publisher.ok()) FailProfile(kExitBadInput, std::string(publisher.status().message()));
  out.publisher = *std::move(publisher);
  out.endpoint = options.endpoint;
  return out;
}

// Sends the periodic lines whose subject the table names; says what happened
// on stderr, and fails the command when phasord did not take them all.
void Publish(const std::vector<probe::MeasuredProfile>& profiles, Publishing& p) {
  for (const probe::MeasuredProfile& m : profiles) {
    auto it = p.subjects.find(m.subject);
    if (it == p.subjects.end()) {
      p.publisher->Skip("unmapped_subject");
    } else if (!m.extracted.periodic) {
      p.publisher->Skip("not_periodic");
    } else {
      p.publisher->Publish(UpdateOf(m, it->second.first, it->second.second));
    }
  }
  std::cerr << p.publisher->SummaryJson().dump() << "\n";
  if (p.publisher->dropped() > 0) {
    FailProfile(kExitFailure, absl::StrCat("--publish: ", p.publisher->dropped(),
                                           " profile(s) not delivered to phasord at ", p.endpoint));
  }
}

}  // namespace

void AddProfileCommand(CLI::App& app) {
  auto flags = std::make_shared<ProfileSourceFlags>();
  auto publish = std::make_shared<PublishFlags>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Measure traffic profiles (period, per-phase Gbit/s, confidence) from a pcap capture\n"
      "(through DPDK), RDMA NIC counters (sysfs), switch port counter CSV files, Linux\n"
      "interface counters (/sys/class/net), or switch interface counters streamed over gNMI.\n"
      "Prints one\n"
      "JSON object per subject and line; its \"profile\" fits `phasor rank` jobs[].profile.\n"
      "With --publish, also sends the periodic ones to phasord.");
  AddProfileSourceOptions(cmd, *flags);
  cmd->add_option(
      "--publish", publish->publisher.endpoint,
      "also send the periodic profiles to phasord's profile_endpoint as ProfileUpdates "
      "(tcp://HOST:PORT or ipc://PATH; plain only for ipc:// and loopback, else CURVE keys)");
  cmd->add_option(
      "--publish-subjects", publish->subjects,
      "table of what to publish: lines '<measured subject> job|link <id>' (e.g. "
      "'mlx5_0/1/tx job resnet'); without it, --pcap publishes the --flows table's jobs");
  cmd->add_option("--publish-server-key", publish->server_key,
                  "phasord's CURVE public key file (with --publish-keys)");
  cmd->add_option(
      "--publish-keys", publish->keys,
      "this client's CURVE key pair PREFIX.pub/PREFIX.secret from `phasor keygen --out PREFIX`");
  cmd->add_option("--publish-timeout-ms", publish->publisher.send_timeout_ms,
                  "longest wait of one send (default 100)");
  cmd->callback([flags, publish] {
    const bool publishing = !publish->publisher.endpoint.empty();
    if (!publishing &&
        (!publish->subjects.empty() || !publish->server_key.empty() || !publish->keys.empty())) {
      FailProfile(kExitBadInput,
                  "--publish-subjects, --publish-server-key and --publish-keys need --publish");
    }
    if (publishing && publish->subjects.empty() && (flags->pcap.empty() || flags->flows.empty())) {
      FailProfile(
          kExitBadInput,
          "--publish needs --publish-subjects to name what the measured subjects are (NIC and "
          "switch "
          "ports, and flows without a --flows table, are not job or link ids)");
    }
    std::optional<Publishing> publishing_to;
    if (publishing) publishing_to.emplace(PreparePublishing(*flags, *publish));
    absl::StatusOr<probe::Measurement> measured = MeasureProfiles(*flags);
    if (!measured.ok()) {
      FailProfile(ExitCodeOf(measured.status()), std::string(measured.status().message()));
    }
    for (const std::string& note : measured->notes) std::cerr << "phasor profile: " << note << "\n";
    for (const probe::MeasuredProfile& m : measured->profiles) {
      std::cout << probe::ProfileJson(m).dump() << "\n";
    }
    std::cout.flush();
    if (publishing_to) Publish(measured->profiles, *publishing_to);
  });
}

}  // namespace phasor::cmd
