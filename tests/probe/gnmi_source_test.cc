// The gNMI counter source against a real gNMI server process: the tests'
// Python target (tests/probe/gnmi_target.py, Debian's python3-grpcio) on an
// ephemeral port of 127.0.0.1, streaming generated counters in real time.
// Each case names the fault it brings (dropped connections, out-of-order and
// duplicate updates, counter wraps and resets, a target that never sends, a
// listener that never answers, refused credentials, TLS), and every one is
// bounded in time by its duration and timeouts. The target's log of what it
// sent is the ground truth the readings are checked against.
#include "probe/gnmi_source.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "probe/gnmi.pb.h"
#include "probe/measure.h"
#include "tests/probe/gnmi_target_process.h"

namespace phasor::probe {
namespace gnmi_source_test {
namespace {

using testing::GnmiTargetProcess;
using testing::TempDir;

nlohmann::json Interface(const std::string& name, double period_s, double duty = 0.3) {
  return {
      {"name", name}, {"period_s", period_s}, {"duty", duty}, {"up_gbps", 40}, {"down_gbps", 2}};
}

GnmiOptions OptionsFor(const GnmiTargetProcess& target, int64_t duration_ms) {
  GnmiOptions o;
  o.targets = {{"t", target.address()}};
  o.insecure = true;
  o.sample_interval_us = 20000;
  o.duration_us = duration_ms * 1000;
  o.backoff_initial_us = 100000;
  o.backoff_max_us = 2000000;
  o.connect_timeout_us = 2000000;
  return o;
}

// What one Collect() from a target gave: the series (or the error), what
// the source's stream did, and what the target sent (read after stopping it).
struct Streamed {
  absl::StatusOr<CounterCollection> collection;
  std::vector<GnmiTargetStats> stats;
  std::map<std::string, std::map<int64_t, uint64_t>> sent;  // see SentSamples
};

std::map<std::string, std::map<int64_t, uint64_t>> SentSamples(const GnmiTargetProcess& target);

// Streams from `target` for `duration_ms` with OptionsFor() as `tweak`
// changes them, then stops the target.
Streamed StreamFrom(GnmiTargetProcess& target, int64_t duration_ms,
                    const std::function<void(GnmiOptions&)>& tweak = nullptr) {
  GnmiOptions o = OptionsFor(target, duration_ms);
  if (tweak) tweak(o);
  GnmiSource source(o);
  Streamed out{source.Collect(), {}, {}};
  out.stats = source.stats();
  target.Stop();
  out.sent = SentSamples(target);
  return out;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The samples the target sent, per series "<interface>/<dir>": time (us) ->
// value, unique (a resent notification is the same sample).
std::map<std::string, std::map<int64_t, uint64_t>> SentSamples(const GnmiTargetProcess& target) {
  std::map<std::string, std::map<int64_t, uint64_t>> out;
  for (const nlohmann::json& r : target.Log()) {
    if (!r.contains("if")) continue;
    out[r["if"].get<std::string>() + "/" + r["dir"].get<std::string>()]
       [r["t"].get<int64_t>() / 1000] = r["v"].get<uint64_t>();
  }
  return out;
}

std::vector<nlohmann::json> Events(const GnmiTargetProcess& target, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : target.Log()) {
    if (r.value("event", "") == kind) out.push_back(r);
  }
  return out;
}

const CounterSeries* Find(const CounterCollection& c, const std::string& subject) {
  for (const CounterSeries& s : c.series) {
    if (s.subject == subject) return &s;
  }
  return nullptr;
}

// The intervals the sent samples make: consecutive samples, their increase
// modulo 2^64 when it is a wrap, none across a reset.
std::vector<CounterInterval> Expected(const std::map<int64_t, uint64_t>& samples) {
  std::vector<CounterInterval> out;
  for (auto it = samples.begin(); std::next(it) != samples.end(); ++it) {
    const auto next = std::next(it);
    const uint64_t a = it->second, b = next->second;
    if (b >= a) {
      out.push_back({it->first, next->first, static_cast<double>(b - a)});
    } else if (a >= (uint64_t{3} << 62) && b < (uint64_t{1} << 62)) {
      out.push_back({it->first, next->first, static_cast<double>(b - a)});
    }
  }
  return out;
}

void ExpectIntervals(const CounterCollection& c, const std::string& subject,
                     const std::map<int64_t, uint64_t>& sent) {
  const CounterSeries* s = Find(c, subject);
  ASSERT_NE(s, nullptr) << subject;
  ASSERT_FALSE(s->intervals.empty()) << subject;
  // The samples still in flight when the source stopped (the target logs a
  // sample as it hands it to gRPC) are not the source's to have: a few.
  std::map<int64_t, uint64_t> samples;
  for (const auto& [t, v] : sent) {
    if (t <= s->intervals.back().end_us) samples[t] = v;
  }
  EXPECT_LE(sent.size() - samples.size(), 3u) << subject;
  const std::vector<CounterInterval> want = Expected(samples);
  ASSERT_EQ(s->intervals.size(), want.size()) << subject;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(s->intervals[i].begin_us, want[i].begin_us) << subject << " " << i;
    EXPECT_EQ(s->intervals[i].end_us, want[i].end_us) << subject << " " << i;
    EXPECT_EQ(s->intervals[i].bytes, want[i].bytes) << subject << " " << i;
  }
}

// The profiles of a collection; each subject's period is checked.
void ExpectPeriods(const CounterCollection& c, const std::map<std::string, double>& period_s) {
  auto m = MeasureCollection(c, MeasureOptions{});
  ASSERT_TRUE(m.ok()) << m.status();
  for (const auto& [subject, period] : period_s) {
    bool found = false;
    for (const MeasuredProfile& p : m->profiles) {
      if (p.subject != subject) continue;
      found = true;
      ASSERT_TRUE(p.extracted.periodic) << subject << ": " << p.extracted.reason;
      EXPECT_NEAR(p.extracted.period_exact_us, period * 1e6, 0.01 * period * 1e6) << subject;
    }
    EXPECT_TRUE(found) << subject;
  }
}

TEST(GnmiSourceTest, StreamsCountersThatGiveTheGeneratedPeriods) {
  GnmiTargetProcess target(
      nlohmann::json{{"interfaces",
                      {Interface("Ethernet0", 0.4), Interface("Ethernet4", 0.5),
                       Interface("Ethernet8", 0.8, 0.5)}}});
  ASSERT_GT(target.port(), 0) << target.error();
  const Streamed r = StreamFrom(target, 5000);
  ASSERT_TRUE(r.collection.ok()) << r.collection.status();
  const CounterCollection& c = *r.collection;
  // One Subscribe: STREAM mode, PROTO encoding, the two octet leaves SAMPLEd
  // every 20 ms.
  const auto subscribes = Events(target, "subscribe");
  ASSERT_EQ(subscribes.size(), 1u);
  EXPECT_EQ(subscribes[0]["mode"], 0);
  EXPECT_EQ(subscribes[0]["encoding"], 2);
  EXPECT_EQ(subscribes[0]["sample_ns"], 20000000);
  EXPECT_EQ(subscribes[0]["paths"],
            nlohmann::json({"interfaces/interface/state/counters/in-octets",
                            "interfaces/interface/state/counters/out-octets"}));
  // Every sample the target sent, exactly, as intervals.
  ASSERT_EQ(r.sent.size(), 6u);
  ASSERT_EQ(c.series.size(), 6u);
  for (const auto& [series, samples] : r.sent) {
    EXPECT_GT(samples.size(), 150u) << series;
    ExpectIntervals(c, "t/" + series, samples);
  }
  const CounterSeries* s = Find(c, "t/Ethernet0/out");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->source, "gnmi:" + target.address());
  ASSERT_TRUE(s->sampling.has_value());
  EXPECT_EQ(s->sampling->interval_us, 20000);
  EXPECT_LT(s->sampling->jitter_mean_us, 10000);
  EXPECT_EQ(c.bin_us, 20000u);
  ExpectPeriods(c, {{"t/Ethernet0/out", 0.4},
                    {"t/Ethernet4/out", 0.5},
                    {"t/Ethernet8/out", 0.8},
                    {"t/Ethernet4/in", 0.5}});
  ASSERT_EQ(r.stats.size(), 1u);
  EXPECT_EQ(r.stats[0].streams, 1u);
  EXPECT_EQ(r.stats[0].failures, 0u);
  EXPECT_EQ(r.stats[0].out_of_order, 0u);
  EXPECT_EQ(r.stats[0].sync_responses, 1u);
}

TEST(GnmiSourceTest, OutOfOrderAndDuplicateUpdates) {
  GnmiTargetProcess target(nlohmann::json{{"interfaces", {Interface("Ethernet0", 0.5)}},
                                          {"reorder_window", 5},
                                          {"duplicate_every", 7},
                                          {"seed", 3}});
  ASSERT_GT(target.port(), 0) << target.error();
  const Streamed r = StreamFrom(target, 4000);
  ASSERT_TRUE(r.collection.ok()) << r.collection.status();
  const CounterCollection& c = *r.collection;
  ASSERT_EQ(r.sent.size(), 2u);
  // Sorted back into time order, each sample once: exactly what was sent.
  for (const auto& [series, samples] : r.sent) ExpectIntervals(c, "t/" + series, samples);
  const GnmiTargetStats& st = r.stats.at(0);
  EXPECT_GT(st.out_of_order, 20u);
  // Every resent notification carries two readings (in and out); a resend
  // cut off by the end of the stream may not have arrived.
  const size_t resent = Events(target, "duplicate").size();
  EXPECT_GE(resent, 10u);
  EXPECT_LE(st.duplicates, 2 * resent);
  EXPECT_GE(st.duplicates + 2, 2 * resent);
  EXPECT_EQ(st.conflicts, 0u);
  ExpectPeriods(c, {{"t/Ethernet0/out", 0.5}, {"t/Ethernet0/in", 0.5}});
  bool noted = false;
  for (const std::string& n : c.notes) noted |= n.find("duplicate(s) dropped") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(GnmiSourceTest, DroppedConnectionsAreRetriedWithExponentialBackoff) {
  // Every stream is dropped after 1.2 s, and the next three Subscribe calls
  // are refused: the waits between attempts double from 100 ms.
  GnmiTargetProcess target(nlohmann::json{{"interfaces", {Interface("Ethernet0", 0.5)}},
                                          {"drop_every_s", 1.2},
                                          {"refuse_after_drop", 3}});
  ASSERT_GT(target.port(), 0) << target.error();
  const Streamed r = StreamFrom(target, 7000);
  ASSERT_TRUE(r.collection.ok()) << r.collection.status();
  std::vector<nlohmann::json> log = target.Log();
  // After the first drop: the refused attempts and the one that streams.
  int64_t drop_t = 0;
  std::vector<int64_t> attempts;
  for (const nlohmann::json& record : log) {
    const std::string e = record.value("event", "");
    if (e == "drop" && drop_t == 0) drop_t = record["t"].get<int64_t>();
    if (e == "subscribe" && drop_t != 0 && attempts.size() < 4)
      attempts.push_back(record["t"].get<int64_t>());
  }
  ASSERT_NE(drop_t, 0);
  ASSERT_EQ(attempts.size(), 4u);
  // Waits of 100, 200, 400, 800 ms, +-20% jitter; a connection set-up on
  // top, and slack for a loaded machine.
  int64_t previous = drop_t;
  double nominal = 0.1;
  for (size_t i = 0; i < attempts.size(); ++i) {
    const double gap = (attempts[i] - previous) / 1e9;
    EXPECT_GE(gap, 0.8 * nominal - 0.005) << "attempt " << i;
    EXPECT_LE(gap, 1.2 * nominal + 1.0) << "attempt " << i;
    previous = attempts[i];
    nominal *= 2;
  }
  const GnmiTargetStats& st = r.stats.at(0);
  EXPECT_GE(st.streams, 2u);
  EXPECT_GE(st.failures, 4u);
  EXPECT_FALSE(st.gave_up);
  EXPECT_NE(st.last_error.find("UNAVAILABLE"), std::string::npos) << st.last_error;
  // The outages are gaps; the pattern is still read.
  ExpectPeriods(*r.collection, {{"t/Ethernet0/out", 0.5}});
}

TEST(GnmiSourceTest, CounterWrapsAndResets) {
  // Ethernet0's counters start just below 2^64 and wrap within a second;
  // Ethernet4's are cleared 2 s in.
  nlohmann::json wrapping = Interface("Ethernet0", 0.5);
  wrapping["start"] = 18446744073709551615ull - 2'000'000'000ull;
  nlohmann::json reset = Interface("Ethernet4", 0.5);
  reset["reset_at_s"] = 2.0;
  GnmiTargetProcess target(nlohmann::json{{"interfaces", {wrapping, reset}}});
  ASSERT_GT(target.port(), 0) << target.error();
  const Streamed r = StreamFrom(target, 5000);
  ASSERT_TRUE(r.collection.ok()) << r.collection.status();
  const CounterCollection& c = *r.collection;
  ASSERT_EQ(r.sent.size(), 4u);
  // The wrapped increases are exact; the interval across the reset is gone
  // (ExpectIntervals expects none there).
  for (const auto& [series, samples] : r.sent) ExpectIntervals(c, "t/" + series, samples);
  const GnmiTargetStats& st = r.stats.at(0);
  EXPECT_EQ(st.wraps, 2u);   // in and out of Ethernet0
  EXPECT_EQ(st.resets, 2u);  // in and out of Ethernet4
  ExpectPeriods(c, {{"t/Ethernet0/out", 0.5}, {"t/Ethernet4/out", 0.5}});
}

TEST(GnmiSourceTest, TargetThatAcceptsTheSubscriptionAndNeverSends) {
  GnmiTargetProcess target(nlohmann::json{{"silent", true}});
  ASSERT_GT(target.port(), 0) << target.error();
  GnmiOptions o = OptionsFor(target, 3500);
  o.stall_timeout_us = 1000000;
  GnmiSource source(o);
  const auto start = std::chrono::steady_clock::now();
  auto c = source.Collect();
  const double took = Seconds(std::chrono::steady_clock::now() - start);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable) << c.status();
  EXPECT_NE(c.status().message().find("t (" + target.address() + "): no message for 1 s"),
            std::string::npos)
      << c.status();
  EXPECT_LT(took, 3.5 + 2.0);
  target.Stop();
  // Restarted after each silent second.
  EXPECT_GE(Events(target, "subscribe").size(), 2u);
}

TEST(GnmiSourceTest, ListenerThatNeverAnswers) {
  // TCP connects, nothing more ever comes (a hung agent, a firewall that
  // swallows): each attempt gives up after the connect timeout.
  GnmiTargetProcess target(nlohmann::json{{"mode", "mute"}});
  ASSERT_GT(target.port(), 0) << target.error();
  GnmiOptions o = OptionsFor(target, 3000);
  o.connect_timeout_us = 1000000;
  o.stall_timeout_us = 1000000;
  GnmiSource source(o);
  const auto start = std::chrono::steady_clock::now();
  auto c = source.Collect();
  const double took = Seconds(std::chrono::steady_clock::now() - start);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable) << c.status();
  EXPECT_NE(c.status().message().find("no connection within 1 s"), std::string::npos) << c.status();
  EXPECT_LT(took, 3.0 + 2.0);
  EXPECT_GE(source.stats().at(0).attempts, 2u);
  EXPECT_EQ(source.stats().at(0).streams, 0u);
}

