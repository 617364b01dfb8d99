// phasord end to end on ipc:// and loopback: ranking equals placer::Rank,
// commits publish offsets, every bad input gets an Error and a counter while
// the daemon keeps serving, profiles feed the next ranking, the closed loop
// re-sends drifting jobs' offsets, metrics, CURVE, and a load test.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "placer/candidate_routing.h"
#include "daemon/metrics.h"
#include "gmock/gmock.h"
#include "daemon/closed_loop.h"
#include "gtest/gtest.h"
#include "tests/testing/http.h"
#include "tests/testing/probe_publisher.h"
#include "integrations/client/client.h"
#include "placer/rank_json.h"
#include "placer/ranking_policy.h"
#include "protocol/convert.h"
#include "protocol/curve_keys.h"
#include "protocol/framing.h"
#include "tests/daemon/daemon_harness.h"
#include "zmq.hpp"
#include "zmq_addon.hpp"

namespace phasor {
namespace {

using ::phasor::testing::DaemonHarness;
using ::phasor::testing::ExpectRankingsEqual;
using ::phasor::testing::SampleRankRequest;
using ::phasor::testing::UseCurveOnLoopback;
using ::testing::HasSubstr;
using protocol::MessageType;

std::unique_ptr<client::Client> Connect(const DaemonHarness& h, int timeout_ms = 5000) {
  client::ClientOptions o;
  o.endpoint = h.options().request_endpoint;
  o.timeout_ms = timeout_ms;
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
  EXPECT_TRUE(c.ok());
  return c.ok() ? *std::move(c) : nullptr;
}

// A raw Error reply for raw frames.
v1::Error RawError(client::Client& c, const std::vector<std::string>& frames) {
  absl::StatusOr<std::vector<std::string>> reply = c.CallRaw(frames);
  EXPECT_TRUE(reply.ok()) << reply.status().message();
  v1::Error e;
  if (!reply.ok()) return e;
  EXPECT_EQ(reply->size(), 3u);
  if (reply->size() != 3) return e;
  EXPECT_EQ((*reply)[0], "phasor.v1");
  EXPECT_EQ((*reply)[1], "Error");
  EXPECT_TRUE(e.ParseFromString((*reply)[2]));
  return e;
}

double Errors(const DaemonHarness& h, const std::string& type, const std::string& code) {
  return const_cast<DaemonHarness&>(h).daemon().metrics().Value("phasord_errors_total", {{"type", type}, {"code", code}});
}

// A SUB socket on the offsets endpoint subscribed to `topic`, connected
// before anything is published (waits out ZeroMQ's slow-joiner window).
zmq::socket_t Subscribe(zmq::context_t& ctx, const DaemonHarness& h, const std::string& topic) {
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::linger, 0);
  sub.set(zmq::sockopt::subscribe, topic);
  sub.connect(h.options().offset_endpoint);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return sub;
}

std::optional<v1::OffsetUpdate> NextOffset(zmq::socket_t& sub, int timeout_ms) {
  zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) <= 0) return std::nullopt;
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(sub, std::back_inserter(frames))) return std::nullopt;
  EXPECT_EQ(frames.size(), 4u);
  if (frames.size() != 4) return std::nullopt;
  EXPECT_EQ(frames[1].to_string(), "phasor.v1");
  EXPECT_EQ(frames[2].to_string(), "OffsetUpdate");
  v1::OffsetUpdate u;
  EXPECT_TRUE(u.ParseFromString(frames[3].to_string()));
  EXPECT_EQ(u.job(), frames[0].to_string());
  return u;
}

TEST(DaemonTest, RankEqualsPlacerRank) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  const placer::RankRequest request = SampleRankRequest();
  absl::StatusOr<client::RankResult> result = c->Rank(request);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->ranking_id, 1u);
  ASSERT_TRUE(placer::ValidateRankRequest(request).ok());
  const placer::Ranking expected = placer::Rank(request);
  ASSERT_EQ(expected.ranked.size(), 2u);
  ASSERT_EQ(expected.rejected.size(), 1u);
  ExpectRankingsEqual(result->ranking, expected);
  // The next ranking gets the next id.
  absl::StatusOr<client::RankResult> again = c->Rank(request);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ranking_id, 2u);
  EXPECT_EQ(c->stale_replies(), 0u);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Server-form candidates routed over the configured fabric: the reply is
