// End-to-end tests of `phasor diagnose` (the executable, as a user runs it),
// one per kind of input, and its errors.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "diagnose/diagnosis.h"
#include "diagnose/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integrations/client/client.h"
#include "nlohmann/json.hpp"
#include "placer/rank_json.h"
#include "protocol/curve_keys.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/probe/synthetic_pcap.h"
#include "tests/testing/subprocess.h"

namespace phasor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunCommand;
using ::testing::StartsWith;

const std::string kPhasor = PHASOR_BINARY;
const std::string kExample = std::string(PHASOR_SOURCE_DIR) + "/data/examples/diagnose.json";
const char kEal[] = " -- --no-huge --no-shconf -m 256 --no-pci --no-telemetry --log-level=error";

// Two leaves of two servers under one spine; every link `gbps`.
std::string Topology(double gbps) {
  std::string y = "servers:\n";
  for (const char* s : {"s1", "s2", "s3", "s4"}) {
    y += std::string("  - {id: ") + s +
         ", gpus: 8, nics: [{name: nic0, gbps: " + std::to_string(gbps) + "}]}\n";
  }
  y += "switches: [leaf1, leaf2, spine1]\nlinks:\n";
  y += "  - {a: s1, b: leaf1, nic: nic0}\n  - {a: s2, b: leaf1, nic: nic0}\n";
  y += "  - {a: s3, b: leaf2, nic: nic0}\n  - {a: s4, b: leaf2, nic: nic0}\n";
  y += "  - {a: leaf1, b: spine1, capacity_gbps: " + std::to_string(gbps) + "}\n";
  y += "  - {a: leaf2, b: spine1, capacity_gbps: " + std::to_string(gbps) + "}\n";
  return y;
}

class DiagnoseCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / ("phasor_diag_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }

  fs::path dir_;
};

TEST_F(DiagnoseCommandTest, RankInputTableJsonAndHtmlMatchTheLibrary) {
  const auto request = placer::ParseRankRequest(testing::ReadFileOrEmpty(kExample));
  ASSERT_TRUE(request.ok());
  const auto d = diagnose::Diagnose(*request, "");
  ASSERT_TRUE(d.ok());

  const std::string html = (dir_ / "report.html").string();
  const auto table = RunCommand(kPhasor + " diagnose --rank-input " + kExample + " --html " + html);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.err, "");
  EXPECT_EQ(table.out, diagnose::RenderTable(*d));
  diagnose::HtmlOptions o;
  o.source = "rank input " + kExample;
  EXPECT_EQ(testing::ReadFileOrEmpty(html), diagnose::RenderHtml(*d, o));

  const auto json = RunCommand(kPhasor + " diagnose --format json --rank-input -",
                               testing::ReadFileOrEmpty(kExample));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out),
            nlohmann::json::parse(diagnose::DiagnosisToJson(*d).dump()));
  // The placer's own numbers, through `phasor rank`.
  const auto rank = RunCommand(kPhasor + " rank " + kExample);
  ASSERT_EQ(rank.exit_code, 0);
  const auto ranked = nlohmann::json::parse(rank.out)["ranked"][0];
  const auto diag = nlohmann::json::parse(json.out);
  EXPECT_EQ(diag["achievable_score"], ranked["score"]);
  for (const auto& link : diag["links"]) {
    for (const auto& r : ranked["links"]) {
      if (r["id"] == link["id"]) {
        EXPECT_EQ(link["achievable_score"], r["score"]);
      }
    }
    for (const auto& job : link["jobs"]) {
      EXPECT_EQ(job["recommended_shift_us"], ranked["shifts_us"][job["id"].get<std::string>()]);
    }
  }
}

TEST_F(DiagnoseCommandTest, OneLinkWithDetail) {
  const auto r = RunCommand(kPhasor +
                            " diagnose --detail --width 30 --link leaf2-\\>spine2 "
                            "--rank-input " +
                            kExample);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1    leaf2->spine2"));
  EXPECT_THAT(r.out, Not(HasSubstr("leaf1->spine1    ")));
  EXPECT_THAT(r.out, HasSubstr("link leaf2->spine2 (50.0 Gbit/s): one unified period = 240.0 ms"));
}

