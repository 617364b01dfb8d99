// `phasor diagnose`: which jobs collide on each contended link of a
// placement, when in their iterations, what it costs, and the shifts that fix
// it (diagnose/diagnosis.h; docs/diagnose.md). Inputs, exactly one of:
//
//   phasor diagnose --rank-input FILE [--candidate ID] [--topology FILE]
//   phasor diagnose --profiles FILE --placement FILE --topology FILE
//   phasor diagnose --pcap FILE | --counters DIR | --switch-csv FILE... | --netdev IF[,IF]
//                   --placement FILE --topology FILE
//   phasor diagnose --phasord ENDPOINT [--timeout-ms N] [--curve-* FILE]
//
// Output: the table on stdout (or --format json), and with --html FILE the
// self-contained HTML report. Bad input: one line on stderr naming the file
// and field, exit 2, nothing on stdout and no HTML file written.
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "cmd/phasor/commands.h"
#include "cmd/phasor/profile_sources.h"
#include "diagnose/diagnosis.h"
#include "diagnose/inputs.h"
#include "diagnose/report.h"
#include "integrations/client/client.h"
#include "placer/rank_json.h"
#include "protocol/convert.h"
#include "protocol/curve_keys.h"

namespace phasor::cmd {
namespace {

struct DiagnoseFlags {
  std::string rank_input;
  std::string candidate;
  std::string profiles;
  std::string placement;
  std::string topology;
  ProfileSourceFlags measure;
  std::string phasord;
  int timeout_ms = 5000;
  std::string curve_server_public;
  std::string curve_client_public;
  std::string curve_client_secret;
  std::string format = "table";
  bool detail = false;
  int width = 72;
  std::string html;
  std::string link;
  double up_threshold = 0.1;
};

[[noreturn]] void FailDiagnose(int code, const std::string& message) {
  FailCommand("diagnose", code, message);
}

template <typename T>
T ValueOrFail(absl::StatusOr<T> r) {
  if (!r.ok()) {
    const bool bad_input = r.status().code() == absl::StatusCode::kInvalidArgument ||
                           r.status().code() == absl::StatusCode::kNotFound;
    FailDiagnose(bad_input ? kExitBadInput : kExitFailure, std::string(r.status().message()));
  }
  return *std::move(r);
}

void OkOrFail(const absl::Status& s) {
  if (!s.ok()) ValueOrFail(absl::StatusOr<int>(s));
}

// The placement (and its profiles) as a request with one candidate, where it
// came from, and phasord's scheduled iteration starts (phase references).
struct Loaded {
  placer::RankRequest request;
  std::string source;
  std::map<std::string, int64_t> committed_start_epoch_us;
};

// The committed placement of a running phasord.
Loaded FromPhasord(const DiagnoseFlags& f) {
  client::ClientOptions o;
  o.endpoint = f.phasord;
  o.timeout_ms = f.timeout_ms;
  o.curve = ValueOrFail(protocol::LoadCurveClientKeyFiles({"--curve-server-public", f.curve_server_public},
                                                          {"--curve-client-public", f.curve_client_public},
                                                          {"--curve-client-secret", f.curve_client_secret}));
  std::unique_ptr<client::Client> c = ValueOrFail(client::Client::Connect(o));
  absl::StatusOr<v1::Snapshot> snapshot = c->GetSnapshot();
  if (!snapshot.ok()) FailDiagnose(kExitFailure, std::string(snapshot.status().message()));
  const std::string where = "phasord at " + f.phasord;
  if (!snapshot->jobs_without_profile().empty()) {
    FailDiagnose(kExitFailure,
         where + ": no profile known for job '" + snapshot->jobs_without_profile(0) +
             "' (no ProfileUpdate, and no RankRequest gave one since phasord started)");
  }
  if (!snapshot->links_without_capacity().empty()) {
    FailDiagnose(kExitFailure,
         where + ": no capacity known for link '" + snapshot->links_without_capacity(0) +
             "' (phasord has no topology_path, and no RankRequest named the link since "
             "it started)");
  }
  if (snapshot->placement().jobs().empty()) FailDiagnose(kExitFailure, where + ": no placement committed");
  Loaded out;
  absl::StatusOr<placer::RankRequest> request = protocol::FromProto(snapshot->placement());
  if (!request.ok()) FailDiagnose(kExitFailure, where + ": " + std::string(request.status().message()));
  // Shares of routed placements may exceed 1 (several ring hops on a link):
  // check everything but the candidate.
  placer::RankRequest checked = *request;
  checked.candidates.clear();
  if (absl::Status s = placer::ValidateRankRequest(checked); !s.ok()) {
    FailDiagnose(kExitFailure, where + ": snapshot: " + std::string(s.message()));
  }
  out.request = *std::move(request);
  for (const v1::OffsetUpdate& u : snapshot->offsets()) {
    out.committed_start_epoch_us[u.job()] = u.origin_epoch_us() + u.shift_us();
  }
  out.source = where;
  return out;
}

Loaded LoadRequest(const DiagnoseFlags& f) {
  const int inputs =
      !f.rank_input.empty() + !f.profiles.empty() + f.measure.any() + !f.phasord.empty();
  if (inputs != 1) {
    FailDiagnose(kExitBadInput,
         "give exactly one input: --rank-input, --profiles, --phasord, or one of --pcap, "
         "--counters, --switch-csv");
  }
  if (!f.phasord.empty()) return FromPhasord(f);
  if (!f.rank_input.empty()) {
    placer::RankRequest request =
        ValueOrFail(placer::ParseRankRequest(ReadInputOrFail("diagnose", f.rank_input)));
    // Name the file in errors about its content.
    if (!f.topology.empty()) OkOrFail(diagnose::RoutePlacement(f.topology, request));
    return {std::move(request), "rank input " + f.rank_input, {}};
  }
  if (f.placement.empty()) FailDiagnose(kExitBadInput, "--placement: required with measured profiles");
  if (f.topology.empty()) FailDiagnose(kExitBadInput, "--topology: required with measured profiles");
  std::vector<diagnose::ProfileLine> lines;
  std::string profiles_name;
  if (!f.profiles.empty()) {
    profiles_name = f.profiles;
    lines = ValueOrFail(
        diagnose::ParseProfileLines(ReadInputOrFail("diagnose", f.profiles), f.profiles));
  } else {
    ProfileSourceFlags measure = f.measure;
    measure.print_stats = false;
    probe::Measurement measured = ValueOrFail(MeasureProfiles(measure));
    for (const std::string& note : measured.notes) std::cerr << "phasor diagnose: " << note << "\n";
    profiles_name = f.measure.name();
    lines = ValueOrFail(diagnose::ProfileLinesFromMeasured(measured.profiles, profiles_name));
  }
  const diagnose::Placement placement =
      ValueOrFail(diagnose::ParsePlacement(ReadInputOrFail("diagnose", f.placement), f.placement));
  placer::RankRequest request =
      ValueOrFail(diagnose::RequestFromProfiles(lines, profiles_name, placement, f.placement));
  OkOrFail(diagnose::RoutePlacement(f.topology, request));
  return {std::move(request),
          "profiles " + profiles_name + ", placement " + f.placement + ", topology " + f.topology,
          {}};
}

void RunDiagnose(const DiagnoseFlags& f) {
  if (f.format != "table" && f.format != "json") {
    FailDiagnose(kExitBadInput, "--format: must be table or json, got '" + f.format + "'");
  }
  Loaded loaded = LoadRequest(f);
  diagnose::DiagnoseOptions options;
  options.up_threshold = f.up_threshold;
  options.only_link = f.link;
  options.committed_start_epoch_us = std::move(loaded.committed_start_epoch_us);
  // Routed requests may carry shares above 1 (several ring hops on one link);
  // the inputs were validated before routing.
  const diagnose::Diagnosis diagnosis =
      ValueOrFail(diagnose::DiagnoseValidated(loaded.request, f.candidate, options));

  // Everything is rendered before anything is written.
  std::string out;
  if (f.format == "json") {
    out = diagnose::DiagnosisToJson(diagnosis).dump(2) + "\n";
  } else {
    out = diagnose::RenderTable(diagnosis, {f.detail, f.width});
  }
  if (!f.html.empty()) {
    diagnose::HtmlOptions html;
    html.source = loaded.source;
    const std::string page = diagnose::RenderHtml(diagnosis, html);
    std::ofstream file(f.html, std::ios::binary | std::ios::trunc);
    if (!(file << page) || !file.flush())
      FailDiagnose(kExitFailure, "--html: cannot write '" + f.html + "'");
  }
  std::cout << out;
}

}  // namespace

void AddDiagnoseCommand(CLI::App& app) {
  auto flags = std::make_shared<DiagnoseFlags>();
  CLI::App* cmd = app.add_subcommand(
      "diagnose",
      "Link congestion diagnosis of one placement: for each contended link the jobs on it,\n"
      "their collisions over one unified period, the score and excess bytes per hour now and\n"
      "with phasor's shifts, and the shifts. Links are listed by how much they stand to gain.");
  cmd->add_option("--rank-input", flags->rank_input,
                  "a `phasor rank` request (SPEC 5 JSON) holding the placement as a candidate; "
                  "'-' reads stdin");
  cmd->add_option("--candidate", flags->candidate,
                  "with --rank-input: the candidate to diagnose (default: the only one)");
  cmd->add_option("--profiles", flags->profiles,
                  "profile lines as `phasor profile` prints them (subject = job id, or mapped "
                  "by the placement's \"subjects\")");
  cmd->add_option("--placement", flags->placement,
                  "placement JSON {\"servers\": {job: [server, ...]}, ...} (docs/diagnose.md)");
  cmd->add_option("--topology", flags->topology,
                  "topology YAML (docs/topology.md) routing the placement's servers to links");
  AddProfileSourceOptions(cmd, flags->measure);
  cmd->add_option("--phasord", flags->phasord,
                  "a running phasord's request endpoint (e.g. tcp://127.0.0.1:7410): diagnose "
                  "its committed placement with the profiles it holds");
  cmd->add_option("--timeout-ms", flags->timeout_ms, "--phasord: how long to wait for the reply")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  cmd->add_option("--curve-server-public", flags->curve_server_public,
                  "--phasord over CURVE: phasord's public key file");
  cmd->add_option("--curve-client-public", flags->curve_client_public,
                  "--phasord over CURVE: this client's public key file (on phasord's allow-list)");
  cmd->add_option("--curve-client-secret", flags->curve_client_secret,
                  "--phasord over CURVE: this client's secret key file");
  cmd->add_option("--format", flags->format, "table (for people) or json (every number)")
      ->capture_default_str();
  cmd->add_flag("--detail", flags->detail,
                "table: also draw each link's load over one unified period, now and with phasor");
  cmd->add_option("--width", flags->width, "columns of the --detail drawings")
      ->check(CLI::Range(16, 400))
      ->capture_default_str();
  cmd->add_option("--html", flags->html, "also write the self-contained HTML report to FILE");
  cmd->add_option("--link", flags->link, "diagnose this contended link only");
  cmd->add_option("--up-threshold", flags->up_threshold,
                  "a bin is drawn as Up when its demand exceeds the job's minimum by this fraction "
                  "of its swing (peak - minimum)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  cmd->callback([flags] { RunDiagnose(*flags); });
}

}  // namespace phasor::cmd