// `phasor rank --topology` on the same input, byte for byte in its JSON form.
TEST(DaemonTest, ServerFormIsRoutedLikePhasorRankTopology) {
  const std::string fabric = std::string(PHASOR_SOURCE_DIR) + "/data/examples/leaf_spine.yaml";
  DaemonHarness h([&](daemon::DaemonOptions& o) { o.topology_path = fabric; });
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  absl::StatusOr<placer::RankRequest> request =
      placer::ParseRankRequest(ReadFile(std::string(PHASOR_SOURCE_DIR) + "/data/examples/rank_servers.json"));
  ASSERT_TRUE(request.ok()) << request.status().message();
  absl::StatusOr<client::RankResult> served = c->Rank(*request);
  ASSERT_TRUE(served.ok()) << served.status().message();

  placer::RankRequest routed = *request;
  std::vector<placer::RejectedCandidate> unrouted;
  ASSERT_TRUE(placer::RouteCandidatesFromFile(fabric, routed, unrouted).ok());
  placer::Ranking expected = placer::Rank(routed);
  // phasord applies its ranking policy (the defaults) to what it ranks.
  placer::ApplyRankingPolicy(routed, placer::RankingPolicyOptions{}, expected);
  expected.rejected.insert(expected.rejected.end(), unrouted.begin(), unrouted.end());
  ASSERT_FALSE(unrouted.empty());  // the example's "typo" candidate names server s9
  ExpectRankingsEqual(served->ranking, expected);
  EXPECT_EQ(placer::RankingToJson(served->ranking).dump(2), placer::RankingToJson(expected).dump(2));
}

TEST(DaemonTest, ServerFormWithoutTopologyIsRejectedPerCandidate) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  placer::RankRequest request = SampleRankRequest();
  placer::Candidate servers;
  servers.id = "by-servers";
  servers.servers["a"] = {"s1", "s2"};
  request.candidates.push_back(servers);
  absl::StatusOr<client::RankResult> served = c->Rank(request);
  ASSERT_TRUE(served.ok());
  ExpectRankingsEqual(served->ranking, placer::Rank(request));
  EXPECT_EQ(served->ranking.rejected.back().candidate, "by-servers");
}

TEST(DaemonTest, UnreadableTopologyStopsTheStart) {
  daemon::DaemonOptions o;
  const std::string dir = ::phasor::testing::MakeTempDir();
  o.request_endpoint = "ipc://" + dir + "/r";
  o.profile_endpoint = "ipc://" + dir + "/p";
  o.offset_endpoint = "ipc://" + dir + "/o";
  o.metrics_listen = "";
  o.allow_plain = true;
  o.state_path = dir + "/state.db";
  o.topology_path = dir + "/missing.yaml";
  absl::StatusOr<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Start(o);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("topology_path: "));
  std::filesystem::remove_all(dir);
}

TEST(DaemonTest, CommitPublishesOffsetsAndGetOffsetAnswers) {
  DaemonHarness h([](daemon::DaemonOptions& o) { o.republish_interval_ms = 0; });
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  zmq::context_t ctx;
  zmq::socket_t sub = Subscribe(ctx, h, "b");
  absl::StatusOr<client::RankResult> ranked = c->Rank(SampleRankRequest());
  ASSERT_TRUE(ranked.ok());
  const v1::RankedCandidate& best = ranked->reply.ranked(0);
  absl::StatusOr<v1::CommitReply> commit = c->Commit(ranked->ranking_id, best.candidate());
  ASSERT_TRUE(commit.ok()) << commit.status().message();
  ASSERT_EQ(commit->offsets_size(), 3);
  absl::StatusOr<v1::HealthReply> health = c->Health();
  ASSERT_TRUE(health.ok());
  for (int i = 0; i < 3; ++i) {
    const v1::OffsetUpdate& o = commit->offsets(i);
    EXPECT_EQ(o.job(), best.shifts(i).job());
    EXPECT_EQ(o.shift_us(), best.shifts(i).shift_us());
    EXPECT_EQ(o.period_us(), best.shifts(i).period_us());
    EXPECT_EQ(o.origin_epoch_us(), health->epoch_us());
    EXPECT_EQ(o.version(), 1u);
  }
  std::optional<v1::OffsetUpdate> published = NextOffset(sub, 2000);
  ASSERT_TRUE(published.has_value());
  EXPECT_EQ(published->job(), "b");
  EXPECT_EQ(published->shift_us(), commit->offsets(1).shift_us());
  EXPECT_FALSE(NextOffset(sub, 100).has_value());  // only b's topic

  absl::StatusOr<v1::OffsetUpdate> got = c->GetOffset("c");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->shift_us(), commit->offsets(2).shift_us());
  EXPECT_EQ(got->period_us(), 150000u);
  EXPECT_EQ(health->jobs(), 3u);

  // Committing the other candidate changes some shifts: versions grow only where they change.
  const v1::RankedCandidate& other = ranked->reply.ranked(1);
  absl::StatusOr<v1::CommitReply> second = c->Commit(ranked->ranking_id, other.candidate());
  ASSERT_TRUE(second.ok());
  for (int i = 0; i < 3; ++i) {
    const bool changed = second->offsets(i).shift_us() != commit->offsets(i).shift_us() ||
                         second->offsets(i).period_us() != commit->offsets(i).period_us();
    EXPECT_EQ(second->offsets(i).version(), changed ? 2u : 1u) << second->offsets(i).job();
  }
}