TEST_F(DiagnoseCommandTest, ProfilesPlacementAndTopology) {
  // Two jobs, 100 ms period, 8 Gbit/s for 40 ms, measured in phase: their
  // bursts collide on every spine link of a 10 Gbit/s fabric.
  std::string lines;
  for (const char* job : {"a", "b"}) {
    std::string gbps;
    for (int k = 0; k < 10; ++k) gbps += std::string(k ? "," : "") + (k < 4 ? "8" : "0");
    lines += std::string("{\"subject\": \"") + job +
             "\", \"source\": \"test\", \"periodic\": true, \"profile\": {\"period_us\": 100000, "
             "\"bin_us\": 10000, \"gbps\": [" +
             gbps + "], \"t0_epoch_us\": 1000000}}\n";
  }
  const std::string profiles = Write("profiles.jsonl", lines);
  const std::string placement = Write(
      "placement.json", R"({"id": "now", "servers": {"a": ["s1", "s3"], "b": ["s2", "s4"]}})");
  const std::string topology = Write("fabric.yaml", Topology(10));
  const auto r = RunCommand(kPhasor + " diagnose --format json --profiles " + profiles +
                            " --placement " + placement + " --topology " + topology);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["candidate"], "now");
  ASSERT_EQ(j["links"].size(), 4u);  // both directions of both spine links
  // In phase: 16 Gbit/s on 10 for 40% of the time; interleaved: never over.
  for (const auto& link : j["links"]) {
    EXPECT_NEAR(link["current_score"].get<double>(), 1 - 0.4 * 6 / 10, 1e-12);
    EXPECT_DOUBLE_EQ(link["achievable_score"].get<double>(), 1.0);
    EXPECT_NEAR(link["excess_bytes_per_hour_before"].get<double>(), 0.4 * 6e9 / 8 * 3600, 1);
  }
  EXPECT_EQ(j["jobs"][1]["phase_source"], "t0_epoch_us");
  EXPECT_EQ(j["jobs"][1]["recommended_shift_us"].get<int>() % 100000 >= 40000, true);
}

TEST_F(DiagnoseCommandTest, PcapCaptureDirectly) {
  const std::string pcap = (dir_ / "two.pcap").string();
  ASSERT_TRUE(probe::testing::WriteTwoJobPcap(pcap, 1500).ok());
  const std::string flows = Write("flows.txt", "job-a 10.0.0.1 10.0.0.2 0x11\njob-b fd00::1 * *\n");
  const std::string placement =
      Write("placement.json", R"({"servers": {"job-a": ["s1", "s3"], "job-b": ["s2", "s4"]}})");
  // Each job sends ~34.5 Mbit/s while Up: a 50 Mbit/s fabric is contended.
  const std::string topology = Write("fabric.yaml", Topology(0.05));
  const std::string html = (dir_ / "pcap.html").string();
  const auto r = RunCommand(kPhasor + " diagnose --format json --pcap " + pcap + " --flows " +
                            flows + " --placement " + placement + " --topology " + topology +
                            " --html " + html + kEal);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["links"].size(), 4u);
  for (const auto& job : j["links"][0]["jobs"]) {
    EXPECT_EQ(job["phase_source"], "t0_epoch_us");
  }
  // Measured periods (the probe refines below one bin).
  EXPECT_NEAR(j["links"][0]["jobs"][0]["period_us"].get<double>(), 50000, 100);
  EXPECT_NEAR(j["links"][0]["jobs"][1]["period_us"].get<double>(), 80000, 100);
  EXPECT_LT(j["links"][0]["current_score"].get<double>(), 1.0);
  EXPECT_GE(j["achievable_score"].get<double>(), j["current_score"].get<double>());
  const std::string page = testing::ReadFileOrEmpty(html);
  EXPECT_THAT(page, HasSubstr("job-a"));
  EXPECT_THAT(page, HasSubstr("from profiles " + pcap));
}

