#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "placer/ranker.h"
#include "protocol/convert.h"
#include "protocol/curve_keys.h"
#include "protocol/endpoint.h"
#include "protocol/framing.h"
#include "protocol/status.h"
#include "tests/testing/rankings.h"

namespace phasor::protocol {
namespace {

using ::testing::HasSubstr;

placer::RankRequest SampleRequest() {
  placer::RankRequest r;
  r.links = {{"tor1-up", 50.0}, {"tor2-up", 40.0}};
  placer::Job a{"a", {}, std::nullopt};
  a.profile.period_us = 200000;
  a.profile.bin_us = 50000;
  a.profile.gbps = {40.0, 40.0, 0.0, 12.5};
  a.profile.t0_epoch_us = 1700000000000000;
  placer::Job b{"b", {}, 12000u};
  b.profile.period_us = 300000;
  b.profile.square = placer::SquareWave{90000, 40.0, 5000, 1.5};
  r.jobs = {a, b};
  placer::Candidate c0;
  c0.id = "c0";
  c0.links["a"]["tor1-up"] = 1.0;
  c0.links["b"]["tor1-up"] = 0.5;
  c0.links["b"]["tor2-up"] = 0.5;
  placer::Candidate c1;
  c1.id = "c1";
  c1.servers["a"] = {"s1", "s2"};
  r.candidates = {c0, c1};
  r.options.circle.quantum_us = 2000;
  r.options.circle.max_bins = 1234;
  r.options.solver.restarts = 7;
  r.options.solver.seed = 42;
  r.options.joint.max_spanning_trees = 3;
  r.options.joint.max_sweeps = 5;
  return r;
}

void ExpectProfileEq(const placer::TrafficProfile& x, const placer::TrafficProfile& y) {
  EXPECT_EQ(x.period_us, y.period_us);
  EXPECT_EQ(x.bin_us, y.bin_us);
  EXPECT_EQ(x.gbps, y.gbps);
  ASSERT_EQ(x.square.has_value(), y.square.has_value());
  if (x.square) {
    EXPECT_EQ(x.square->up_us, y.square->up_us);
    EXPECT_EQ(x.square->up_gbps, y.square->up_gbps);
    EXPECT_EQ(x.square->start_us, y.square->start_us);
    EXPECT_EQ(x.square->down_gbps, y.square->down_gbps);
  }
  EXPECT_EQ(x.t0_epoch_us, y.t0_epoch_us);
}

TEST(FramingTest, EncodeDecodeRoundTrip) {
  v1::GetOffset msg;
  msg.set_request_id(7);
  msg.set_job("job-a");
  const std::vector<std::string> frames = EncodeFrames(MessageType::kGetOffset, msg);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0], "phasor.v1");
  EXPECT_EQ(frames[1], "GetOffset");
  absl::StatusOr<Envelope> decoded = DecodeFrames(frames, {});
  ASSERT_TRUE(decoded.ok());
  const Envelope& env = *decoded;
  EXPECT_EQ(env.type, MessageType::kGetOffset);
  v1::GetOffset back;
  EXPECT_TRUE(ParsePayload(env, back).ok());
  EXPECT_EQ(back.request_id(), 7u);
  EXPECT_EQ(back.job(), "job-a");
}

TEST(FramingTest, EveryTypeNameRoundTrips) {
  for (MessageType t : {MessageType::kRankRequest, MessageType::kRankReply, MessageType::kCommitPlacement,
                        MessageType::kCommitReply, MessageType::kGetOffset, MessageType::kOffsetUpdate,
                        MessageType::kProfileUpdate, MessageType::kHealth, MessageType::kHealthReply,
                        MessageType::kGetSnapshot, MessageType::kSnapshot, MessageType::kReleasePlacement,
                        MessageType::kReleaseReply, MessageType::kError}) {
    EXPECT_EQ(MessageTypeFromName(MessageTypeName(t)), t) << MessageTypeName(t);
  }
  EXPECT_EQ(MessageTypeFromName("rankrequest"), std::nullopt);
}