TEST(GnmiSourceTest, CredentialsAreMetadataAndRefusedOnesAreNotRetried) {
  GnmiTargetProcess target(
      nlohmann::json{{"interfaces", {Interface("Ethernet0", 0.5)}},
                     {"auth", {{"username", "phasor"}, {"password", "s3cret"}}}});
  ASSERT_GT(target.port(), 0) << target.error();
  GnmiOptions o = OptionsFor(target, 10000);
  o.username = "phasor";
  o.password = "wrong";
  GnmiSource refused(o);
  const auto start = std::chrono::steady_clock::now();
  auto bad = refused.Collect();
  EXPECT_LT(Seconds(std::chrono::steady_clock::now() - start), 3.0);  // not the 10 s
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnauthenticated) << bad.status();
  EXPECT_NE(bad.status().message().find("UNAUTHENTICATED: bad username or password"),
            std::string::npos)
      << bad.status();
  EXPECT_TRUE(refused.stats().at(0).gave_up);
  EXPECT_EQ(refused.stats().at(0).attempts, 1u);

  o.password = "s3cret";
  o.duration_us = 2000000;
  GnmiSource accepted(o);
  auto good = accepted.Collect();
  ASSERT_TRUE(good.ok()) << good.status();
  target.Stop();
  const auto subscribes = Events(target, "subscribe");
  ASSERT_EQ(subscribes.size(), 2u);
  EXPECT_EQ(subscribes[0]["username"], "phasor");
  EXPECT_EQ(subscribes[0]["password"], "wrong");
  EXPECT_TRUE(subscribes[0]["refused"].get<bool>());
  EXPECT_EQ(subscribes[1]["password"], "s3cret");
  EXPECT_FALSE(subscribes[1]["refused"].get<bool>());
  EXPECT_NE(Find(*good, "t/Ethernet0/out"), nullptr);
}