TEST_F(DiagnoseCommandTest, RdmaCounterSnapshotsDirectly) {
  // Two NIC ports sampled every 25 ms for 1 s (few files: deleting them is
  // the slow part); each sends 8 Gbit/s for 50 ms of every 100 ms, b 50 ms
  // after a (already interleaved).
  const fs::path series = dir_ / "series";
  uint64_t words[2] = {0, 0};
  for (int i = 0; i <= 40; ++i) {
    const int64_t t = 1'700'000'000'000'000 + int64_t{i} * 25'000;
    for (int p = 0; p < 2; ++p) {
      const fs::path port =
          series / std::to_string(t) / ("mlx5_" + std::to_string(p)) / "ports/1/counters";
      fs::create_directories(port);
      std::ofstream(port / "port_xmit_data") << words[p] << "\n";
      const int phase = (i * 25 + (p == 1 ? 50 : 0)) % 100;
      if (phase < 50) words[p] += 8'000'000'000ULL / 8 / 40 / 4;  // 25 ms at 8 Gbit/s, 4-byte words
    }
  }
  const std::string placement = Write("placement.json",
                                      R"({"servers": {"a": ["s1", "s3"], "b": ["s2", "s4"]},
          "subjects": {"a": "mlx5_0/1/tx", "b": "mlx5_1/1/tx"}})");
  const std::string topology = Write("fabric.yaml", Topology(10));
  const auto r = RunCommand(kPhasor + " diagnose --format json --counters " + series.string() +
                            " --bin-us 25000 --placement " + placement + " --topology " + topology);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["links"].size(), 4u);
  // Coarse samples: the period is measured to about 1%, so the two jobs
  // drift against each other a little on the circle.
  EXPECT_NEAR(j["jobs"][0]["period_us"].get<double>(), 100000, 2000);
  EXPECT_EQ(j["jobs"][0]["phase_source"], "t0_epoch_us");
  EXPECT_GT(j["links"][0]["current_score"].get<double>(), 0.95);
  EXPECT_GE(j["achievable_score"].get<double>(), j["current_score"].get<double>());
}

// A running phasord (in-process, ipc://) with a committed placement: the
// diagnosis through `--phasord` is the library's on the same placement, with
// the jobs' current phases at their committed offsets.
TEST_F(DiagnoseCommandTest, RunningPhasord) {
  testing::DaemonHarness h;
  ASSERT_TRUE(h.Start());
  client::ClientOptions o;
  o.endpoint = h.options().request_endpoint;
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok());
  placer::RankRequest request = testing::SampleRankRequest();
  auto ranked = (*c)->Rank(request);
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  auto commit = (*c)->Commit(ranked->ranking_id, "c1");
  ASSERT_TRUE(commit.ok()) << commit.status();

  const std::string html = (dir_ / "phasord.html").string();
  const auto r =
      RunCommand(kPhasor + " diagnose --format json --phasord " + o.endpoint + " --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");

  placer::RankRequest expected = request;
  expected.candidates = {request.candidates[1]};
  expected.candidates[0].id = "committed";
  diagnose::DiagnoseOptions options;
  for (const v1::OffsetUpdate& u : commit->offsets()) {
    options.committed_start_epoch_us[u.job()] = u.origin_epoch_us() + u.shift_us();
  }
  auto d = diagnose::Diagnose(expected, "", options);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(nlohmann::json::parse(r.out),
            nlohmann::json::parse(diagnose::DiagnosisToJson(*d).dump()));
  // The jobs run at phasord's shifts: nothing left to gain.
  ASSERT_EQ(d->links.size(), 2u);
  for (const diagnose::LinkDiagnosis& l : d->links) {
    EXPECT_NEAR(l.gain(), 0.0, 1e-12) << l.id;
    for (const diagnose::JobOnLink& j : l.jobs) {
      EXPECT_EQ(j.phase_source, diagnose::PhaseSource::kCommitted);
    }
  }
  EXPECT_THAT(testing::ReadFileOrEmpty(html), HasSubstr("from phasord at " + o.endpoint));
}