// The Error phasord answers a bad message with (its Status through the one mapping).
v1::Error DecodeError(const std::vector<std::string>& frames, FramingOptions options = {}) {
  absl::StatusOr<Envelope> decoded = DecodeFrames(frames, options);
  EXPECT_FALSE(decoded.ok());
  return decoded.ok() ? v1::Error() : ErrorFromStatus(decoded.status());
}

TEST(FramingTest, WrongFrameCountIsBadFrames) {
  EXPECT_EQ(DecodeError({}).code(), v1::Error::BAD_FRAMES);
  EXPECT_EQ(DecodeError({"phasor.v1", "Health"}).code(), v1::Error::BAD_FRAMES);
  const v1::Error e = DecodeError({"phasor.v1", "Health", "", "extra"});
  EXPECT_EQ(e.code(), v1::Error::BAD_FRAMES);
  EXPECT_THAT(e.message(), HasSubstr("got 4"));
}

TEST(FramingTest, UnknownVersionNamesTheVersionsSpoken) {
  const v1::Error e = DecodeError({"phasor.v2", "Health", ""});
  EXPECT_EQ(e.code(), v1::Error::UNSUPPORTED_VERSION);
  EXPECT_THAT(e.message(), HasSubstr("'phasor.v2'"));
  EXPECT_THAT(e.message(), HasSubstr("spoken: phasor.v1"));
  ASSERT_EQ(e.supported_versions_size(), 1);
  EXPECT_EQ(e.supported_versions(0), "phasor.v1");
}

TEST(FramingTest, GarbageVersionIsQuotedPrintably) {
  const v1::Error e = DecodeError({std::string("\x01\xff\x00zz", 5), "Health", ""});
  EXPECT_EQ(e.code(), v1::Error::UNSUPPORTED_VERSION);
  EXPECT_THAT(e.message(), HasSubstr("'???zz'"));
}

TEST(FramingTest, UnknownTypeIsUnknownType) {
  const v1::Error e = DecodeError({"phasor.v1", "Launch", ""});
  EXPECT_EQ(e.code(), v1::Error::UNKNOWN_TYPE);
  EXPECT_THAT(e.message(), HasSubstr("'Launch'"));
}

TEST(FramingTest, OversizedPayloadIsTooLarge) {
  FramingOptions options;
  options.max_message_bytes = 10;
  EXPECT_TRUE(DecodeFrames({"phasor.v1", "Health", std::string(10, 'x')}, options).ok());
  const v1::Error e = DecodeError({"phasor.v1", "Health", std::string(11, 'x')}, options);
  EXPECT_EQ(e.code(), v1::Error::TOO_LARGE);
  EXPECT_THAT(e.message(), HasSubstr("11 bytes exceeds the limit of 10"));
}

TEST(FramingTest, TruncatedPayloadIsBadPayload) {
  const std::string full = ToProto(SampleRequest()).SerializeAsString();
  // Cutting inside a length-delimited field leaves bytes protobuf cannot parse.
  Envelope env{MessageType::kRankRequest, full.substr(0, full.size() / 2 + 1)};
  v1::RankRequest out;
  absl::Status s = ParsePayload(env, out);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_EQ(WireCode(s), v1::Error::BAD_PAYLOAD);
  EXPECT_THAT(s.message(), HasSubstr("does not parse as RankRequest"));
  env.payload = "\xff\xff\xff\xff";
  EXPECT_FALSE(ParsePayload(env, out).ok());
}

TEST(StatusMappingTest, EveryWireCodeSurvivesStatusAndBack) {
  for (int c = v1::Error::UNSUPPORTED_VERSION; c <= v1::Error::Code_MAX; ++c) {
    const auto code = static_cast<v1::Error::Code>(c);
    const v1::Error e = ErrorFromStatus(WireStatus(code, "why"), 42);
    EXPECT_EQ(e.code(), code) << ErrorCodeName(code);
    EXPECT_EQ(e.message(), "why");
    EXPECT_EQ(e.request_id(), 42u);
    const absl::Status back = StatusFromError(e);
    EXPECT_EQ(WireCode(back), code) << ErrorCodeName(code);
    EXPECT_EQ(back.message(), absl::StrCat("phasord: ", std::string(ErrorCodeName(code)), ": why"));
  }
}