// A self-signed certificate for gnmi.test and 127.0.0.1 (openssl).
bool MakeCertificate(const TempDir& dir) {
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=gnmi.test"
      " -addext 'subjectAltName=DNS:gnmi.test,IP:127.0.0.1'"
      " -keyout " +
      dir.File("key.pem") + " -out " + dir.File("cert.pem") + " 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

TEST(GnmiSourceTest, TlsWithTheTargetsCertificateAndCredentials) {
  TempDir certs;
  ASSERT_TRUE(MakeCertificate(certs)) << "openssl (scripts/install-deps.sh)";
  GnmiTargetProcess target(
      {{"interfaces", {Interface("Ethernet0", 0.5)}},
       {"tls", {{"cert", certs.File("cert.pem")}, {"key", certs.File("key.pem")}}},
       {"auth", {{"username", "phasor"}, {"password", "s3cret"}}}});
  ASSERT_GT(target.port(), 0) << target.error();
  GnmiOptions o = OptionsFor(target, 3000);
  o.insecure = false;
  o.ca_file = certs.File("cert.pem");
  o.username = "phasor";
  o.password = "s3cret";
  {
    GnmiSource source(o);
    auto c = source.Collect();
    ASSERT_TRUE(c.ok()) << c.status();
    ExpectPeriods(*c, {{"t/Ethernet0/out", 0.5}});
  }
  {
    // The name in the certificate, asked for explicitly.
    GnmiOptions named = o;
    named.tls_server_name = "gnmi.test";
    named.duration_us = 1500000;
    GnmiSource source(named);
    EXPECT_TRUE(source.Collect().ok());
  }
  {
    // Without the target's CA (system roots) the handshake fails; plaintext
    // against a TLS target gets no HTTP/2 answer: both are bounded failures.
    GnmiOptions unknown_ca = o;
    unknown_ca.ca_file.clear();
    unknown_ca.connect_timeout_us = 1000000;
    unknown_ca.duration_us = 2000000;
    GnmiSource source(unknown_ca);
    auto c = source.Collect();
    EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable) << c.status();
    EXPECT_EQ(source.stats().at(0).streams, 0u);
    GnmiOptions plain = OptionsFor(target, 2000);
    plain.connect_timeout_us = 1000000;
    GnmiSource plaintext(plain);
    EXPECT_EQ(plaintext.Collect().status().code(), absl::StatusCode::kUnavailable);
  }
  target.Stop();
  for (const nlohmann::json& s : Events(target, "subscribe")) {
    EXPECT_EQ(s["username"], "phasor");
    EXPECT_FALSE(s["refused"].get<bool>());
  }
}