TEST_F(DiagnoseCommandTest, RunningPhasordOverCurve) {
  // phasord on loopback TCP with CURVE only; diagnose presents a client key
  // on its allow-list, and a stranger's key gets no answer.
  const std::string keys = (dir_ / "keys").string();
  std::filesystem::create_directories(keys);
  const protocol::CurveKeyPair server = *protocol::GenerateCurveKeyPair();
  const protocol::CurveKeyPair allowed = *protocol::GenerateCurveKeyPair();
  const protocol::CurveKeyPair stranger = *protocol::GenerateCurveKeyPair();
  ASSERT_TRUE(protocol::WriteKeyPair(server, keys + "/server", false).ok());
  ASSERT_TRUE(protocol::WriteKeyPair(allowed, keys + "/client", false).ok());
  ASSERT_TRUE(protocol::WriteKeyPair(stranger, keys + "/stranger", false).ok());
  std::ofstream(keys + "/allowed") << allowed.public_key << "\n";
  testing::DaemonHarness h([&](daemon::DaemonOptions& o) { testing::UseCurveOnLoopback(o, keys); });
  ASSERT_TRUE(h.Start());
  const std::string endpoint = h.daemon().endpoints().request;
  client::ClientOptions o;
  o.endpoint = endpoint;
  o.curve = client::CurveClientKeys{server.public_key, allowed.public_key, allowed.secret_key};
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok());
  auto ranked = (*c)->Rank(testing::SampleRankRequest());
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  ASSERT_TRUE((*c)->Commit(ranked->ranking_id, "c1").ok());

  const std::string base = kPhasor + " diagnose --format json --phasord " + endpoint +
                           " --curve-server-public " + keys + "/server.pub";
  const auto r = RunCommand(base + " --curve-client-public " + keys + "/client.pub" +
                            " --curve-client-secret " + keys + "/client.secret");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json got = nlohmann::json::parse(r.out);
  EXPECT_EQ(got["candidate"], "committed");
  EXPECT_EQ(got["links"].size(), 2u);

  const auto refused = RunCommand(base + " --curve-client-public " + keys + "/stranger.pub" +
                                  " --curve-client-secret " + keys + "/stranger.secret --timeout-ms 300");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(refused.err, "phasor diagnose: phasord at " + endpoint +
                             ": no reply to GetSnapshot within 300 ms\n");
}

TEST_F(DiagnoseCommandTest, UnreachablePhasordTimesOut) {
  const std::string endpoint = "ipc://" + (dir_ / "no-phasord").string();
  const auto r = RunCommand(kPhasor + " diagnose --phasord " + endpoint + " --timeout-ms 200");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "phasor diagnose: phasord at " + endpoint +
                       ": no reply to GetSnapshot within 200 ms\n");
}

TEST_F(DiagnoseCommandTest, PhasordWithoutPlacement) {
  testing::DaemonHarness h;
  ASSERT_TRUE(h.Start());
  const std::string endpoint = h.options().request_endpoint;
  const auto r = RunCommand(kPhasor + " diagnose --phasord " + endpoint);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "phasor diagnose: phasord at " + endpoint + ": no placement committed\n");
}

struct BadInput {
  const char* name;
  const char* args;  // {dir} is the test's temp dir, {ex} the example
  const char* stderr_line;
};
// gtest shows a case by its name, not its bytes.
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

class DiagnoseCommandBadInputTest : public DiagnoseCommandTest,
                                    public ::testing::WithParamInterface<BadInput> {};