TEST(StatusMappingTest, PlainStatusesMapByCanonicalCode) {
  EXPECT_EQ(ErrorFromStatus(absl::InvalidArgumentError("x")).code(), v1::Error::INVALID_ARGUMENT);
  EXPECT_EQ(ErrorFromStatus(absl::NotFoundError("x")).code(), v1::Error::NOT_FOUND);
  EXPECT_EQ(ErrorFromStatus(absl::ResourceExhaustedError("x")).code(), v1::Error::LIMIT_EXCEEDED);
  EXPECT_EQ(ErrorFromStatus(absl::UnauthenticatedError("x")).code(), v1::Error::UNAUTHENTICATED);
  EXPECT_EQ(ErrorFromStatus(absl::UnknownError("x")).code(), v1::Error::INTERNAL);
  EXPECT_EQ(ErrorFromStatus(absl::FailedPreconditionError("x")).code(), v1::Error::FAILED_PRECONDITION);
  EXPECT_EQ(ErrorFromStatus(absl::FailedPreconditionError("x")).supported_versions_size(), 0);
  EXPECT_EQ(ErrorFromStatus(WireStatus(v1::Error::UNSUPPORTED_VERSION, "x")).supported_versions_size(), 1);
  EXPECT_TRUE(absl::IsNotFound(StatusFromError(ErrorFromStatus(absl::NotFoundError("x")))));
  EXPECT_TRUE(absl::IsResourceExhausted(StatusFromError(protocol::MakeError(v1::Error::TOO_LARGE, "x"))));
  EXPECT_TRUE(absl::IsInvalidArgument(StatusFromError(protocol::MakeError(v1::Error::BAD_FRAMES, "x"))));
}

TEST(EndpointTest, PlainOnlyWhereLocal) {
  EXPECT_TRUE(CheckPlainEndpoint("e", "ipc:///tmp/x").ok());
  EXPECT_TRUE(CheckPlainEndpoint("e", "tcp://127.0.0.1:5").ok());
  EXPECT_EQ(CheckPlainEndpoint("e", "tcp://10.0.0.1:5", "give keys").message(),
            "e: 'tcp://10.0.0.1:5' is not ipc:// or loopback: plain sockets are refused there; give keys");
  EXPECT_EQ(CheckEndpoint("e", "http://x").message(), "e: 'http://x' is not a tcp://, ipc:// or inproc:// endpoint");
}

TEST(FramingTest, ErrorCodeNames) {
  EXPECT_EQ(ErrorCodeName(v1::Error::NOT_FOUND), "NOT_FOUND");
  EXPECT_EQ(ErrorCodeName(v1::Error::TOO_LARGE), "TOO_LARGE");
}

TEST(ConvertTest, RankRequestRoundTripIsExact) {
  const placer::RankRequest in = SampleRequest();
  const v1::RankRequest wire = ToProto(in);
  v1::RankRequest reparsed;
  ASSERT_TRUE(reparsed.ParseFromString(wire.SerializeAsString()));
  absl::StatusOr<placer::RankRequest> out = FromProto(reparsed);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->links.size(), 2u);
  EXPECT_EQ(out->links[1].id, "tor2-up");
  EXPECT_EQ(out->links[1].capacity_gbps, 40.0);
  ASSERT_EQ(out->jobs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out->jobs[i].id, in.jobs[i].id);
    EXPECT_EQ(out->jobs[i].pinned_shift_us, in.jobs[i].pinned_shift_us);
    ExpectProfileEq(out->jobs[i].profile, in.jobs[i].profile);
  }
  ASSERT_EQ(out->candidates.size(), 2u);
  EXPECT_EQ(out->candidates[0].links, in.candidates[0].links);
  EXPECT_EQ(out->candidates[1].servers, in.candidates[1].servers);
  EXPECT_EQ(out->options.circle.quantum_us, 2000u);
  EXPECT_EQ(out->options.circle.max_bins, 1234u);
  EXPECT_EQ(out->options.solver.restarts, 7u);
  EXPECT_EQ(out->options.solver.seed, 42u);
  EXPECT_EQ(out->options.solver.exact_max_evaluations, in.options.solver.exact_max_evaluations);
  EXPECT_EQ(out->options.joint.max_spanning_trees, 3u);
  EXPECT_EQ(out->options.joint.max_sweeps, 5u);
}