TEST(GnmiSourceTest, JsonIetfContainersAndBadValues) {
  // Each interface one JSON_IETF object of its counters; every 5th sample
  // of Ethernet4's out-octets is "n/a".
  nlohmann::json bad = Interface("Ethernet4", 0.5);
  bad["bad_every"] = 5;
  GnmiTargetProcess target(nlohmann::json{{"style", "json_ietf_container"},
                                          {"interfaces", {Interface("Ethernet0", 0.4), bad}}});
  ASSERT_GT(target.port(), 0) << target.error();
  const Streamed r = StreamFrom(target, 4000, [](GnmiOptions& o) {
    o.encoding = "json_ietf";
    o.paths = {"/interfaces/interface[name=*]/state/counters"};
  });
  ASSERT_TRUE(r.collection.ok()) << r.collection.status();
  EXPECT_EQ(Events(target, "subscribe").at(0)["encoding"], 4);
  ASSERT_EQ(r.sent.size(), 4u);
  for (const auto& [series, samples] : r.sent) {
    ExpectIntervals(*r.collection, "t/" + series, samples);
  }
  const GnmiTargetStats& st = r.stats.at(0);
  EXPECT_GT(st.bad_values, 20u);
  EXPECT_EQ(st.first_bad_value, "Ethernet4 out-octets: '\"n/a\"' is not a count");
  ExpectPeriods(*r.collection, {{"t/Ethernet0/out", 0.4}, {"t/Ethernet4/out", 0.5}});
}