TEST(DaemonTest, EveryBadInputGetsAnErrorAndACounter) {
  DaemonHarness h([](daemon::DaemonOptions& o) {
    o.max_message_bytes = 4096;
    o.max_candidates_per_request = 3;
    o.max_jobs_per_request = 3;
  });
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);

  v1::Error e = RawError(*c, {"\x13\x37garbage"});
  EXPECT_EQ(e.code(), v1::Error::BAD_FRAMES);
  EXPECT_EQ(Errors(h, "unknown", "BAD_FRAMES"), 1);

  e = RawError(*c, {"phasor.v1", "Health"});
  EXPECT_EQ(e.code(), v1::Error::BAD_FRAMES);
  e = RawError(*c, {"phasor.v1", "Health", "", ""});
  EXPECT_EQ(e.code(), v1::Error::BAD_FRAMES);
  EXPECT_EQ(Errors(h, "Health", "BAD_FRAMES"), 2);

  e = RawError(*c, {"phasor.v0", "Health", ""});
  EXPECT_EQ(e.code(), v1::Error::UNSUPPORTED_VERSION);
  EXPECT_THAT(e.message(), HasSubstr("spoken: phasor.v1"));
  ASSERT_EQ(e.supported_versions_size(), 1);

  e = RawError(*c, {"phasor.v1", "Teleport", ""});
  EXPECT_EQ(e.code(), v1::Error::UNKNOWN_TYPE);
  EXPECT_EQ(Errors(h, "unknown", "UNKNOWN_TYPE"), 1);
  e = RawError(*c, {"phasor.v1", "RankReply", ""});  // a reply type is not a request
  EXPECT_EQ(e.code(), v1::Error::UNKNOWN_TYPE);
  EXPECT_EQ(Errors(h, "RankReply", "UNKNOWN_TYPE"), 1);

  const std::string full = protocol::ToProto(SampleRankRequest()).SerializeAsString();
  e = RawError(*c, {"phasor.v1", "RankRequest", full.substr(0, full.size() / 2 + 1)});
  EXPECT_EQ(e.code(), v1::Error::BAD_PAYLOAD);
  EXPECT_EQ(Errors(h, "RankRequest", "BAD_PAYLOAD"), 1);

  e = RawError(*c, {"phasor.v1", "RankRequest", std::string(5000, 'x')});
  EXPECT_EQ(e.code(), v1::Error::TOO_LARGE);
  EXPECT_EQ(Errors(h, "RankRequest", "TOO_LARGE"), 1);

  // Through the client: semantic errors carry the request id and map to Status codes.
  absl::StatusOr<v1::OffsetUpdate> unknown = c->GetOffset("nobody");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("no offset for job 'nobody'"));
  EXPECT_EQ(c->GetOffset("").status().code(), absl::StatusCode::kInvalidArgument);

  v1::RankRequest no_profile = protocol::ToProto(SampleRankRequest());
  no_profile.mutable_jobs(2)->clear_profile();
  absl::StatusOr<v1::RankReply> r = c->Rank(no_profile);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("jobs[2].profile: no profile given and none known for job 'c'"));

  v1::RankRequest bad_capacity = protocol::ToProto(SampleRankRequest());
  bad_capacity.mutable_links(1)->set_capacity_gbps(-1);
  r = c->Rank(bad_capacity);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("links[1].capacity_gbps"));

  v1::RankRequest too_many = protocol::ToProto(SampleRankRequest());
  *too_many.add_candidates() = too_many.candidates(0);
  r = c->Rank(too_many);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("candidates: 4 entries exceed the limit of 3"));
  EXPECT_EQ(Errors(h, "RankRequest", "LIMIT_EXCEEDED"), 1);

  absl::StatusOr<v1::CommitReply> commit = c->Commit(999, "c0");
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<client::RankResult> ranked = c->Rank(SampleRankRequest());
  ASSERT_TRUE(ranked.ok());
  commit = c->Commit(ranked->ranking_id, "c2");  // rejected, not ranked
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(commit.status().message()), HasSubstr("'c2' is not ranked"));
  EXPECT_EQ(Errors(h, "CommitPlacement", "NOT_FOUND"), 2);

  // Garbage on the profile socket: counted, no reply, nothing breaks.
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 1000);
  push.connect(h.options().profile_endpoint);
  push.send(zmq::str_buffer("noise"), zmq::send_flags::none);
  const std::vector<std::string> bad_profile = {"phasor.v1", "ProfileUpdate", "\xff\xff"};
  zmq::send_multipart(push, std::vector<zmq::const_buffer>{zmq::buffer(bad_profile[0]), zmq::buffer(bad_profile[1]),
                                                           zmq::buffer(bad_profile[2])});
  v1::ProfileUpdate invalid;
  invalid.set_subject("a");
  invalid.set_period_us(1000);
  invalid.set_bin_us(0);  // no bins
  invalid.set_confidence(0.9);
  const std::vector<std::string> f = protocol::EncodeFrames(MessageType::kProfileUpdate, invalid);
  zmq::send_multipart(push, std::vector<zmq::const_buffer>{zmq::buffer(f[0]), zmq::buffer(f[1]), zmq::buffer(f[2])});
  EXPECT_TRUE(DaemonHarness::WaitFor([&] {
    return Errors(h, "unknown", "BAD_FRAMES") == 2 && Errors(h, "ProfileUpdate", "BAD_PAYLOAD") == 1 &&
           Errors(h, "ProfileUpdate", "INVALID_ARGUMENT") == 1;
  }));

  // Still serving, and nothing it acknowledged was disturbed.
  absl::StatusOr<v1::HealthReply> health = c->Health();
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->versions(0), "phasor.v1");
  EXPECT_EQ(c->stale_replies(), 0u);
}