TEST_P(DiagnoseCommandBadInputTest, ExitsTwoWithOneLineAndNoOutput) {
  Write("bad.json", "{\"links\": [}");
  Write("unknown_job.json",
        R"({"links": [{"id": "l", "capacity_gbps": 10}],
            "jobs": [{"id": "a", "profile": {"period_us": 4000, "square": {"up_us": 1000, "up_gbps": 8}}}],
            "candidates": [{"id": "c", "links": {"a": {"l": 1}, "z": {"l": 1}}}]})");
  Write("profiles.jsonl",
        "{\"subject\": \"a\", \"profile\": {\"period_us\": 4000, \"bin_us\": 1000, \"gbps\": [1, "
        "0, 0, 0]}}\n");
  Write("bad_profiles.jsonl", "{\"subject\": \"a\", \"profile\": {\"period_us\": 0}}\n");
  Write("placement.json", R"({"servers": {"a": ["s1", "s3"]}})");
  Write("placement_z.json", R"({"servers": {"a": ["s1", "s3"], "z": ["s2", "s4"]}})");
  Write("fabric.yaml", Topology(10));
  std::string args = GetParam().args;
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"{dir}", dir_.string()}, {"{ex}", kExample}}) {
    for (size_t at = args.find(key); at != std::string::npos; at = args.find(key)) {
      args.replace(at, key.size(), value);
    }
  }
  std::string expected = GetParam().stderr_line;
  for (size_t at = expected.find("{dir}"); at != std::string::npos; at = expected.find("{dir}")) {
    expected.replace(at, 5, dir_.string());
  }
  const std::string html = (dir_ / "out.html").string();
  const auto r = RunCommand(kPhasor + " diagnose " + args + " --html " + html);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "") << "nothing may be printed on stdout";
  EXPECT_EQ(r.err, "phasor diagnose: " + expected + "\n");
  EXPECT_FALSE(fs::exists(html)) << "no report is written on bad input";
}

INSTANTIATE_TEST_SUITE_P(
    All, DiagnoseCommandBadInputTest,
    ::testing::Values(
        BadInput{"NoInput", "",
                 "give exactly one input: --rank-input, --profiles, --phasord, or one of --pcap, "
                 "--counters, --switch-csv"},
        BadInput{"TwoInputs", "--rank-input {ex} --profiles {dir}/profiles.jsonl",
                 "give exactly one input: --rank-input, --profiles, --phasord, or one of --pcap, "
                 "--counters, --switch-csv"},
        BadInput{"MissingFile", "--rank-input {dir}/none.json", "cannot read '{dir}/none.json'"},
        BadInput{"MalformedJson", "--rank-input {dir}/bad.json",
                 "input: malformed JSON ([json.exception.parse_error.101] parse error at line 1, "
                 "column 12: syntax error while parsing value - unexpected '}'; expected '[', "
                 "'{', or a literal)"},
        BadInput{"UnknownJobInPlacement", "--rank-input {dir}/unknown_job.json",
                 "candidate 'c': job 'z' is not defined"},
        BadInput{"UnknownCandidate", "--rank-input {ex} --candidate nope",
                 "candidate 'nope' is not in the input"},
        BadInput{"UnknownLink", "--rank-input {ex} --link nope",
                 "link 'nope' is not a contended link of candidate 'running'"},
        BadInput{"BadFormat", "--rank-input {ex} --format xml",
                 "--format: must be table or json, got 'xml'"},
        BadInput{"MissingPlacement", "--profiles {dir}/profiles.jsonl --topology {dir}/fabric.yaml",
                 "--placement: required with measured profiles"},
        BadInput{"MissingTopology",
                 "--profiles {dir}/profiles.jsonl --placement {dir}/placement.json",
                 "--topology: required with measured profiles"},
        BadInput{"TopologyFileMissing",
                 "--profiles {dir}/profiles.jsonl --placement {dir}/placement.json --topology "
                 "{dir}/none.yaml",
                 "topology: {dir}/none.yaml: cannot read the file"},
        BadInput{"BadProfileLine",
                 "--profiles {dir}/bad_profiles.jsonl --placement {dir}/placement.json "
                 "--topology {dir}/fabric.yaml",
                 "{dir}/bad_profiles.jsonl:1: profile: the profile is empty: give gbps (with "
                 "bin_us) or square"},
        BadInput{"JobWithoutProfile",
                 "--profiles {dir}/profiles.jsonl --placement {dir}/placement_z.json "
                 "--topology {dir}/fabric.yaml",
                 "{dir}/placement_z.json: servers.z: no profile for subject 'z' in "
                 "{dir}/profiles.jsonl"},
        BadInput{"PcapMissing",
                 "--pcap {dir}/none.pcap --placement {dir}/placement.json --topology "
                 "{dir}/fabric.yaml",
                 "pcap file '{dir}/none.pcap': No such file or directory"},
        BadInput{"PartialCurveKeys", "--phasord ipc://{dir}/x --curve-server-public {dir}/k",
                 "--curve-client-public: required with --curve-server-public (CURVE keys: all three files "
                 "or none)"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace phasor