TEST(ConvertTest, RunningPartRoundTripsAndIsAbsentWhenEmpty) {
  placer::RankRequest in = SampleRequest();
  // No running part: the wire has none (old requests serialise as before).
  EXPECT_FALSE(ToProto(in).has_running());
  in.candidates[0].links.erase("b");
  in.running.links["b"] = {{"tor1-up", 0.5}, {"tor2-up", 0.25}};
  in.running.servers["c"] = {"s3", "s4"};
  const v1::RankRequest wire = ToProto(in);
  ASSERT_TRUE(wire.has_running());
  EXPECT_EQ(wire.running().links().at("b").shares().at("tor2-up"), 0.25);
  EXPECT_EQ(wire.running().servers().at("c").servers_size(), 2);
  v1::RankRequest reparsed;
  ASSERT_TRUE(reparsed.ParseFromString(wire.SerializeAsString()));
  absl::StatusOr<placer::RankRequest> out = FromProto(reparsed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->running.links, in.running.links);
  EXPECT_EQ(out->running.servers, in.running.servers);
  EXPECT_EQ(out->candidates[0].links, in.candidates[0].links);
}

TEST(ConvertTest, FreeServersRoundTripInOrder) {
  placer::RankRequest in = SampleRequest();
  EXPECT_EQ(ToProto(in).free_servers_size(), 0);
  in.free_servers = {"s4", "s1", "s3"};
  v1::RankRequest reparsed;
  ASSERT_TRUE(reparsed.ParseFromString(ToProto(in).SerializeAsString()));
  absl::StatusOr<placer::RankRequest> out = FromProto(reparsed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->free_servers, in.free_servers);
}

TEST(ConvertTest, UnsetOptionsKeepPlacerDefaults) {
  v1::RankRequest wire;
  absl::StatusOr<placer::RankRequest> out = FromProto(wire);
  ASSERT_TRUE(out.ok());
  const placer::RankOptions defaults;
  EXPECT_EQ(out->options.circle.quantum_us, defaults.circle.quantum_us);
  EXPECT_EQ(out->options.circle.max_bins, defaults.circle.max_bins);
  EXPECT_EQ(out->options.solver.seed, defaults.solver.seed);
  EXPECT_EQ(out->options.joint.max_spanning_trees, defaults.joint.max_spanning_trees);
}

TEST(ConvertTest, MissingProfileComesFromLookupOrIsNotFound) {
  v1::RankRequest wire = ToProto(SampleRequest());
  wire.mutable_jobs(1)->clear_profile();
  absl::StatusOr<placer::RankRequest> none = FromProto(wire);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "jobs[1].profile: no profile given and none known for job 'b'");

  placer::TrafficProfile known;
  known.period_us = 100000;
  known.bin_us = 50000;
  known.gbps = {10, 0};
  absl::StatusOr<placer::RankRequest> filled = FromProto(wire, [&](const std::string& job) {
    return job == "b" ? std::optional<placer::TrafficProfile>(known) : std::nullopt;
  });
  ASSERT_TRUE(filled.ok());
  ExpectProfileEq(filled->jobs[1].profile, known);
  EXPECT_EQ(filled->jobs[1].pinned_shift_us, 12000u);
}

TEST(ConvertTest, RankingRoundTripIsExactAndCarriesShiftPeriods) {
  placer::RankRequest request = SampleRequest();
  request.candidates.pop_back();  // server form needs a topology
  ASSERT_TRUE(placer::ValidateRankRequest(request).ok()) << placer::ValidateRankRequest(request).message();
  const placer::Ranking ranking = placer::Rank(request);
  ASSERT_EQ(ranking.ranked.size(), 1u);
  const v1::RankReply reply = ToProto(ranking, request);
  const placer::Ranking back = FromProto(reply);
  ::phasor::testing::ExpectRankingsEqual(back, ranking);
  // Both jobs share tor1-up at quantum 2000: periods are multiples of it.
  ASSERT_EQ(reply.ranked(0).shifts_size(), 2);
  EXPECT_EQ(reply.ranked(0).shifts(0).period_us(), 200000u);
  EXPECT_EQ(reply.ranked(0).shifts(1).period_us(), 300000u);
  // Without links: the same reply, its candidates' links left out.
  const v1::RankReply lean = ToProto(ranking, request, /*links=*/false);
  v1::RankReply expected = reply;
  ASSERT_GT(expected.ranked(0).links_size(), 0);
  for (v1::RankedCandidate& c : *expected.mutable_ranked()) c.clear_links();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(expected, lean)) << lean.DebugString();
}