v1::ProfileUpdate JobProfile(const std::string& job, double confidence) {
  v1::ProfileUpdate u;
  u.set_subject(job);
  u.set_kind(v1::ProfileUpdate::JOB);
  u.set_period_us(120000);
  u.set_bin_us(10000);
  for (int k = 0; k < 12; ++k) u.add_gbps(k < 5 ? 35.0 : 2.0);
  u.set_confidence(confidence);
  u.set_source("test-probe");
  return u;
}

TEST(DaemonTest, ProfilesFromProbesFeedTheNextRanking) {
  DaemonHarness h([](daemon::DaemonOptions& o) { o.min_profile_confidence = 0.5; });
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  auto probe = ::phasor::testing::ConnectProbe(h.options().profile_endpoint);
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE((*probe)->Publish(JobProfile("c", 0.2)));  // too unsure: ignored
  EXPECT_TRUE(DaemonHarness::WaitFor([&] {
    return h.daemon().metrics().Value("phasord_profiles_ignored_total", {{"reason", "low_confidence"}}) == 1;
  }));
  v1::RankRequest wire = protocol::ToProto(SampleRankRequest());
  wire.mutable_jobs(2)->clear_profile();
  EXPECT_EQ(c->Rank(wire).status().code(), absl::StatusCode::kNotFound);

  ASSERT_TRUE((*probe)->Publish(JobProfile("c", 0.9)));
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] { return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}) == 1; }));
  absl::StatusOr<v1::RankReply> reply = c->Rank(wire);
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  placer::RankRequest expected_request = SampleRankRequest();
  // phasord ranks a probe's profile in the agent's frame (docs/phasord.md, "Frames").
  expected_request.jobs[2].profile = daemon::IterationFrame(protocol::ProfileFromUpdate(JobProfile("c", 0.9)));
  ExpectRankingsEqual(protocol::FromProto(*reply), placer::Rank(expected_request));
  // The probe's profile, not the request's square wave, decided c's period.
  for (const v1::JobShift& s : reply->ranked(0).shifts()) {
    if (s.job() == "c") {
      EXPECT_EQ(s.period_us(), 120000u);
    }
  }
}