TEST(GnmiSourceTest, SonicCountersDbPerPortObjects) {
  GnmiTargetProcess target(
      nlohmann::json{{"style", "sonic_counters_db"},
                     {"interfaces", {Interface("Ethernet0", 0.4), Interface("Ethernet4", 0.6)}}});
  ASSERT_GT(target.port(), 0) << target.error();
  const Streamed r = StreamFrom(target, 4000, [](GnmiOptions& o) {
    o.encoding = "json_ietf";
    o.prefix_target = "COUNTERS_DB";
    o.paths = {"COUNTERS/Ethernet*"};
  });
  ASSERT_TRUE(r.collection.ok()) << r.collection.status();
  const auto subscribe = Events(target, "subscribe").at(0);
  EXPECT_EQ(subscribe["prefix_target"], "COUNTERS_DB");
  EXPECT_EQ(subscribe["paths"], nlohmann::json({"COUNTERS/Ethernet*"}));
  ASSERT_EQ(r.sent.size(), 4u);
  for (const auto& [series, samples] : r.sent) {
    ExpectIntervals(*r.collection, "t/" + series, samples);
  }
  ExpectPeriods(*r.collection, {{"t/Ethernet0/out", 0.4}, {"t/Ethernet4/in", 0.6}});
}

TEST(GnmiSourceTest, TwoTargetsOneOfThemDown) {
  GnmiTargetProcess live(nlohmann::json{{"interfaces", {Interface("Ethernet0", 0.5)}}});
  ASSERT_GT(live.port(), 0) << live.error();
  GnmiTargetProcess gone(nlohmann::json{{"interfaces", {Interface("Ethernet0", 0.5)}}});
  ASSERT_GT(gone.port(), 0) << gone.error();
  const std::string gone_address = gone.address();
  gone.Stop();  // nothing listens there any more
  GnmiOptions o = OptionsFor(live, 3000);
  o.targets = {{"leaf1", live.address()}, {"leaf2", gone_address}};
  o.connect_timeout_us = 1000000;
  GnmiSource source(o);
  auto c = source.Collect();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NE(Find(*c, "leaf1/Ethernet0/out"), nullptr);
  EXPECT_EQ(Find(*c, "leaf2/Ethernet0/out"), nullptr);
  ASSERT_EQ(c->notes.size(), 2u);
  EXPECT_NE(c->notes[1].find("gnmi leaf2 (" + gone_address + "): 0 stream(s)"), std::string::npos)
      << c->notes[1];
  EXPECT_GE(source.stats().at(1).failures, 2u);
}

