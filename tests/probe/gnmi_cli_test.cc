// `phasor profile --gnmi` and `phasor-probe --gnmi` as subprocesses against
// the tests' Python gNMI target (tests/probe/gnmi_target.py, started and
// stopped by pid on an ephemeral port of 127.0.0.1): the profiles of a
// switch's interfaces, periodic reports, publishing switch ports as links to
// a phasord running in this process (ipc:// in a temp dir), an unreachable
// target, and bad options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/daemon/daemon_harness.h"
#include "tests/probe/gnmi_target_process.h"
#include "tests/testing/subprocess.h"

namespace phasor::probe {
namespace gnmi_cli_test {
namespace {

using ::phasor::testing::CommandResult;
using ::phasor::testing::DaemonHarness;
using ::phasor::testing::RunCommand;
using testing::GnmiTargetProcess;
using ::testing::HasSubstr;
using testing::TempDir;

nlohmann::json TwoInterfaces() {
  return {{"interfaces",
           {{{"name", "Ethernet0"}, {"period_s", 0.5}, {"duty", 0.3}},
            {{"name", "Ethernet4"}, {"period_s", 0.8}, {"duty", 0.5}}}}};
}

std::vector<nlohmann::json> Lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

// A port of 127.0.0.1 nothing listens on (bound, then closed).
int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(GnmiCliTest, ProfileCommandReadsEachInterfaceDirection) {
  GnmiTargetProcess target(TwoInterfaces());
  ASSERT_GT(target.port(), 0) << target.error();
  const CommandResult r =
      RunCommand(std::string(PHASOR_BIN) + " profile --gnmi leaf1=" + target.address() +
                 " --gnmi-insecure --gnmi-sample-ms 20 --duration-s 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  std::map<std::string, nlohmann::json> by_subject;
  for (const nlohmann::json& l : lines) by_subject[l["subject"]] = l;
  const std::map<std::string, double> periods = {{"leaf1/Ethernet0/in", 0.5},
                                                 {"leaf1/Ethernet0/out", 0.5},
                                                 {"leaf1/Ethernet4/in", 0.8},
                                                 {"leaf1/Ethernet4/out", 0.8}};
  for (const auto& [subject, period] : periods) {
    ASSERT_TRUE(by_subject.contains(subject)) << r.out;
    const nlohmann::json& l = by_subject[subject];
    ASSERT_TRUE(l["periodic"].get<bool>()) << l.dump();
    EXPECT_NEAR(l["profile"]["period_us"].get<double>(), period * 1e6, 0.01 * period * 1e6);
    EXPECT_EQ(l["profile"]["bin_us"], 20000);
    EXPECT_EQ(l["source"], "gnmi:" + target.address());
    EXPECT_EQ(l["sampling"]["interval_us"], 20000);
  }
  // out-octets carry 40 Gbit/s Up phases, in-octets half of that.
  EXPECT_NEAR(by_subject["leaf1/Ethernet0/out"]["peak_gbps"].get<double>(), 40, 1);
  EXPECT_NEAR(by_subject["leaf1/Ethernet0/in"]["peak_gbps"].get<double>(), 20, 0.5);
  EXPECT_THAT(r.err, HasSubstr("phasor profile: gnmi leaf1 (" + target.address() +
                               "): 1 stream(s) in 1 attempt(s)"));
}

TEST(GnmiCliTest, ProbeReportsEveryReportSecondsAndPublishesPortsAsLinks) {
  GnmiTargetProcess target(TwoInterfaces());
  ASSERT_GT(target.port(), 0) << target.error();
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  const std::string subjects = target.dir().File("subjects.txt");
  std::ofstream(subjects) << "# switch port directions and the links they are\n"
                             "leaf1/Ethernet0/out link leaf1->spine1\n"
                             "leaf1/Ethernet4/out link leaf1->spine2\n";
  const CommandResult r =
      RunCommand(std::string(PHASOR_PROBE_BIN) + " --gnmi leaf1=" + target.address() +
                 " --gnmi-insecure --gnmi-sample-ms 20 --duration-s 4.5 --report-s 2 --publish " +
                 h.options().profile_endpoint + " --publish-subjects " + subjects);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two periodic reports and the final one, four subjects each.
  EXPECT_EQ(Lines(r.out).size(), 12u) << r.out;
  int stats_lines = 0, final_lines = 0;
  nlohmann::json summary;
  for (const nlohmann::json& l : Lines(r.err)) {
    if (l.contains("gnmi")) {
      ++stats_lines;
      final_lines += l["gnmi"]["final"].get<bool>();
      EXPECT_EQ(l["gnmi"]["targets"][0]["name"], "leaf1");
    }
    if (l.contains("publish")) summary = l["publish"];
  }
  EXPECT_EQ(stats_lines, 3) << r.err;
  EXPECT_EQ(final_lines, 1) << r.err;
  ASSERT_TRUE(summary.is_object()) << r.err;
  // The in directions are not in the table; the out ones are links.
  EXPECT_GE(summary["sent"].get<int>(), 4) << summary.dump();
  EXPECT_EQ(summary["dropped"], 0) << summary.dump();
  EXPECT_GE(summary["skipped"]["unmapped_subject"].get<int>(), 6) << summary.dump();
  ASSERT_TRUE(DaemonHarness::WaitFor([&] {
    return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "link"}}) >= 4;
  })) << h.daemon().metrics().Render();
}

TEST(GnmiCliTest, UnreachableTargetFailsWithTheReason) {
  const std::string address = "127.0.0.1:" + std::to_string(ClosedPort());
  CommandResult r = RunCommand(std::string(PHASOR_BIN) + " profile --gnmi " + address +
                               " --gnmi-insecure --duration-s 2 --gnmi-connect-timeout-s 0.5");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("phasor profile: gnmi: no interface counters: " + address + " (" +
                               address + "): no connection within 0.5 s"));
  r = RunCommand(std::string(PHASOR_PROBE_BIN) + " --gnmi " + address +
                 " --gnmi-insecure --duration-s 2 --gnmi-connect-timeout-s 0.5");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("phasor-probe: --gnmi: gnmi: no interface counters"));
}