TEST(DaemonTest, ClosedLoopResendsADriftingJobsOffset) {
  DaemonHarness h([](daemon::DaemonOptions& o) {
    o.realign = true;
    o.realign_threshold_us = 2000;
    o.realign_min_interval_ms = 60000;
  });
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  zmq::context_t ctx;
  zmq::socket_t sub = Subscribe(ctx, h, "a");
  absl::StatusOr<client::RankResult> ranked = c->Rank(SampleRankRequest());
  ASSERT_TRUE(ranked.ok());
  absl::StatusOr<v1::CommitReply> commit = c->Commit(ranked->ranking_id, ranked->reply.ranked(0).candidate());
  ASSERT_TRUE(commit.ok());
  ASSERT_TRUE(NextOffset(sub, 2000).has_value());  // the commit's own publication
  const v1::OffsetUpdate a = commit->offsets(0);
  ASSERT_EQ(a.job(), "a");
  auto probe = *::phasor::testing::ConnectProbe(h.options().profile_endpoint);

  // On its slot (three periods later, 1.5 ms late): no re-alignment.
  v1::ProfileUpdate on_slot = JobProfile("a", 0.9);
  on_slot.set_t0_epoch_us(a.origin_epoch_us() + a.shift_us() + 3 * a.period_us() + 1500);
  ASSERT_TRUE(probe->Publish(on_slot));
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] { return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}) == 1; }));
  EXPECT_EQ(h.daemon().metrics().Value("phasord_realignments_total", {{"job", "a"}}), 0);
  EXPECT_EQ(h.daemon().metrics().Value("phasord_phase_error_us", {{"job", "a"}}), 1500);
  EXPECT_FALSE(NextOffset(sub, 100).has_value());

  // 7 ms early: re-sent once and counted.
  v1::ProfileUpdate drifted = JobProfile("a", 0.9);
  drifted.set_t0_epoch_us(a.origin_epoch_us() + a.shift_us() + 5 * a.period_us() - 7000);
  ASSERT_TRUE(probe->Publish(drifted));
  std::optional<v1::OffsetUpdate> resent = NextOffset(sub, 2000);
  ASSERT_TRUE(resent.has_value());
  EXPECT_EQ(resent->shift_us(), a.shift_us());
  EXPECT_EQ(resent->version(), a.version() + 1);  // changed: the agents re-align
  EXPECT_EQ(h.daemon().metrics().Value("phasord_realignments_total", {{"job", "a"}}), 1);
  EXPECT_EQ(h.daemon().metrics().Value("phasord_phase_error_us", {{"job", "a"}}), -7000);
  // Still drifting, but within the minimum interval: not re-sent again.
  ASSERT_TRUE(probe->Publish(drifted));
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] { return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "job"}}) == 3; }));
  EXPECT_EQ(h.daemon().metrics().Value("phasord_realignments_total", {{"job", "a"}}), 1);
}