TEST(ConvertTest, ShiftPeriodRoundsToTheLinkQuantum) {
  placer::Job j{"j", {}, std::nullopt};
  j.profile.period_us = 10500;
  placer::RankedCandidate c;
  EXPECT_EQ(ShiftPeriodUs(c, j), 10500u);  // on no contended link: its own period
  placer::LinkResult l;
  l.jobs = {"j"};
  l.quantum_us = 1000;
  c.links = {l};
  EXPECT_EQ(ShiftPeriodUs(c, j), 11000u);  // halves round up
}

TEST(ConvertTest, EachShiftCarriesThePeriodOfItsFirstLinkWithAQuantum) {
  // Three jobs, links of several quanta in the candidate's order: the reply
  // gives each job's shift the period on the first link naming it whose
  // quantum is set (ShiftPeriodUs), and its own period when none does.
  placer::RankRequest request;
  for (const auto& [id, period] : std::vector<std::pair<std::string, uint32_t>>{{"a", 10500}, {"b", 10300}, {"c", 9999}}) {
    placer::Job job{id, {}, std::nullopt};
    job.profile.period_us = period;
    request.jobs.push_back(job);
  }
  placer::RankedCandidate c;
  c.candidate = "c0";
  auto link = [](std::vector<std::string> jobs, uint32_t quantum) {
    placer::LinkResult l;
    l.id = "l" + std::to_string(quantum);
    l.jobs = std::move(jobs);
    l.quantum_us = quantum;
    return l;
  };
  c.links = {link({"b"}, 0), link({"a", "b"}, 1000), link({"a"}, 4000)};
  c.shifts_us = {{"a", 0}, {"b", 0}, {"c", 0}};
  placer::Ranking ranking;
  ranking.ranked = {c};
  const v1::RankReply reply = ToProto(ranking, request);
  ASSERT_EQ(reply.ranked(0).shifts_size(), 3);
  EXPECT_EQ(reply.ranked(0).shifts(0).period_us(), 11000u);  // a: l1000 comes first
  EXPECT_EQ(reply.ranked(0).shifts(1).period_us(), 10000u);  // b: l0 has no quantum, then l1000
  EXPECT_EQ(reply.ranked(0).shifts(2).period_us(), 9999u);   // c: on no link
  for (size_t j = 0; j < 3; ++j) EXPECT_EQ(reply.ranked(0).shifts(j).period_us(), ShiftPeriodUs(c, request.jobs[j]));
}

TEST(ConvertTest, ProfileUpdateBecomesArrayProfile) {
  v1::ProfileUpdate u;
  u.set_subject("a");
  u.set_period_us(3000);
  u.set_bin_us(1000);
  u.add_gbps(1);
  u.add_gbps(2);
  u.add_gbps(3);
  u.set_t0_epoch_us(55);
  const placer::TrafficProfile p = ProfileFromUpdate(u);
  EXPECT_EQ(p.period_us, 3000u);
  EXPECT_EQ(p.gbps, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(p.t0_epoch_us, 55);
  EXPECT_TRUE(placer::ValidateProfile(p).ok());
}

class CurveKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/phasor-keys-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CurveKeysTest, GenerateWriteRead) {
  absl::StatusOr<CurveKeyPair> pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_TRUE(IsZ85Key(pair->public_key));
  EXPECT_TRUE(IsZ85Key(pair->secret_key));
  EXPECT_NE(pair->public_key, pair->secret_key);
  ASSERT_TRUE(WriteKeyPair(*pair, dir_ + "/server", false).ok());
  EXPECT_EQ(*ReadKeyFile(dir_ + "/server.pub"), pair->public_key);
  EXPECT_EQ(*ReadKeyFile(dir_ + "/server.secret"), pair->secret_key);
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/server.secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const absl::Status again = WriteKeyPair(*pair, dir_ + "/server", false);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(WriteKeyPair(*pair, dir_ + "/server", true).ok());
}