TEST(GnmiOptionsTest, TargetsPathsAndOptionsAreChecked) {
  auto t = ParseGnmiTarget("leaf1=10.0.0.1:6030");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name, "leaf1");
  EXPECT_EQ(t->address, "10.0.0.1:6030");
  t = ParseGnmiTarget("[fd00::1]:9339");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "[fd00::1]:9339");
  EXPECT_EQ(ParseGnmiTarget("switch").status().message(),
            "gNMI target 'switch': expected [NAME=]HOST:PORT");
  EXPECT_EQ(ParseGnmiTarget("switch:http").status().message(),
            "gNMI target 'switch:http': port 'http' is not a number in 1..65535");
  EXPECT_EQ(ParseGnmiTarget("a/b=switch:1").status().code(), absl::StatusCode::kInvalidArgument);

  GnmiOptions o;
  o.targets = {{"t", "127.0.0.1:1"}};
  o.insecure = true;
  auto bad = [&](GnmiOptions x) { return GnmiCollector::Start(x).status(); };
  GnmiOptions x = o;
  x.paths = {"/interfaces/interface[name=*/state"};
  EXPECT_EQ(bad(x).message(),
            "gNMI path '/interfaces/interface[name=*/state': a '[' without its ']'");
  x.paths = {"/interfaces//state"};
  EXPECT_EQ(bad(x).message(), "gNMI path '/interfaces//state': an empty element");
  x.paths = {"/interfaces/interface[name]"};
  EXPECT_EQ(bad(x).message(), "gNMI path '/interfaces/interface[name]': key 'name' needs '=value'");
  x = o;
  x.sample_interval_us = 10;
  EXPECT_EQ(bad(x).code(), absl::StatusCode::kInvalidArgument);
  x = o;
  x.encoding = "xml";
  EXPECT_EQ(bad(x).message(), "encoding: 'xml' is not proto, json, json_ietf or ascii");
  x = o;
  x.password = "p";
  EXPECT_EQ(bad(x).message(), "password: given without a username");
  x = o;
  x.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(bad(x).code(), absl::StatusCode::kInvalidArgument);  // TLS options with insecure
  x.insecure = false;
  EXPECT_EQ(bad(x).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bad(x).message(), "CA file: cannot read '/nonexistent/ca.pem'");
  x = o;
  x.targets.clear();
  EXPECT_EQ(bad(x).message(), "targets: none given");
  // A path with an origin, keys holding '/' and escapes parses.
  x = o;
  x.paths = {"openconfig:/interfaces/interface[name=Ethernet1/1]/state/counters/in-octets",
             "/a[k=x\\]y][j=2]/b"};
  EXPECT_TRUE(GnmiCollector::Start(x).ok());
}