TEST(DaemonTest, MetricsEndpointServesPrometheusText) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  absl::StatusOr<client::RankResult> ranked = c->Rank(SampleRankRequest());
  ASSERT_TRUE(ranked.ok());
  ASSERT_TRUE(c->Commit(ranked->ranking_id, ranked->reply.ranked(0).candidate()).ok());
  ASSERT_FALSE(c->GetOffset("nobody").ok());
  // A link profile from a probe is scored against the capacity phasord knows.
  auto probe = *::phasor::testing::ConnectProbe(h.options().profile_endpoint);
  v1::ProfileUpdate link;
  link.set_subject("tor2-up");
  link.set_kind(v1::ProfileUpdate::LINK);
  link.set_period_us(4000);
  link.set_bin_us(1000);
  for (double g : {75.0, 50.0, 0.0, 0.0}) link.add_gbps(g);  // 25 Gb/s over 50 for a quarter
  link.set_confidence(1);
  ASSERT_TRUE(probe->Publish(link));
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] { return h.daemon().metrics().Value("phasord_profiles_total", {{"kind", "link"}}) == 1; }));

  const int port = h.daemon().endpoints().metrics_port;
  absl::StatusOr<std::string> text = ::phasor::testing::HttpGet("127.0.0.1", port, "/metrics");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_THAT(*text, HasSubstr("# TYPE phasord_requests_total counter\n"));
  EXPECT_THAT(*text, HasSubstr("phasord_requests_total{type=\"RankRequest\"} 1\n"));
  EXPECT_THAT(*text, HasSubstr("phasord_requests_total{type=\"CommitPlacement\"} 1\n"));
  EXPECT_THAT(*text, HasSubstr("phasord_errors_total{code=\"NOT_FOUND\",type=\"GetOffset\"} 1\n"));
  EXPECT_THAT(*text, HasSubstr("phasord_solve_seconds_count 1\n"));
  EXPECT_THAT(*text, HasSubstr("phasord_solve_seconds_bucket{le=\"+Inf\"} 1\n"));
  EXPECT_THAT(*text, HasSubstr("phasord_link_score{link=\"tor1-up\",source=\"commit\"}"));
  EXPECT_THAT(*text, HasSubstr("phasord_link_score{link=\"tor2-up\",source=\"probe\"} 0.875\n"));
  EXPECT_THAT(*text, HasSubstr("phasord_link_excess{link=\"tor2-up\",source=\"probe\"} 0.125\n"));
  EXPECT_THAT(*text, HasSubstr("phasord_jobs 3\n"));
  EXPECT_EQ(::phasor::testing::HttpGet("127.0.0.1", port, "/nothing").status().code(), absl::StatusCode::kNotFound);
}