TEST_F(CurveKeysTest, BadKeyFilesAreErrors) {
  EXPECT_EQ(ReadKeyFile(dir_ + "/missing.pub").status().code(), absl::StatusCode::kNotFound);
  std::ofstream(dir_ + "/short.pub") << "abc\n";
  absl::StatusOr<std::string> bad = ReadKeyFile(dir_ + "/short.pub");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("short.pub: not a 40-character Z85"));
}

// The one loader of a client's three key files (the extender's config, `phasor
// diagnose`, and through LoadCurveClientKeys every prefix-style caller).
TEST_F(CurveKeysTest, ClientKeyFilesAreAllThreeOrNoneAndErrorsNameTheField) {
  const CurveKeyPair server = *GenerateCurveKeyPair();
  const CurveKeyPair mine = *GenerateCurveKeyPair();
  ASSERT_TRUE(WriteKeyPair(server, dir_ + "/phasord", false).ok());
  ASSERT_TRUE(WriteKeyPair(mine, dir_ + "/me", false).ok());
  absl::StatusOr<std::optional<CurveClientKeys>> none = LoadCurveClientKeyFiles({"a", ""}, {"b", ""}, {"c", ""});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  absl::StatusOr<std::optional<CurveClientKeys>> all =
      LoadCurveClientKeyFiles({"a", dir_ + "/phasord.pub"}, {"b", dir_ + "/me.pub"}, {"c", dir_ + "/me.secret"});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_TRUE(all->has_value());
  EXPECT_EQ((*all)->server_public_key, server.public_key);
  EXPECT_EQ((*all)->client_public_key, mine.public_key);
  EXPECT_EQ((*all)->client_secret_key, mine.secret_key);
  EXPECT_EQ(LoadCurveClientKeyFiles({"a", dir_ + "/phasord.pub"}, {"b", ""}, {"c", dir_ + "/me.secret"}).status(),
            absl::InvalidArgumentError("b: required with c (CURVE keys: all three files or none)"));
  EXPECT_EQ(LoadCurveClientKeyFiles({"a", dir_ + "/nope.pub"}, {"b", dir_ + "/me.pub"}, {"c", dir_ + "/me.secret"})
                .status(),
            absl::InvalidArgumentError(absl::StrCat("a: ", dir_, "/nope.pub: cannot open key file")));
  // The prefix form is the same loader.
  absl::StatusOr<CurveClientKeys> prefixed = LoadCurveClientKeys(dir_ + "/phasord.pub", dir_ + "/me", "s", "k");
  ASSERT_TRUE(prefixed.ok());
  EXPECT_EQ(prefixed->client_secret_key, mine.secret_key);
  EXPECT_EQ(LoadCurveClientKeys(dir_ + "/phasord.pub", dir_ + "/other", "s", "k").status(),
            absl::InvalidArgumentError(absl::StrCat("k: ", dir_, "/other.pub: cannot open key file")));
}

TEST_F(CurveKeysTest, AllowListSkipsCommentsAndNamesBadLines) {
  const CurveKeyPair a = *GenerateCurveKeyPair();
  const CurveKeyPair b = *GenerateCurveKeyPair();
  std::ofstream(dir_ + "/allow") << "# schedulers\n" << a.public_key << "\n\n  " << b.public_key << "  \n";
  absl::StatusOr<std::set<std::string>> keys = ReadAllowList(dir_ + "/allow");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::set<std::string>{a.public_key, b.public_key}));
  std::ofstream(dir_ + "/bad") << a.public_key << "\nnot-a-key\n";
  absl::StatusOr<std::set<std::string>> bad = ReadAllowList(dir_ + "/bad");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("/bad:2:"));
}

}  // namespace
}  // namespace phasor::protocol