std::string Serialized(const gnmi::SubscribeResponse& r) {
  std::string bytes;
  r.SerializeToString(&bytes);
  return bytes;
}

TEST(GnmiDecodeTest, ValuesPathsAndBadInput) {
  gnmi::SubscribeResponse r;
  gnmi::Notification* n = r.mutable_update();
  n->set_timestamp(1'700'000'000'123'456'789);
  gnmi::PathElem* e = n->mutable_prefix()->add_elem();
  e->set_name("openconfig-interfaces:interfaces");
  e = n->mutable_prefix()->add_elem();
  e->set_name("interface");
  (*e->mutable_key())["name"] = "Ethernet1/1";
  auto add = [&](const std::string& leaf) {
    gnmi::Update* u = n->add_update();
    u->mutable_path()->add_elem()->set_name("state");
    u->mutable_path()->add_elem()->set_name("counters");
    u->mutable_path()->add_elem()->set_name(leaf);
    return u->mutable_val();
  };
  add("in-octets")->set_uint_val(18446744073709551615ull);
  add("out-octets")->set_string_val("42");
  add("in-pkts")->set_uint_val(7);                   // another counter: ignored
  add("out-octets")->set_int_val(-1);                // not a count
  add("in-octets")->set_json_ietf_val("\"12345\"");  // RFC 7951: uint64 as a string
  add("in-octets")->set_json_val("{\"openconfig-interfaces:in-octets\": 9}");  // wrapped leaf
  add("out-octets")->set_double_val(1.5);                                      // not a count
  GnmiDecodeCounts counts;
  auto d = DecodeGnmiResponse(Serialized(r), 5, &counts);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 4u);
  EXPECT_EQ((*d)[0].interface, "Ethernet1/1");
  EXPECT_FALSE((*d)[0].out);
  EXPECT_EQ((*d)[0].value, 18446744073709551615ull);
  EXPECT_EQ((*d)[0].time_us, 1'700'000'000'123'456);
  EXPECT_TRUE((*d)[1].out);
  EXPECT_EQ((*d)[1].value, 42u);
  EXPECT_EQ((*d)[2].value, 12345u);
  EXPECT_EQ((*d)[3].value, 9u);
  EXPECT_EQ(counts.notifications, 1u);
  EXPECT_EQ(counts.other_leaves, 1u);
  EXPECT_EQ(counts.bad_values, 2u);
  EXPECT_EQ(counts.first_bad_value, "Ethernet1/1 out-octets: '-1' is not a count");

  // No interface in the path; a wildcard echoed back; no timestamp (the
  // receive time is used); a sync_response.
  gnmi::SubscribeResponse r2;
  gnmi::Notification* n2 = r2.mutable_update();
  gnmi::Update* u = n2->add_update();
  u->mutable_path()->add_elem()->set_name("in-octets");
  u->mutable_val()->set_uint_val(1);
  u = n2->add_update();
  gnmi::PathElem* w = u->mutable_path()->add_elem();
  w->set_name("interface");
  (*w->mutable_key())["name"] = "*";
  u->mutable_path()->add_elem()->set_name("out-octets");
  u->mutable_val()->set_uint_val(2);
  u = n2->add_update();
  w = u->mutable_path()->add_elem();
  w->set_name("interface");
  (*w->mutable_key())["name"] = "Ethernet2";
  u->mutable_path()->add_elem()->set_name("out-octets");
  u->mutable_val()->set_json_val("{not json");
  GnmiDecodeCounts counts2;
  d = DecodeGnmiResponse(Serialized(r2), 777, &counts2);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->empty());
  EXPECT_EQ(counts2.unattributed, 2u);
  EXPECT_EQ(counts2.bad_values, 1u);
  EXPECT_EQ(counts2.first_bad_value, "Ethernet2 out-octets: '{not json' is not JSON");
  u = n2->add_update();
  w = u->mutable_path()->add_elem();
  w->set_name("interface");
  (*w->mutable_key())["name"] = "Ethernet3";
  u->mutable_path()->add_elem()->set_name("in-octets");
  u->mutable_val()->set_uint_val(3);
  d = DecodeGnmiResponse(Serialized(r2), 777, nullptr);
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ(d->at(0).time_us, 777);

  // OpenConfig's interface list as one JSON subtree (a subscription to
  // /interfaces): each entry's "name" is its interface.
  gnmi::SubscribeResponse tree;
  gnmi::Update* whole = tree.mutable_update()->add_update();
  whole->mutable_path()->add_elem()->set_name("openconfig-interfaces:interfaces");
  whole->mutable_val()->set_json_ietf_val(
      R"({"interface": [{"name": "Ethernet5", "state": {"counters": {"in-octets": "10",
          "out-octets": "20", "in-pkts": "1"}}}, {"name": "Ethernet6", "state": {"counters":
          {"openconfig-interfaces:out-octets": 30}}}]})");
  GnmiDecodeCounts tree_counts;
  d = DecodeGnmiResponse(Serialized(tree), 1, &tree_counts);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ(d->at(0).interface, "Ethernet5");
  EXPECT_EQ(d->at(1).value, 20u);
  EXPECT_TRUE(d->at(1).out);
  EXPECT_EQ(d->at(2).interface, "Ethernet6");
  EXPECT_EQ(d->at(2).value, 30u);
  EXPECT_EQ(tree_counts.bad_values + tree_counts.unattributed, 0u);

  gnmi::SubscribeResponse sync;
  sync.set_sync_response(true);
  GnmiDecodeCounts counts3;
  d = DecodeGnmiResponse(Serialized(sync), 0, &counts3);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->empty());
  EXPECT_EQ(counts3.sync_responses, 1u);

  EXPECT_EQ(DecodeGnmiResponse(std::string("\xff\xff\xff", 3), 0, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GnmiDecodeTest, MutatedMessagesAreValuesOrErrorsNeverCrashes) {
  // A notification with typed, JSON and SONiC-shaped updates, then 20,000
  // copies with bytes flipped, cut short or grown: each decodes to readings
  // or to InvalidArgument (run under `make test-asan` for memory errors).
  gnmi::SubscribeResponse r;
  gnmi::Notification* n = r.mutable_update();
  n->set_timestamp(1'700'000'000'000'000'000);
  gnmi::PathElem* e = n->mutable_prefix()->add_elem();
  e->set_name("interface");
  (*e->mutable_key())["name"] = "Ethernet0";
  gnmi::Update* u = n->add_update();
  u->mutable_path()->add_elem()->set_name("in-octets");
  u->mutable_val()->set_uint_val(123);
  u = n->add_update();
  u->mutable_path()->add_elem()->set_name("counters");
  u->mutable_val()->set_json_ietf_val(R"({"in-octets": "5", "out-octets": 6, "x": [1, {"y": 2}]})");
  u = n->add_update();
  u->mutable_path()->add_elem()->set_name("COUNTERS");
  u->mutable_path()->add_elem()->set_name("Ethernet*");
  u->mutable_val()->set_json_val(R"({"Ethernet4": {"SAI_PORT_STAT_IF_OUT_OCTETS": "9"}})");
  const std::string bytes = Serialized(r);
  auto base = DecodeGnmiResponse(bytes, 0, nullptr);
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(base->size(), 4u);
  std::mt19937 rng(29);
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string m = bytes;
    switch (rng() % 3) {
      case 0:
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
          m[rng() % m.size()] = static_cast<char>(rng());
        }
        break;
      case 1:
        m.resize(rng() % m.size());
        break;
      default:
        m.insert(rng() % m.size(), 1 + rng() % 8, static_cast<char>(rng()));
        break;
    }
    GnmiDecodeCounts counts;
    auto d = DecodeGnmiResponse(m, 0, &counts);
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
      ++errors;
    }
  }
  EXPECT_GT(errors, 1000);  // the parser does refuse broken bytes
}

}  // namespace
}  // namespace gnmi_source_test
}  // namespace phasor::probe