TEST(DaemonTest, LoadEightClientsThousandRequestsEachNoneLostNoneTwice) {
  DaemonHarness h([](daemon::DaemonOptions& o) { o.keep_rankings = 100000; });
  ASSERT_TRUE(h.Start());
  constexpr int kClients = 8;
  constexpr int kRequests = 1000;
  placer::RankRequest small;
  small.links = {{"l", 50}};
  placer::Job a{"a", {}, std::nullopt};
  a.profile.period_us = 20000;
  a.profile.square = placer::SquareWave{8000, 40, 0, 0};
  placer::Job b = a;
  b.id = "b";
  small.jobs = {a, b};
  placer::Candidate cand;
  cand.id = "c";
  cand.links["a"]["l"] = 1;
  cand.links["b"]["l"] = 1;
  small.candidates = {cand};
  const placer::Ranking expected = placer::Rank(small);

  std::vector<std::vector<uint64_t>> ids(kClients);
  std::vector<uint64_t> stale(kClients, 0);
  std::vector<int> failures(kClients, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto c = Connect(h, 20000);
      for (int i = 0; i < kRequests; ++i) {
        absl::StatusOr<client::RankResult> r = c->Rank(small);
        if (!r.ok() || r->ranking.ranked.size() != 1 ||
            r->ranking.ranked[0].shifts_us != expected.ranked[0].shifts_us) {
          ++failures[t];
          continue;
        }
        ids[t].push_back(r->ranking_id);
      }
      stale[t] = c->stale_replies();
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint64_t> all;
  for (int t = 0; t < kClients; ++t) {
    EXPECT_EQ(failures[t], 0) << "client " << t;
    EXPECT_EQ(stale[t], 0u) << "client " << t;  // no reply answered twice or to the wrong request
    all.insert(ids[t].begin(), ids[t].end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kClients * kRequests));  // every request ranked once
  EXPECT_EQ(h.daemon().metrics().Value("phasord_requests_total", {{"type", "RankRequest"}}), kClients * kRequests);
}

// RankRequests sent back to back (one DEALER, no waiting) to a phasord with
// one solver: the queue holds max_queued_rankings and answers the rest at
// once; a request whose wait_ms passed while it queued is answered unsolved.
// Every request gets exactly one answer either way.
struct Burst {
  int solved = 0;
  int queue_full = 0;
  int out_of_time = 0;
  int other = 0;
  std::set<uint64_t> solved_ids;
};

// Sends one RankRequest per entry of `wait_ms` (request ids 1..n, each with
// that wait) back to back on one DEALER, then reads every answer.
Burst SendBurst(const DaemonHarness& h, const placer::RankRequest& request, const std::vector<uint32_t>& wait_ms) {
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(h.options().request_endpoint);
  v1::RankRequest wire = protocol::ToProto(request);
  const int n = static_cast<int>(wait_ms.size());
  for (int i = 1; i <= n; ++i) {
    wire.set_request_id(static_cast<uint64_t>(i));
    wire.set_wait_ms(wait_ms[i - 1]);
    std::vector<std::string> frames = protocol::EncodeFrames(MessageType::kRankRequest, wire);
    frames.insert(frames.begin(), "");
    std::vector<zmq::const_buffer> out;
    for (const std::string& f : frames) out.push_back(zmq::buffer(f));
    zmq::send_multipart(dealer, out);
  }
  Burst b;
  std::set<uint64_t> answered;
  for (int i = 0; i < n; ++i) {
    zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(30000)) <= 0) break;
    std::vector<zmq::message_t> got;
    if (!zmq::recv_multipart(dealer, std::back_inserter(got))) break;
    EXPECT_EQ(got.size(), 4u);
    if (got.size() != 4) continue;
    if (got[2].to_string() == "RankReply") {
      v1::RankReply r;
      EXPECT_TRUE(r.ParseFromString(got[3].to_string()));
      EXPECT_TRUE(answered.insert(r.request_id()).second);
      b.solved_ids.insert(r.request_id());
      ++b.solved;
      continue;
    }
    v1::Error e;
    EXPECT_TRUE(e.ParseFromString(got[3].to_string()));
    EXPECT_TRUE(answered.insert(e.request_id()).second);
    if (e.message() == "max_queued_rankings: 1 rankings already wait for a solver; try again") {
      EXPECT_EQ(e.code(), v1::Error::LIMIT_EXCEEDED);
      ++b.queue_full;
    } else if ((e.message().find("for a solver, past its") != std::string::npos &&
                e.message().find(": not ranked") != std::string::npos) ||
               e.message().find("did not finish within the limit deadline_ms") != std::string::npos) {
      EXPECT_EQ(e.code(), v1::Error::LIMIT_EXCEEDED);
      ++b.out_of_time;
    } else {
      ADD_FAILURE() << e.message();
      ++b.other;
    }
  }
  EXPECT_EQ(answered.size(), static_cast<size_t>(n));  // every request answered once
  return b;
}

// A request that takes a solver a while: the sample's two kinds of candidate,
// 120 of them (240 with `count`).
placer::RankRequest ManyCandidates(int count = 120) {
  placer::RankRequest r = SampleRankRequest();
  r.candidates.pop_back();  // the one naming an unknown job
  const std::vector<placer::Candidate> two = r.candidates;
  r.candidates.clear();
  for (int i = 0; i < count; ++i) {
    placer::Candidate c = two[i % 2];
    c.id = absl::StrCat("c", i);
    r.candidates.push_back(std::move(c));
  }
  return r;
}

// Requests sent back to back to a phasord with one solver: the queue holds
// max_queued_rankings and answers the rest at once. Every request gets
// exactly one answer.
TEST(DaemonTest, TheRankQueueIsBoundedAndAnswersTheRestAtOnce) {
  DaemonHarness h([](daemon::DaemonOptions& o) {
    o.solver_threads = 1;
    o.max_queued_rankings = 1;
  });
  ASSERT_TRUE(h.Start());
  const Burst b = SendBurst(h, ManyCandidates(), std::vector<uint32_t>(40, 0));
  EXPECT_EQ(b.solved + b.queue_full, 40) << b.other;
  EXPECT_GE(b.solved, 2);      // the one solving and the one queued, at least
  EXPECT_GE(b.queue_full, 1);  // 40 cannot all have fitted one running and one waiting
  EXPECT_EQ(h.daemon().metrics().Value("phasord_rankings_dropped_total", {{"reason", "queue_full"}}), b.queue_full);
  // phasord still serves.
  auto c = Connect(h);
  EXPECT_TRUE(c->Rank(SampleRankRequest()).ok());
}