TEST(GnmiCliTest, BadOptions) {
  TempDir dir;
  const std::string phasor = std::string(PHASOR_BIN) + " profile ";
  const std::string probe = std::string(PHASOR_PROBE_BIN) + " ";
  struct Case {
    std::string command, error;
  };
  const std::vector<Case> cases = {
      {phasor + "--gnmi nohost",
       "phasor profile: --gnmi: gNMI target 'nohost': expected [NAME=]HOST:PORT\n"},
      {phasor + "--gnmi h:1 --gnmi-sample-ms 0",
       "phasor profile: --gnmi-sample-ms: 0 is outside 1 .. 3600000\n"},
      {phasor + "--gnmi h:1 --gnmi-password-file " + dir.File("none"),
       "phasor profile: --gnmi-password-file: cannot read '" + dir.File("none") + "'\n"},
      {phasor + "--gnmi h:1 --gnmi-insecure --gnmi-ca " + dir.File("ca.pem"),
       "phasor profile: --gnmi-insecure: --gnmi-ca, --gnmi-cert, --gnmi-key and "
       "--gnmi-server-name need TLS\n"},
      {phasor + "--gnmi h:1 --gnmi-ca " + dir.File("ca.pem"),
       "phasor profile: CA file: cannot read '" + dir.File("ca.pem") + "'\n"},
      {phasor + "--gnmi h:1 --gnmi-path '/interfaces/interface[name=*'",
       "phasor profile: gNMI path '/interfaces/interface[name=*': a '[' without its ']'\n"},
      {"PHASOR_GNMI_PASSWORD=x " + phasor + "--gnmi h:1",
       "phasor profile: --gnmi-user: a password (--gnmi-password-file or PHASOR_GNMI_PASSWORD) "
       "needs a username\n"},
      {phasor + "--gnmi h:1 --duration-s 0", "phasor profile: --duration-s: must be positive\n"},
      {probe + "--gnmi h:1 -- --no-huge",
       "phasor-probe: --gnmi takes no EAL arguments (nothing after '--')\n"},
      {probe + "--gnmi h:1 --flows " + dir.File("flows"),
       "phasor-probe: --flows, --placements-from, --publish-link and --tcp-udp are for packet "
       "capture, not --gnmi\n"},
      {probe + "--gnmi h:1 --publish ipc://" + dir.File("x"),
       "phasor-probe: --publish with --gnmi needs --publish-subjects (switch ports are not job or "
       "link ids)\n"},
      {probe + "--gnmi h:1 --window-s 0", "phasor-probe: --window-s: must be positive\n"},
      {probe + "--publish-subjects " + dir.File("s") + " -- --no-huge",
       "phasor-probe: --publish-subjects is for --gnmi (captured jobs come from --flows)\n"},
  };
  for (const Case& c : cases) {
    const CommandResult r = RunCommand(c.command);
    EXPECT_EQ(r.exit_code, 2) << c.command << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.command;
    EXPECT_EQ(r.err, c.error) << c.command;
  }
  // Two sources at once: CLI11 refuses before anything runs.
  const CommandResult r = RunCommand(phasor + "--gnmi h:1 --switch-csv x.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("excludes"));
}

}  // namespace
}  // namespace gnmi_cli_test
}  // namespace phasor::probe