// 30 requests whose clients wait 2 ms each, then a fresh one that waits
// 10 s, behind one solver: 30 rankings of 240 candidates take the solver
// far longer than 2 ms (however fast the placer gets), so stale ones are
// answered without a solve, and the fresh one is solved.
TEST(DaemonTest, RequestsWhoseClientsGaveUpAreNotSolvedAheadOfFreshOnes) {
  DaemonHarness h([](daemon::DaemonOptions& o) { o.solver_threads = 1; });
  ASSERT_TRUE(h.Start());
  std::vector<uint32_t> waits(30, 2);
  waits.push_back(10'000);
  const Burst b = SendBurst(h, ManyCandidates(240), waits);
  EXPECT_EQ(b.solved + b.out_of_time, 31) << b.other;
  EXPECT_GE(b.out_of_time, 1);
  EXPECT_TRUE(b.solved_ids.contains(31));  // the fresh one
  EXPECT_EQ(h.daemon().metrics().Value("phasord_rankings_dropped_total", {{"reason", "time"}}), b.out_of_time);
}

class CurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::phasor::testing::MakeTempDir();
    server_ = *protocol::GenerateCurveKeyPair();
    allowed_ = *protocol::GenerateCurveKeyPair();
    stranger_ = *protocol::GenerateCurveKeyPair();
    ASSERT_TRUE(protocol::WriteKeyPair(server_, dir_ + "/server", false).ok());
    std::ofstream(dir_ + "/allowed") << "# the scheduler\n" << allowed_.public_key << "\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<client::Client> ClientWith(DaemonHarness& h, const protocol::CurveKeyPair& keys) {
    client::ClientOptions o;
    o.endpoint = h.daemon().endpoints().request;
    o.timeout_ms = 1500;
    o.curve = client::CurveClientKeys{server_.public_key, keys.public_key, keys.secret_key};
    return *client::Client::Connect(o);
  }

  std::string dir_;
  protocol::CurveKeyPair server_, allowed_, stranger_;
};

TEST_F(CurveTest, AllowedKeyIsServedUnknownKeyIsRefusedAndCounted) {
  DaemonHarness h([&](daemon::DaemonOptions& o) { UseCurveOnLoopback(o, dir_); });
  ASSERT_TRUE(h.Start());
  EXPECT_THAT(h.daemon().endpoints().request, ::testing::StartsWith("tcp://127.0.0.1:"));
  auto good = ClientWith(h, allowed_);
  absl::StatusOr<v1::HealthReply> health = good->Health();
  ASSERT_TRUE(health.ok()) << health.status().message();
  absl::StatusOr<client::RankResult> ranked = good->Rank(SampleRankRequest());
  ASSERT_TRUE(ranked.ok());
  ExpectRankingsEqual(ranked->ranking, placer::Rank(SampleRankRequest()));

  auto bad = ClientWith(h, stranger_);
  EXPECT_EQ(bad->Health().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(h.daemon().metrics().Value("phasord_curve_refused_total"), 1);

  // A plain client gets nothing either.
  client::ClientOptions plain;
  plain.endpoint = h.daemon().endpoints().request;
  plain.timeout_ms = 500;
  EXPECT_EQ((*client::Client::Connect(plain))->Health().status().code(), absl::StatusCode::kUnavailable);
  // The allowed client is unaffected.
  EXPECT_TRUE(good->Health().ok());
}

TEST_F(CurveTest, MissingKeyFilesStopTheStart) {
  daemon::DaemonOptions o;
  o.request_endpoint = "ipc://" + dir_ + "/r";
  o.profile_endpoint = "ipc://" + dir_ + "/p";
  o.offset_endpoint = "ipc://" + dir_ + "/o";
  o.metrics_listen = "";
  o.state_path = dir_ + "/state.db";
  o.curve.server_secret_key_file = dir_ + "/nope.secret";
  o.curve.server_public_key_file = dir_ + "/server.pub";
  o.curve.allowed_clients_file = dir_ + "/allowed";
  absl::StatusOr<std::unique_ptr<daemon::Daemon>> d = daemon::Daemon::Start(o);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("curve.server_secret_key_file"));
}

}  // namespace
}  // namespace phasor
