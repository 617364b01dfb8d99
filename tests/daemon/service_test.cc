// phasord's Service without sockets (daemon/service.h): typed requests in,
// Statuses out, offsets to an injected publisher, state in SQLite.
#include "daemon/service.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/solver_pool.h"
#include "google/protobuf/util/message_differencer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/ranker.h"
#include "protocol/convert.h"
#include "protocol/running_jobs.h"
#include "tests/daemon/daemon_harness.h"

namespace phasor::daemon {
namespace service_test {
namespace {

using ::testing::HasSubstr;

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::phasor::testing::MakeTempDir();
    options_.allow_plain = true;
    options_.request_endpoint = "ipc://" + dir_ + "/r";
    options_.profile_endpoint = "ipc://" + dir_ + "/p";
    options_.offset_endpoint = "ipc://" + dir_ + "/o";
    options_.state_path = dir_ + "/state.db";
    SetLogLevel("warn");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Service> Open() {
    absl::StatusOr<std::unique_ptr<Service>> s =
        Service::Open(options_, &metrics_, [this] { return now_us_; },
                      [this](const v1::OffsetUpdate& u) { published_.push_back(u); });
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? *std::move(s) : nullptr;
  }

  // Ranks the sample and commits its first candidate; returns the first
  // job's offset (nullopt, with a failure, when either call fails).
  std::optional<v1::OffsetUpdate> CommitSample(Service& service) {
    absl::StatusOr<v1::RankReply> reply = service.Rank(protocol::ToProto(::phasor::testing::SampleRankRequest()));
    EXPECT_TRUE(reply.ok()) << reply.status();
    if (!reply.ok()) return std::nullopt;
    v1::CommitPlacement commit;
    commit.set_ranking_id(reply->ranking_id());
    commit.set_candidate(reply->ranked(0).candidate());
    absl::StatusOr<v1::CommitReply> committed = service.Commit(commit);
    EXPECT_TRUE(committed.ok()) << committed.status();
    if (!committed.ok()) return std::nullopt;
    return committed->offsets(0);
  }
  // A probe's profile of the offset's job, its Up phase `late_us` after its
  // slot three periods on.
  static v1::ProfileUpdate LateBy(const v1::OffsetUpdate& o, int64_t late_us) {
    v1::ProfileUpdate u;
    u.set_subject(o.job());
    u.set_kind(v1::ProfileUpdate::JOB);
    u.set_period_us(o.period_us());
    u.set_bin_us(o.period_us());
    u.add_gbps(10);
    u.set_confidence(1);
    u.set_t0_epoch_us(o.origin_epoch_us() + o.shift_us() + 3 * int64_t{o.period_us()} + late_us);
    return u;
  }

  std::string dir_;
  DaemonOptions options_;
  Metrics metrics_;
  int64_t now_us_ = 1'700'000'000'000'000;
  std::vector<v1::OffsetUpdate> published_;
};

TEST_F(ServiceTest, RankCommitAndOffsetsWithoutSockets) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  v1::RankRequest request = protocol::ToProto(::phasor::testing::SampleRankRequest());
  request.set_request_id(7);
  absl::StatusOr<v1::RankReply> reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ(reply->request_id(), 7u);
  EXPECT_EQ(reply->ranking_id(), 1u);
  ASSERT_EQ(reply->ranked_size(), 2);
  ASSERT_EQ(reply->rejected_size(), 1);
  EXPECT_EQ(reply->rejected(0).candidate(), "c2");

  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate(reply->ranked(0).candidate());
  absl::StatusOr<v1::CommitReply> committed = service->Commit(commit);
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  EXPECT_EQ(committed->offsets_size(), 3);
  ASSERT_EQ(published_.size(), 3u);
  EXPECT_EQ(service->jobs(), 3u);

  v1::GetOffset get;
  get.set_job(committed->offsets(0).job());
  get.set_request_id(9);
  absl::StatusOr<v1::OffsetUpdate> offset = service->GetOffset(get);
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset->request_id(), 9u);
  EXPECT_EQ(offset->shift_us(), committed->offsets(0).shift_us());
  EXPECT_EQ(offset->origin_epoch_us(), now_us_);  // the epoch is the first start's clock
}

// Links only pinned running jobs load are the same in every candidate: the
// stored ranking keeps them once, and a commit of any candidate still
// records every link of it, those and its own.
TEST_F(ServiceTest, ACommitRecordsTheLinksEveryCandidateSharesAndItsOwn) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  placer::RankRequest r;
  for (const char* l : {"l0", "l1", "l2"}) r.links.push_back({l, 100});
  auto job = [](const char* id, uint32_t up_us) {
    placer::Job j{id, {}, std::nullopt};
    j.profile.period_us = 100000;
    j.profile.square = placer::SquareWave{up_us, 60.0, 0, 0};
    return j;
  };
  r.jobs = {job("r1", 40000), job("r2", 30000), job("n", 20000)};
  r.jobs[0].pinned_shift_us = 0;
  r.jobs[1].pinned_shift_us = 50000;
  // r1 and r2 alone on l0 and l1; "apart" puts n on l2 (l0 and l1 fixed in
  // both candidates' eyes but l1 not in "beside"'s), "beside" on l1.
  r.running.links = {{"r1", {{"l0", 1}, {"l1", 1}}}, {"r2", {{"l0", 1}, {"l1", 1}}}};
  r.candidates.push_back({.id = "apart", .links = {{"n", {{"l2", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  r.candidates.push_back({.id = "beside", .links = {{"n", {{"l1", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false});
  const v1::RankRequest full = protocol::ToProto(r);
  absl::StatusOr<v1::RankReply> a = service->Rank(full);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->ranked_size(), 2);
  for (const char* chosen : {"beside", "apart"}) {
    v1::RankRequest order = full;
    order.set_reply_detail(v1::RankRequest::ORDER);
    absl::StatusOr<v1::RankReply> b = service->Rank(order);
    ASSERT_TRUE(b.ok()) << b.status();
    v1::CommitPlacement commit;
    commit.set_ranking_id(b->ranking_id());
    commit.set_candidate(chosen);
    ASSERT_TRUE(service->Commit(commit).ok()) << chosen;
    const v1::RankedCandidate& c =
        a->ranked(0).candidate() == chosen ? a->ranked(0) : a->ranked(1);
    ASSERT_EQ(c.candidate(), chosen);
    std::set<std::string> links;
    for (const v1::LinkResult& l : c.links()) {
      links.insert(l.id());
      EXPECT_EQ(metrics_.Value("phasord_link_score", {{"link", l.id()}, {"source", "commit"}}), l.score())
          << chosen << " " << l.id();
    }
    EXPECT_EQ(links, (std::set<std::string>{"l0", "l1"})) << chosen;
  }
}

TEST_F(ServiceTest, AnOrderReplyHasNoLinksAndCommitsAsAFullOne) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  const v1::RankRequest full = protocol::ToProto(::phasor::testing::SampleRankRequest());
  v1::RankRequest order = full;
  order.set_reply_detail(v1::RankRequest::ORDER);
  absl::StatusOr<v1::RankReply> a = service->Rank(full);
  absl::StatusOr<v1::RankReply> b = service->Rank(order);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->ranked_size(), 2);
  ASSERT_GT(a->ranked(0).links_size(), 0);
  // The same reply but for the links.
  v1::RankReply expected = *a;
  for (v1::RankedCandidate& c : *expected.mutable_ranked()) c.clear_links();
  expected.set_ranking_id(b->ranking_id());
  expected.set_solve_seconds(b->solve_seconds());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(expected, *b)) << b->DebugString();

  // Its commit publishes the same offsets and records every link's predicted score.
  v1::CommitPlacement commit;
  commit.set_ranking_id(b->ranking_id());
  commit.set_candidate(b->ranked(0).candidate());
  absl::StatusOr<v1::CommitReply> committed = service->Commit(commit);
  ASSERT_TRUE(committed.ok()) << committed.status();
  ASSERT_EQ(committed->offsets_size(), a->ranked(0).shifts_size());
  for (int i = 0; i < committed->offsets_size(); ++i) {
    EXPECT_EQ(committed->offsets(i).job(), a->ranked(0).shifts(i).job());
    EXPECT_EQ(committed->offsets(i).shift_us(), a->ranked(0).shifts(i).shift_us());
  }
  for (const v1::LinkResult& l : a->ranked(0).links()) {
    EXPECT_EQ(metrics_.Value("phasord_link_score", {{"link", l.id()}, {"source", "commit"}}), l.score()) << l.id();
  }

  v1::RankRequest bad = full;
  bad.set_reply_detail(static_cast<v1::RankRequest::ReplyDetail>(7));
  EXPECT_EQ(service->Rank(bad).status(), absl::InvalidArgumentError("reply_detail: 7 is not FULL (0) or ORDER (1)"));
}

// Two jobs (10 ms period, 2 ms Up at 50 Gbit/s). "shared" (the host's
// first) puts both on l0 (30 Gbit/s: each Up alone exceeds it; interleaved,
// score 1 - 80/300); "wide" and "apart" share no link (score 1), but "wide"
// spreads j1 over two links, a larger footprint than the host chose.
v1::RankRequest PolicyRequest(const std::string& other) {
  placer::RankRequest r;
  r.links = {{"l0", 30}, {"l1", 50}, {"l2", 50}, {"l3", 50}};
  for (const char* id : {"j0", "j1"}) {
    placer::Job j{id, {}, std::nullopt};
    j.profile.period_us = 10000;
    j.profile.square = placer::SquareWave{2000, 50, 0, 0};
    r.jobs.push_back(j);
  }
  placer::Candidate shared{.id = "shared", .links = {{"j0", {{"l0", 1}}}, {"j1", {{"l0", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false};
  placer::Candidate wide{.id = "wide", .links = {{"j0", {{"l1", 1}}}, {"j1", {{"l2", 1}, {"l3", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false};
  placer::Candidate apart{.id = "apart", .links = {{"j0", {{"l1", 1}}}, {"j1", {{"l2", 1}}}}, .servers = {}, .rank_order = {}, .proposed_by_phasor = false};
  r.candidates = {shared, other == "wide" ? wide : apart};
  return protocol::ToProto(r);
}

TEST_F(ServiceTest, TheRankingPolicyKeepsTheHostsFirstUnlessAnotherPassesIt) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  // Score order would put "wide" first; its footprint keeps the host's first.
  absl::StatusOr<v1::RankReply> kept = service->Rank(PolicyRequest("wide"));
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  ASSERT_EQ(kept->ranked_size(), 2);
  EXPECT_EQ(kept->ranked(0).candidate(), "shared");
  EXPECT_NEAR(kept->ranked(0).score(), 1 - 80.0 / 300, 1e-12);
  EXPECT_EQ(kept->ranked(1).candidate(), "wide");
  EXPECT_EQ(kept->ranked(1).score(), 1);
  EXPECT_EQ(metrics_.Value("phasord_policy_decisions_total", {{"decision", "host-first"}}), 1);
  // "apart" passes every test: it overtakes.
  absl::StatusOr<v1::RankReply> overtaken = service->Rank(PolicyRequest("apart"));
  ASSERT_TRUE(overtaken.ok()) << overtaken.status().message();
  ASSERT_EQ(overtaken->ranked_size(), 2);
  EXPECT_EQ(overtaken->ranked(0).candidate(), "apart");
  EXPECT_EQ(overtaken->ranked(1).candidate(), "shared");
  EXPECT_EQ(metrics_.Value("phasord_policy_decisions_total", {{"decision", "overtaken"}}), 1);
  // The policy off (ranking_policy.min_gain < 0): score order.
  service.reset();
  options_.ranking_policy.min_gain = -1;
  service = Open();
  ASSERT_NE(service, nullptr);
  absl::StatusOr<v1::RankReply> off = service->Rank(PolicyRequest("wide"));
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(off->ranked(0).candidate(), "wide");
  EXPECT_EQ(metrics_.Value("phasord_policy_decisions_total", {{"decision", "off"}}), 1);
  // The committed candidate is the one the host names, whatever the order.
  v1::CommitPlacement commit;
  commit.set_ranking_id(off->ranking_id());
  commit.set_candidate("shared");
  ASSERT_TRUE(service->Commit(commit).ok());
}

TEST_F(ServiceTest, ErrorsKeepTheirCanonicalCodes) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  v1::GetOffset get;
  EXPECT_EQ(service->GetOffset(get).status(), absl::InvalidArgumentError("job: must not be empty"));
  get.set_job("ghost");
  EXPECT_EQ(service->GetOffset(get).status(), absl::NotFoundError("job: no offset for job 'ghost'"));
  v1::CommitPlacement commit;
  EXPECT_EQ(service->Commit(commit).status(), absl::InvalidArgumentError("candidate: must not be empty"));
  commit.set_candidate("c0");
  commit.set_ranking_id(99);
  EXPECT_TRUE(absl::IsNotFound(service->Commit(commit).status()));

  // A job with neither an inline nor a measured profile: NotFound, not a crash.
  v1::RankRequest request;
  request.add_links()->set_id("l");
  request.mutable_links(0)->set_capacity_gbps(10);
  request.add_jobs()->set_id("unmeasured");
  EXPECT_TRUE(absl::IsNotFound(service->Rank(request).status()));

  options_.max_candidates_per_request = 1;
  std::unique_ptr<Service> limited = Open();
  v1::RankRequest many = protocol::ToProto(::phasor::testing::SampleRankRequest());
  EXPECT_EQ(limited->Rank(many).status(),
            absl::ResourceExhaustedError("candidates: 3 entries exceed the limit of 1"));

  // The placer's limits from the config: over one, the answer names it.
  options_.max_candidates_per_request = 256;
  options_.rank_limits.max_jobs_x_links = 2;
  std::unique_ptr<Service> tight = Open();
  absl::Status over = tight->Rank(many).status();
  EXPECT_TRUE(absl::IsResourceExhausted(over)) << over;
  EXPECT_THAT(over.message(), HasSubstr("max_jobs_x_links"));

  v1::ProfileUpdate bad;
  bad.set_subject("a");
  bad.set_confidence(2);
  EXPECT_EQ(service->AcceptProfile(bad), absl::InvalidArgumentError("confidence: 2 is not in 0..1"));
  bad.set_subject("");
  EXPECT_EQ(service->AcceptProfile(bad), absl::InvalidArgumentError("subject: must not be empty"));
}

TEST_F(ServiceTest, ADriftedPhaseIsRepublishedOncePerInterval) {
  options_.realign = true;
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  const std::optional<v1::OffsetUpdate> committed = CommitSample(*service);
  ASSERT_TRUE(committed.has_value());
  const v1::OffsetUpdate& o = *committed;
  published_.clear();
  const v1::ProfileUpdate u = LateBy(o, 5000);  // 5 ms late
  ASSERT_TRUE(service->AcceptProfile(u).ok());
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0].job(), o.job());
  // The same slots with a new version: agents re-align on a changed offset only.
  EXPECT_EQ(published_[0].version(), o.version() + 1);
  EXPECT_EQ(published_[0].shift_us(), o.shift_us());
  EXPECT_EQ(published_[0].origin_epoch_us(), o.origin_epoch_us());
  EXPECT_EQ(metrics_.Value("phasord_phase_error_us", {{"job", o.job()}}), 5000);
  ASSERT_TRUE(service->AcceptProfile(u).ok());  // within realign_min_interval_ms: not again
  EXPECT_EQ(published_.size(), 1u);
  now_us_ += int64_t{options_.realign_min_interval_ms} * 1000;
  ASSERT_TRUE(service->AcceptProfile(u).ok());
  ASSERT_EQ(published_.size(), 2u);
  EXPECT_EQ(published_[1].version(), o.version() + 2);
  EXPECT_EQ(metrics_.Value("phasord_realignments_total", {{"job", o.job()}}), 2);
  // The version is stored: GetOffset says it, and so does a restarted phasord.
  v1::GetOffset get;
  get.set_job(o.job());
  EXPECT_EQ(service->GetOffset(get)->version(), o.version() + 2);
  service.reset();
  service = Open();
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(service->GetOffset(get)->version(), o.version() + 2);
}

// Off by default (the measured configuration, docs/simulator.md): the phase
// error is measured, nothing is re-sent.
TEST_F(ServiceTest, TheClosedLoopIsOffByDefault) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  const std::optional<v1::OffsetUpdate> committed = CommitSample(*service);
  ASSERT_TRUE(committed.has_value());
  const v1::OffsetUpdate& o = *committed;
  published_.clear();
  ASSERT_TRUE(service->AcceptProfile(LateBy(o, 9000)).ok());  // 9 ms late
  EXPECT_EQ(metrics_.Value("phasord_phase_error_us", {{"job", o.job()}}), 9000);
  EXPECT_TRUE(published_.empty());
  EXPECT_FALSE(metrics_.Has("phasord_realignments_total", {{"job", o.job()}}));
}

// A request's time runs from its arrival, not from the start of its solve:
// one that waited in the queue past the wait its client gave is answered
// without being ranked.
TEST_F(ServiceTest, ARequestsTimeRunsFromItsArrival) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  v1::RankRequest request = protocol::ToProto(::phasor::testing::SampleRankRequest());
  request.set_wait_ms(50);
  const SteadyTime arrival = std::chrono::steady_clock::now();
  absl::StatusOr<PreparedRanking> prepared = service->PrepareRank(request, arrival);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->time_ms, 50u);
  EXPECT_EQ(prepared->deadline, arrival + std::chrono::milliseconds(50));
  EXPECT_EQ(Service::Solve(*prepared, arrival + std::chrono::milliseconds(60)).status(),
            absl::ResourceExhaustedError(absl::StrCat(
                "deadline_ms: ranking ", prepared->ranking_id,
                " waited 60 ms for a solver, past its 50 ms (limits.deadline_ms, or the request's wait_ms "
                "when shorter): not ranked")));
  absl::StatusOr<SolvedRanking> solved = Service::Solve(*prepared, arrival + std::chrono::milliseconds(10));
  ASSERT_TRUE(solved.ok()) << solved.status();
  EXPECT_EQ(solved->reply.ranked_size(), 2);
  // Without a wait, limits.deadline_ms; a longer wait does not extend it.
  request.set_wait_ms(0);
  EXPECT_EQ(service->PrepareRank(request, arrival)->time_ms, options_.rank_limits.deadline_ms);
  request.set_wait_ms(100'000);
  EXPECT_EQ(service->PrepareRank(request, arrival)->time_ms, options_.rank_limits.deadline_ms);
}

// Everything phasord keeps per job goes with its release, and per link with
// the last placement that loads it: rows, profiles, link scores,
// capacities, the closed loop's state and the metric series.
TEST_F(ServiceTest, AReleaseForgetsEverythingItKeptPerJob) {
  options_.realign = true;
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  // c0: a and b on tor1-up, c alone on tor2-up.
  absl::StatusOr<v1::RankReply> reply = service->Rank(protocol::ToProto(::phasor::testing::SampleRankRequest()));
  ASSERT_TRUE(reply.ok());
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("c0");
  absl::StatusOr<v1::CommitReply> committed = service->Commit(commit);
  ASSERT_TRUE(committed.ok()) << committed.status();
  v1::OffsetUpdate c;
  for (const v1::OffsetUpdate& o : committed->offsets()) {
    if (o.job() == "c") c = o;
  }
  ASSERT_EQ(c.job(), "c");
  // A probe's profile of c, 5 ms late (measured, re-aligned), and of both links.
  v1::ProfileUpdate job;
  job.set_subject("c");
  job.set_kind(v1::ProfileUpdate::JOB);
  job.set_period_us(c.period_us());
  job.set_bin_us(c.period_us());
  job.add_gbps(10);
  job.set_confidence(1);
  job.set_t0_epoch_us(c.origin_epoch_us() + c.shift_us() + 2 * int64_t{c.period_us()} + 5000);
  ASSERT_TRUE(service->AcceptProfile(job).ok());
  for (const char* link : {"tor1-up", "tor2-up"}) {
    v1::ProfileUpdate l;
    l.set_subject(link);
    l.set_kind(v1::ProfileUpdate::LINK);
    l.set_period_us(4000);
    l.set_bin_us(1000);
    for (double g : {75.0, 50.0, 0.0, 0.0}) l.add_gbps(g);
    l.set_confidence(1);
    ASSERT_TRUE(service->AcceptProfile(l).ok());
  }
  const Labels series_c = {{"job", "c"}};
  const Labels tor2_probe = {{"link", "tor2-up"}, {"source", "probe"}};
  ASSERT_TRUE(metrics_.Has("phasord_phase_error_us", series_c));
  ASSERT_TRUE(metrics_.Has("phasord_realignments_total", series_c));
  ASSERT_TRUE(metrics_.Has("phasord_link_score", tor2_probe));
  ASSERT_TRUE(metrics_.Has("phasord_link_score", {{"link", "tor1-up"}, {"source", "commit"}}));

  v1::ReleasePlacement release;
  release.add_jobs("c");
  absl::StatusOr<v1::ReleaseReply> released = service->Release(release);
  ASSERT_TRUE(released.ok()) << released.status();
  ASSERT_EQ(released->released_size(), 1);
  for (const char* name : {"phasord_phase_error_us", "phasord_realignments_total"}) {
    EXPECT_FALSE(metrics_.Has(name, series_c)) << name;
  }
  for (const char* name : {"phasord_link_score", "phasord_link_excess"}) {
    EXPECT_FALSE(metrics_.Has(name, tor2_probe)) << name;
    EXPECT_TRUE(metrics_.Has(name, {{"link", "tor1-up"}, {"source", "probe"}})) << name;  // a and b still load it
    EXPECT_TRUE(metrics_.Has(name, {{"link", "tor1-up"}, {"source", "commit"}})) << name;
  }
  // The database: c's profile and tor2-up's scores and capacity are gone,
  // tor1-up's scores stay.
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(options_.state_path, "normal");
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->LinkScoreHistory("tor2-up", 100)->empty());
    EXPECT_EQ((*store)->LinkScoreHistory("tor1-up", 100)->size(), 2u);  // the commit's, the probe's
    absl::StatusOr<std::vector<StoredProfile>> profiles = (*store)->LoadProfiles();
    ASSERT_TRUE(profiles.ok()) << profiles.status();
    for (const StoredProfile& p : *profiles) EXPECT_NE(p.subject, "c");
    EXPECT_EQ((*store)->LoadCommittedInputs()->capacities_gbps.count("tor2-up"), 0u);
    EXPECT_EQ((*store)->LoadCommittedInputs()->capacities_gbps.count("tor1-up"), 1u);
  }
  // A probe profile of tor2-up is no longer scored (no capacity known), and
  // a restarted phasord knows nothing of c.
  v1::ProfileUpdate again;
  again.set_subject("tor2-up");
  again.set_kind(v1::ProfileUpdate::LINK);
  again.set_period_us(4000);
  again.set_bin_us(1000);
  for (double g : {10.0, 10.0, 0.0, 0.0}) again.add_gbps(g);
  again.set_confidence(1);
  ASSERT_TRUE(service->AcceptProfile(again).ok());
  EXPECT_FALSE(metrics_.Has("phasord_link_score", tor2_probe));
  service.reset();
  service = Open();
  ASSERT_NE(service, nullptr);
  absl::StatusOr<v1::Snapshot> snap = service->GetSnapshot({});
  ASSERT_TRUE(snap.ok());
  for (const v1::Job& j : snap->placement().jobs()) EXPECT_NE(j.id(), "c");
  EXPECT_EQ(service->jobs(), 2u);
}

// A ranking made before a release names the released job (as a candidate's
// job or a running one); committing it would bring the job back.
TEST_F(ServiceTest, ACommitOfARankingMadeBeforeAReleaseIsRefused) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  const v1::RankRequest request = protocol::ToProto(::phasor::testing::SampleRankRequest());
  absl::StatusOr<v1::RankReply> first = service->Rank(request);
  absl::StatusOr<v1::RankReply> second = service->Rank(request);
  ASSERT_TRUE(first.ok() && second.ok());
  v1::CommitPlacement commit;
  commit.set_ranking_id(first->ranking_id());
  commit.set_candidate("c0");
  ASSERT_TRUE(service->Commit(commit).ok());
  v1::ReleasePlacement release;
  release.add_jobs("b");
  ASSERT_TRUE(service->Release(release).ok());
  commit.set_ranking_id(second->ranking_id());
  EXPECT_EQ(service->Commit(commit).status(),
            absl::FailedPreconditionError(absl::StrCat("ranking_id: ranking ", second->ranking_id(),
                                                       " was made before job 'b' was released; rank again")));
  EXPECT_EQ(service->jobs(), 2u);
  v1::GetOffset get;
  get.set_job("b");
  EXPECT_TRUE(absl::IsNotFound(service->GetOffset(get).status()));
  // A job released before it was ever placed is marked as well.
  absl::StatusOr<v1::RankReply> third = service->Rank(request);
  ASSERT_TRUE(third.ok());
  release.set_jobs(0, "c");
  ASSERT_TRUE(service->Release(release).ok());
  release.set_jobs(0, "zz");
  ASSERT_TRUE(service->Release(release).ok());
  commit.set_ranking_id(third->ranking_id());
  EXPECT_TRUE(absl::IsFailedPrecondition(service->Commit(commit).status()));
  // A ranking made after the releases commits, and brings them back.
  absl::StatusOr<v1::RankReply> fourth = service->Rank(request);
  ASSERT_TRUE(fourth.ok());
  commit.set_ranking_id(fourth->ranking_id());
  ASSERT_TRUE(service->Commit(commit).ok());
  EXPECT_EQ(service->jobs(), 3u);
}

// The link-score history is kept per link up to keep_link_scores, the newest.
TEST_F(ServiceTest, LinkScoresAreKeptPerLinkUpToTheLimit) {
  options_.keep_link_scores = 3;
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  absl::StatusOr<v1::RankReply> reply = service->Rank(protocol::ToProto(::phasor::testing::SampleRankRequest()));
  ASSERT_TRUE(reply.ok());
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("c0");
  for (int i = 0; i < 5; ++i) {
    now_us_ += 1000;
    ASSERT_TRUE(service->Commit(commit).ok());
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(options_.state_path, "normal");
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<LinkScoreSample>> history = (*store)->LinkScoreHistory("tor1-up", 100);
  ASSERT_EQ(history->size(), 3u);
  EXPECT_EQ((*history)[0].at_epoch_us, now_us_);  // the newest first
  EXPECT_EQ((*history)[2].at_epoch_us, now_us_ - 2000);
}

// A probe's profile starts at the Up phase, and its t0 is an Up start; the
// agent puts the start of an iteration (compute first) on the slot. Two jobs
// with different compute times (period 40 ms): a computes 28 ms and sends for
// 12, b computes 20 and sends for 20, both at 40 of 50 Gbit/s, so their Up
// phases must not meet. phasord ranks them in the agent's frame (a: Down 28
// ms then Up; b: Down 20 then Up): a at 0 has Up on [28, 40) ms, b's 20 ms of
// Up must fit in [0, 28), so b's Up starts in [0, 8] ms and its shift is in
// [20, 28] ms; the centre is 24 ms (4 ms of slack each side). A job exactly on
// its slot then shows no phase error (its Up starts one compute time after
// the slot), and is not re-aligned.
TEST_F(ServiceTest, ProbePhasesAreComparedWithSlotsInTheAgentsFrame) {
  options_.realign = true;
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  auto probe_profile = [](const std::string& job, int up_bins) {
    v1::ProfileUpdate u;
    u.set_subject(job);
    u.set_kind(v1::ProfileUpdate::JOB);
    u.set_period_us(40000);
    u.set_bin_us(4000);
    for (int k = 0; k < 10; ++k) u.add_gbps(k < up_bins ? 40.0 : 0.0);
    u.set_confidence(1);
    u.set_source("test-probe");
    return u;
  };
  ASSERT_TRUE(service->AcceptProfile(probe_profile("a", 3)).ok());
  ASSERT_TRUE(service->AcceptProfile(probe_profile("b", 5)).ok());
  v1::RankRequest request;
  request.add_links()->set_id("l");
  request.mutable_links(0)->set_capacity_gbps(50);
  request.add_jobs()->set_id("a");
  request.add_jobs()->set_id("b");
  v1::Candidate* c = request.add_candidates();
  c->set_id("shared");
  (*(*c->mutable_links())["a"].mutable_shares())["l"] = 1;
  (*(*c->mutable_links())["b"].mutable_shares())["l"] = 1;
  absl::StatusOr<v1::RankReply> reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  ASSERT_EQ(reply->ranked_size(), 1);
  EXPECT_DOUBLE_EQ(reply->ranked(0).score(), 1.0);
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("shared");
  absl::StatusOr<v1::CommitReply> committed = service->Commit(commit);
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  ASSERT_EQ(committed->offsets_size(), 2);
  const v1::OffsetUpdate a = committed->offsets(0), b = committed->offsets(1);
  ASSERT_EQ(a.job(), "a");
  EXPECT_EQ(a.shift_us(), 0u);
  EXPECT_EQ(b.shift_us(), 24000u);
  EXPECT_EQ(b.period_us(), 40000u);
  published_.clear();

  // Both on their slots, three periods on: Up starts 28 ms (a) and 20 ms (b)
  // after the slot. No error, no re-alignment.
  v1::ProfileUpdate on_a = probe_profile("a", 3), on_b = probe_profile("b", 5);
  on_a.set_t0_epoch_us(a.origin_epoch_us() + a.shift_us() + 3 * 40000 + 28000);
  on_b.set_t0_epoch_us(b.origin_epoch_us() + b.shift_us() + 3 * 40000 + 20000);
  ASSERT_TRUE(service->AcceptProfile(on_a).ok());
  ASSERT_TRUE(service->AcceptProfile(on_b).ok());
  EXPECT_EQ(metrics_.Value("phasord_phase_error_us", {{"job", "a"}}), 0);
  EXPECT_EQ(metrics_.Value("phasord_phase_error_us", {{"job", "b"}}), 0);
  EXPECT_EQ(metrics_.Value("phasord_realignments_total", {{"job", "a"}}), 0);
  EXPECT_EQ(metrics_.Value("phasord_realignments_total", {{"job", "b"}}), 0);
  EXPECT_TRUE(published_.empty());

  // b 5 ms late: re-sent, and the error is the 5 ms.
  v1::ProfileUpdate late_b = probe_profile("b", 5);
  late_b.set_t0_epoch_us(b.origin_epoch_us() + b.shift_us() + 4 * 40000 + 20000 + 5000);
  ASSERT_TRUE(service->AcceptProfile(late_b).ok());
  EXPECT_EQ(metrics_.Value("phasord_phase_error_us", {{"job", "b"}}), 5000);
  EXPECT_EQ(metrics_.Value("phasord_realignments_total", {{"job", "b"}}), 1);
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0].job(), "b");

  // The committed frame survives a restart: on its slot, still no error.
  service.reset();
  service = Open();
  ASSERT_NE(service, nullptr);
  on_a.set_t0_epoch_us(a.origin_epoch_us() + a.shift_us() + 9 * 40000 + 28000);
  ASSERT_TRUE(service->AcceptProfile(on_a).ok());
  EXPECT_EQ(metrics_.Value("phasord_phase_error_us", {{"job", "a"}}), 0);
}

// The frame conversion itself (daemon/closed_loop.h).
TEST(IterationFrameTest, AProbesProfileStartsAtTheEndOfItsUpPhase) {
  placer::TrafficProfile probe;
  probe.period_us = 40000;
  probe.bin_us = 4000;
  probe.gbps = {40, 40, 40, 1, 1, 1, 1, 1, 1, 1};
  probe.t0_epoch_us = 1'000'000;
  const placer::TrafficProfile frame = IterationFrame(probe);
  EXPECT_EQ(frame.gbps, (std::vector<double>{1, 1, 1, 1, 1, 1, 1, 40, 40, 40}));
  EXPECT_EQ(frame.t0_epoch_us, 1'012'000);  // the iteration starts when the Up phase ends
  EXPECT_EQ(UpStartUs(frame), 28000u);
  EXPECT_EQ(UpStartUs(probe), 0u);
  // A period that is not a multiple of the bin: 35 ms in bins of 10 (the last
  // covers 5 ms). Up [0, 10) ms ends at 10 ms: the result's bin 2 covers
  // [20, 30) ms = the probe's [30, 35) and [0, 5): half 2, half 8 Gbit/s.
  placer::TrafficProfile odd;
  odd.period_us = 35000;
  odd.bin_us = 10000;
  odd.gbps = {8, 0, 0, 2};
  const placer::TrafficProfile odd_frame = IterationFrame(odd);
  EXPECT_EQ(odd_frame.gbps, (std::vector<double>{0, 0, 5, 8}));
  // A flat profile has no Up phase: unchanged.
  placer::TrafficProfile flat = odd;
  flat.gbps = {3, 3, 3, 3};
  EXPECT_EQ(IterationFrame(flat).gbps, flat.gbps);
  EXPECT_EQ(UpStartUs(flat), 0u);
  // A square wave: its start moves back by the end of its Up phase.
  placer::TrafficProfile square;
  square.period_us = 100000;
  square.square = placer::SquareWave{30000, 40, 10000, 0};
  EXPECT_EQ(IterationFrame(square).square->start_us, 70000u);  // Up [10, 40) ms becomes [70, 100)
  EXPECT_EQ(UpStartUs(square), 10000u);
}

// Three servers under one leaf switch (the fabric server-form candidates
// are routed on).
constexpr char kThreeServers[] = R"yaml(
servers:
  - {id: s1, gpus: 8, nics: [{name: nic0, gbps: 100}]}
  - {id: s2, gpus: 8, nics: [{name: nic0, gbps: 100}]}
  - {id: s3, gpus: 8, nics: [{name: nic0, gbps: 100}]}
switches: [leaf1]
links:
  - {a: s1, b: leaf1, nic: nic0}
  - {a: s2, b: leaf1, nic: nic0}
  - {a: s3, b: leaf1, nic: nic0}
)yaml";

// Jobs a and b as servers: a on s1,s2 and b on s2,s3 ("apart" shares s2),
// or a on s1,s3 and b on s2 ("other").
v1::RankRequest ServerFormRequest() {
  v1::RankRequest r;
  for (const char* id : {"a", "b"}) {
    v1::Job* j = r.add_jobs();
    j->set_id(id);
    j->mutable_profile()->set_period_us(100000);
    j->mutable_profile()->mutable_square()->set_up_us(40000);
    j->mutable_profile()->mutable_square()->set_up_gbps(40);
  }
  auto add = [&r](const std::string& id, std::vector<std::string> a, std::vector<std::string> b) {
    v1::Candidate* c = r.add_candidates();
    c->set_id(id);
    for (const std::string& s : a) (*c->mutable_servers())["a"].add_servers(s);
    for (const std::string& s : b) (*c->mutable_servers())["b"].add_servers(s);
  };
  add("apart", {"s1", "s2"}, {"s2", "s3"});
  add("other", {"s1", "s3"}, {"s2"});
  return r;
}

std::map<std::string, std::vector<std::string>> CommittedServers(const v1::Snapshot& s) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [job, list] : s.placement().candidates(0).servers()) {
    out[job].assign(list.servers().begin(), list.servers().end());
  }
  return out;
}

TEST_F(ServiceTest, SnapshotNamesTheServersOfACommitAndItsPlacementVersion) {
  options_.topology_path = dir_ + "/fabric.yaml";
  std::ofstream(options_.topology_path) << kThreeServers;
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  absl::StatusOr<v1::Snapshot> snap = service->GetSnapshot({});
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(snap->placement_version(), 0u);
  EXPECT_TRUE(CommittedServers(*snap).empty());

  absl::StatusOr<v1::RankReply> reply = service->Rank(ServerFormRequest());
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->ranked_size(), 2);
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("apart");
  ASSERT_TRUE(service->Commit(commit).ok());
  snap = service->GetSnapshot({});
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(snap->placement_version(), 1u);
  using Servers = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(CommittedServers(*snap), (Servers{{"a", {"s1", "s2"}}, {"b", {"s2", "s3"}}}));
  // The routed links are there too.
  ASSERT_EQ(snap->placement().candidates(0).links().count("a"), 1u);
  EXPECT_EQ(snap->placement().candidates(0).links().at("a").shares().at("s1->leaf1"), 1.0);

  // A later commit replaces its jobs' servers.
  commit.set_candidate("other");
  ASSERT_TRUE(service->Commit(commit).ok());
  snap = service->GetSnapshot({});
  EXPECT_EQ(snap->placement_version(), 2u);
  EXPECT_EQ(CommittedServers(*snap), (Servers{{"a", {"s1", "s3"}}, {"b", {"s2"}}}));

  // Release: the job's servers go and the version moves; releasing a job
  // that holds nothing changes neither.
  v1::ReleasePlacement release;
  release.add_jobs("a");
  ASSERT_TRUE(service->Release(release).ok());
  snap = service->GetSnapshot({});
  EXPECT_EQ(snap->placement_version(), 3u);
  EXPECT_EQ(CommittedServers(*snap), (Servers{{"b", {"s2"}}}));
  release.set_jobs(0, "nobody");
  ASSERT_TRUE(service->Release(release).ok());
  EXPECT_EQ(service->GetSnapshot({})->placement_version(), 3u);

  // A restart keeps both.
  service.reset();
  service = Open();
  ASSERT_NE(service, nullptr);
  snap = service->GetSnapshot({});
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(snap->placement_version(), 3u);
  EXPECT_EQ(CommittedServers(*snap), (Servers{{"b", {"s2"}}}));
  // The ranking was stored too, but it was made before a was released:
  // committing it would bring a back. The release's marker survived the
  // restart; a fresh ranking commits.
  EXPECT_EQ(service->Commit(commit).status(), absl::FailedPreconditionError(absl::StrCat(
                                         "ranking_id: ranking ", reply->ranking_id(),
                                         " was made before job 'a' was released; rank again")));
  EXPECT_EQ(service->GetSnapshot({})->placement_version(), 3u);
  reply = service->Rank(ServerFormRequest());
  ASSERT_TRUE(reply.ok()) << reply.status();
  commit.set_ranking_id(reply->ranking_id());
  ASSERT_TRUE(service->Commit(commit).ok());
  EXPECT_EQ(service->GetSnapshot({})->placement_version(), 4u);
}

// The running part once (RankRequest.running, server form) ranks as the same
// servers in every candidate, and a commit records the running job's servers
// and links from it.
TEST_F(ServiceTest, RunningPartRanksAsTheLongFormAndCommitsItsJobs) {
  options_.topology_path = dir_ + "/fabric.yaml";
  std::ofstream(options_.topology_path) << kThreeServers;
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  const v1::RankRequest long_form = ServerFormRequest();
  v1::RankRequest once = long_form;
  // b runs on s2, s3; the candidates name a only.
  (*once.mutable_running()->mutable_servers())["b"].add_servers("s2");
  (*once.mutable_running()->mutable_servers())["b"].add_servers("s3");
  for (v1::Candidate& c : *once.mutable_candidates()) c.mutable_servers()->erase("b");
  v1::RankRequest every = once;
  every.clear_running();
  for (v1::Candidate& c : *every.mutable_candidates()) (*c.mutable_servers())["b"] = once.running().servers().at("b");

  absl::StatusOr<v1::RankReply> a = service->Rank(once);
  absl::StatusOr<v1::RankReply> b = service->Rank(every);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->ranked_size(), 2);
  for (v1::RankReply* r : {&*a, &*b}) {
    r->clear_ranking_id();
    r->clear_solve_seconds();
  }
  // In the long form b is a candidate's job like any (not pinned): its rank
  // order is returned too; the running part's is not (it runs already).
  for (v1::RankedCandidate& c : *b->mutable_ranked()) {
    ASSERT_TRUE(c.rank_order().contains("b"));
    c.mutable_rank_order()->erase("b");
  }
  // Equal field by field (maps serialise in no fixed order).
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*a, *b)) << a->DebugString() << b->DebugString();

  // The merge rule: a job both running and in a candidate, named in the
  // form the host gave it.
  v1::RankRequest both = once;
  (*both.mutable_candidates(1)->mutable_servers())["b"].add_servers("s1");
  EXPECT_EQ(service->Rank(both).status(),
            absl::InvalidArgumentError(
                "candidates[1].servers.b: job 'b' is also in running (a job is either running or placed by a candidate)"));

  // The second ranking of the same running part stores the running job's
  // links as the first serialized them (PrepareRank keeps them per ring).
  ASSERT_TRUE(service->Rank(once).ok());
  absl::StatusOr<v1::RankReply> ranked = service->Rank(once);
  ASSERT_TRUE(ranked.ok());
  v1::CommitPlacement commit;
  commit.set_ranking_id(ranked->ranking_id());
  commit.set_candidate("apart");
  ASSERT_TRUE(service->Commit(commit).ok());
  absl::StatusOr<v1::Snapshot> snap = service->GetSnapshot({});
  ASSERT_TRUE(snap.ok()) << snap.status();
  using Servers = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(CommittedServers(*snap), (Servers{{"a", {"s1", "s2"}}, {"b", {"s2", "s3"}}}));
  ASSERT_EQ(snap->placement().candidates(0).links().count("b"), 1u);
  EXPECT_EQ(snap->placement().candidates(0).links().at("b").shares().at("s3->leaf1"), 1.0);
}

// Three leaves of two servers; r runs on s1 and s3 (over leaf1's and
// leaf2's uplinks), so s2, s4 and the whole of leaf3 are free.
constexpr char kThreeLeaves[] = R"yaml(
generate:
  leaf_spine: {leaves: 3, spines: 1, servers_per_leaf: 2, gpus_per_server: 1, nic_gbps: 100, uplink_gbps: 100}
)yaml";

// n (2 servers) as the host proposes it: "host" on s2, s4 (it shares r's
// uplinks: Up phases of 60 % of the period do not interleave), "fresh" on
// leaf3 alone (no shared link: score 1, and a smaller footprint, so it
// overtakes on a prediction, but it takes the only whole free rack).
v1::RankRequest PackingRequest() {
  v1::RankRequest r;
  for (const char* id : {"r", "n"}) {
    v1::Job* j = r.add_jobs();
    j->set_id(id);
    j->mutable_profile()->set_period_us(100000);
    j->mutable_profile()->mutable_square()->set_up_us(60000);
    j->mutable_profile()->mutable_square()->set_up_gbps(80);
  }
  (*r.mutable_running()->mutable_servers())["r"].add_servers("s1");
  (*r.mutable_running()->mutable_servers())["r"].add_servers("s3");
  for (auto [id, a, b] : {std::tuple{"host", "s2", "s4"}, {"fresh", "s5", "s6"}}) {
    v1::Candidate* c = r.add_candidates();
    c->set_id(id);
    (*c->mutable_servers())["n"].add_servers(a);
    (*c->mutable_servers())["n"].add_servers(b);
  }
  return r;
}

TEST_F(ServiceTest, OwnCandidatesAreRankedBesideTheHostsAndMarked) {
  // Three leaves of three servers; r runs on s1 and s4.
  options_.topology_path = dir_ + "/fabric.yaml";
  std::ofstream(options_.topology_path) << R"yaml(
generate:
  leaf_spine: {leaves: 3, spines: 1, servers_per_leaf: 3, gpus_per_server: 1, nic_gbps: 100, uplink_gbps: 100}
)yaml";
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  // The host's only candidate puts n on s2 and s5, across the racks, beside
  // r. phasor proposes the best fit that keeps leaf3 whole: s2, s3 in leaf1,
  // which shares no link with r.
  v1::RankRequest request = PackingRequest();
  (*request.mutable_running()->mutable_servers())["r"].set_servers(1, "s4");
  request.mutable_candidates()->DeleteSubrange(1, 1);
  (*request.mutable_candidates(0)->mutable_servers())["n"].set_servers(1, "s5");
  for (const char* s : {"s2", "s3", "s5", "s6", "s7", "s8", "s9"}) request.add_free_servers(s);
  absl::StatusOr<v1::RankReply> reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_GE(reply->ranked_size(), 2);
  EXPECT_EQ(reply->ranked(0).candidate(), "phasor-1");
  EXPECT_TRUE(reply->ranked(0).proposed_by_phasor());
  EXPECT_EQ(reply->ranked(0).score(), 1);
  ASSERT_TRUE(reply->ranked(0).rank_order().contains("n"));
  EXPECT_THAT(reply->ranked(0).rank_order().at("n").servers(), ::testing::ElementsAre("s2", "s3"));
  bool host_ranked = false;
  for (const v1::RankedCandidate& c : reply->ranked()) {
    if (c.candidate() == "host") {
      host_ranked = true;
      EXPECT_FALSE(c.proposed_by_phasor());
      EXPECT_LT(c.score(), 0.95);
    }
  }
  EXPECT_TRUE(host_ranked);
  // Committing phasor's candidate records it where it runs.
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("phasor-1");
  ASSERT_TRUE(service->Commit(commit).ok());
  absl::StatusOr<v1::Snapshot> snapshot = service->GetSnapshot({});
  ASSERT_TRUE(snapshot.ok());
  EXPECT_NE(snapshot->DebugString().find("\"s3\""), std::string::npos) << snapshot->DebugString();
  // own_candidates 0: only the host's.
  request.mutable_options()->set_own_candidates(0);
  reply = service->Rank(request);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->ranked_size(), 1);
}

// Square-wave job j: `period_us`, Up for 60 % of it at 80 Gbit/s.
void AddSquareJob(v1::RankRequest& r, const std::string& id, uint32_t period_us) {
  v1::Job* j = r.add_jobs();
  j->set_id(id);
  j->mutable_profile()->set_period_us(period_us);
  j->mutable_profile()->mutable_square()->set_up_us(period_us * 6 / 10);
  j->mutable_profile()->mutable_square()->set_up_gbps(80);
}

// Ranks `servers` as the only candidate of job `id` and commits it.
void CommitOn(Service& service, const std::string& id, uint32_t period_us, const std::vector<std::string>& servers) {
  v1::RankRequest r;
  AddSquareJob(r, id, period_us);
  r.set_running_committed(true);
  v1::Candidate* c = r.add_candidates();
  c->set_id("on");
  for (const std::string& s : servers) (*c->mutable_servers())[id].add_servers(s);
  absl::StatusOr<v1::RankReply> reply = service.Rank(r);
  ASSERT_TRUE(reply.ok()) << reply.status();
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("on");
  ASSERT_TRUE(service.Commit(commit).ok());
}

// The reply without what differs between two rankings of one request.
v1::RankReply Comparable(v1::RankReply reply) {
  reply.clear_ranking_id();
  reply.clear_solve_seconds();
  return reply;
}

// running_committed: phasord ranks among its committed placement as a client
// that built the running part from GetSnapshot would have it ranked (the
// Kubernetes extender's request before the field), after each change of
// that placement: a commit, a probe's profile, a release.
TEST_F(ServiceTest, RunningCommittedRanksAsTheSnapshotsRunningPartDoes) {
  options_.topology_path = dir_ + "/fabric.yaml";
  std::ofstream(options_.topology_path) << R"yaml(
generate:
  leaf_spine: {leaves: 3, spines: 1, servers_per_leaf: 3, gpus_per_server: 1, nic_gbps: 100, uplink_gbps: 100}
)yaml";
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  // r across leaf1 and leaf2, q across leaf1 and leaf3 (nothing committed
  // yet: running_committed adds nothing to the first).
  CommitOn(*service, "r", 100000, {"s1", "s4"});
  CommitOn(*service, "q", 120000, {"s2", "s7"});
  // n's candidates: across leaf1 and leaf2 (r's and q's uplinks), within
  // leaf2, within leaf3.
  v1::RankRequest own;
  AddSquareJob(own, "n", 100000);
  own.mutable_options()->set_own_candidates(0);
  for (auto [id, a, b] : {std::tuple{"across", "s3", "s5"}, {"leaf2", "s5", "s6"}, {"leaf3", "s8", "s9"}}) {
    v1::Candidate* c = own.add_candidates();
    c->set_id(id);
    (*c->mutable_servers())["n"].add_servers(a);
    (*c->mutable_servers())["n"].add_servers(b);
  }
  v1::RankRequest committed = own;
  committed.set_running_committed(true);
  // The same request built by the client: the snapshot's jobs pinned at
  // their offsets, their shares in the running part, before n.
  auto from_snapshot = [&](const std::string& except) {
    absl::StatusOr<v1::Snapshot> snapshot = service->GetSnapshot({});
    EXPECT_TRUE(snapshot.ok());
    placer::RankRequest r;
    absl::StatusOr<std::vector<protocol::RunningJob>> running =
        protocol::RunningJobsOfSnapshot(*snapshot, r.links);
    EXPECT_TRUE(running.ok()) << running.status();
    protocol::AddRunningJobs(*running, r, except);
    v1::RankRequest wire = protocol::ToProto(r);
    wire.mutable_jobs()->MergeFrom(own.jobs());
    *wire.mutable_candidates() = own.candidates();
    *wire.mutable_options() = own.options();
    return wire;
  };
  auto expect_same = [&](const char* when) {
    // phasord's first: the other request gives the committed jobs'
    // profiles, which counts as a change of what it keeps.
    absl::StatusOr<v1::RankReply> added = service->Rank(committed);
    absl::StatusOr<v1::RankReply> sent = service->Rank(from_snapshot(""));
    ASSERT_TRUE(sent.ok()) << sent.status();
    ASSERT_TRUE(added.ok()) << added.status();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Comparable(*sent), Comparable(*added)))
        << when << ":\n" << sent->DebugString() << "\n" << added->DebugString();
    // And again, so that what phasord keeps is current before the next change.
    ASSERT_TRUE(service->Rank(committed).ok());
  };
  expect_same("r and q committed");
  // The running jobs are really in it: each ranked candidate carries their
  // shifts, and n across the racks shares their uplinks (alone it shares none).
  absl::StatusOr<v1::RankReply> reply = service->Rank(committed);
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->ranked_size(), 3);
  std::vector<std::string> jobs;
  for (const v1::JobShift& s : reply->ranked(0).shifts()) jobs.push_back(s.job());
  EXPECT_THAT(jobs, ::testing::ElementsAre("q", "r", "n"));
  EXPECT_EQ(reply->ranked(2).candidate(), "across");
  EXPECT_LT(reply->ranked(2).score(), 1);
  absl::StatusOr<v1::RankReply> alone = service->Rank(own);
  ASSERT_TRUE(alone.ok());
  for (const v1::RankedCandidate& c : alone->ranked()) EXPECT_EQ(c.score(), 1) << c.candidate();

  // n committed across the racks: the next ranking has it running too.
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("across");
  ASSERT_TRUE(service->Commit(commit).ok());
  own.mutable_jobs(0)->set_id("m");
  for (v1::Candidate& c : *own.mutable_candidates()) {
    (*c.mutable_servers())["m"] = c.servers().at("n");
    c.mutable_servers()->erase("n");
  }
  own.mutable_candidates(0)->mutable_servers()->at("m").set_servers(0, "s6");  // s3 is n's now
  committed = own;
  committed.set_running_committed(true);
  expect_same("n committed");
  // A probe's profile of r (another period) replaces the one it was
  // committed with.
  v1::ProfileUpdate probe;
  probe.set_subject("r");
  probe.set_kind(v1::ProfileUpdate::JOB);
  probe.set_period_us(90000);
  probe.set_bin_us(30000);
  for (double g : {80.0, 80.0, 0.0}) probe.add_gbps(g);
  probe.set_confidence(1);
  ASSERT_TRUE(service->AcceptProfile(probe).ok());
  expect_same("r's profile from a probe");
  // q released: it is not ranked among any more.
  v1::ReleasePlacement release;
  release.add_jobs("q");
  ASSERT_TRUE(service->Release(release).ok());
  expect_same("q released");
  // A request that gives committed n another profile (ranked, not committed):
  // GetSnapshot reports n with it, and so does running_committed.
  v1::RankRequest renamed;
  AddSquareJob(renamed, "n", 80000);
  v1::Candidate* on = renamed.add_candidates();
  on->set_id("on");
  (*on->mutable_servers())["n"].add_servers("s3");
  (*on->mutable_servers())["n"].add_servers("s5");
  ASSERT_TRUE(service->Rank(renamed).ok());
  expect_same("n's profile from a request");
  reply = service->Rank(committed);
  ASSERT_TRUE(reply.ok());
  jobs.clear();
  for (const v1::JobShift& s : reply->ranked(0).shifts()) jobs.push_back(s.job());
  EXPECT_THAT(jobs, ::testing::ElementsAre("n", "r", "m"));

  // A committed job the request names is ranked as the request gives it,
  // not also as running (re-placing r).
  v1::RankRequest again;
  AddSquareJob(again, "r", 100000);
  again.set_running_committed(true);
  v1::Candidate* c = again.add_candidates();
  c->set_id("leaf3");
  (*c->mutable_servers())["r"].add_servers("s8");
  (*c->mutable_servers())["r"].add_servers("s9");
  v1::RankRequest sent = from_snapshot("r");
  sent.mutable_jobs()->RemoveLast();  // own's m
  sent.mutable_jobs()->MergeFrom(again.jobs());
  *sent.mutable_candidates() = again.candidates();
  sent.clear_options();
  absl::StatusOr<v1::RankReply> b = service->Rank(again), a = service->Rank(sent);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Comparable(*a), Comparable(*b)))
      << a->DebugString() << "\n" << b->DebugString();

  // With a running part of its own as well: refused, named.
  (*committed.mutable_running()->mutable_servers())["x"].add_servers("s3");
  EXPECT_EQ(service->Rank(committed).status(),
            absl::InvalidArgumentError("running_committed: the request also carries a running part (running.links or "
                                       "running.servers); send one or the other"));
}

// A ring whose ranks alternate between two leaves crosses the uplink on every
// hop: two hops per direction load it twice (routed share 2). phasord ranks
// that as `phasor rank --topology` does, in the running part and in a
// candidate, instead of refusing the routed share as if the host had given it.
TEST_F(ServiceTest, RingsThatCrossAnUplinkTwiceLoadItTwice) {
  options_.topology_path = dir_ + "/fabric.yaml";
  std::ofstream(options_.topology_path) << R"yaml(
generate:
  leaf_spine: {leaves: 2, spines: 1, servers_per_leaf: 4, gpus_per_server: 1, nic_gbps: 100, uplink_gbps: 100}
)yaml";
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  // r and n burst 60 ms of every 100 at 30 Gbit/s: their bursts overlap at
  // least 20 ms whatever the shifts. Once per direction each, that is 60
  // Gbit/s on a 100 Gbit/s uplink (no excess); r twice and n once, 90 (none);
  // both twice, 120 (excess).
  v1::RankRequest request;
  for (const char* id : {"r", "n"}) {
    v1::Job* j = request.add_jobs();
    j->set_id(id);
    j->mutable_profile()->set_period_us(100000);
    j->mutable_profile()->mutable_square()->set_up_us(60000);
    j->mutable_profile()->mutable_square()->set_up_gbps(30);
  }
  for (const char* s : {"s1", "s5", "s2", "s6"}) (*request.mutable_running()->mutable_servers())["r"].add_servers(s);
  v1::Candidate* host = request.add_candidates();
  host->set_id("host");
  for (const char* s : {"s3", "s7", "s4", "s8"}) (*host->mutable_servers())["n"].add_servers(s);

  request.mutable_options()->set_ring_order(v1::RankOptions::RING_ORDER_HOST);
  absl::StatusOr<v1::RankReply> reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->ranked_size(), 1);
  const double host_order = reply->ranked(0).score();
  EXPECT_LT(host_order, 0.99);
  EXPECT_THAT(reply->ranked(0).rank_order().at("n").servers(), ::testing::ElementsAre("s3", "s7", "s4", "s8"));

  // phasor's order keeps each leaf's servers together: n crosses once per
  // direction, beside r's two hops (90 Gbit/s): no excess.
  request.mutable_options()->set_ring_order(v1::RankOptions::RING_ORDER_PHASOR);
  reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->ranked_size(), 1);
  EXPECT_EQ(reply->ranked(0).score(), 1);
  EXPECT_THAT(reply->ranked(0).rank_order().at("n").servers(),
              ::testing::UnorderedElementsAre("s3", "s4", "s7", "s8"));

  // The host may give such shares itself, in link form: the same score as
  // its server form in its own order.
  v1::RankRequest links = request;
  links.mutable_running()->Clear();
  for (const char* l : {"leaf1->spine1", "spine1->leaf1", "leaf2->spine1", "spine1->leaf2"}) {
    v1::Link* link = links.add_links();
    link->set_id(l);
    link->set_capacity_gbps(100);
    (*(*links.mutable_candidates(0)->mutable_links())["r"].mutable_shares())[l] = 2;
    (*(*links.mutable_candidates(0)->mutable_links())["n"].mutable_shares())[l] = 2;
  }
  links.mutable_candidates(0)->clear_servers();
  reply = service->Rank(links);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->ranked(0).score(), host_order);
}

TEST_F(ServiceTest, FreeServersKeepTheHostsPackingAgainstAPredictedGain) {
  options_.topology_path = dir_ + "/fabric.yaml";
  std::ofstream(options_.topology_path) << kThreeLeaves;
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  // Without free_servers the rule cannot apply: "fresh" overtakes. (phasor's
  // own candidates, which free_servers also brings, are left out here:
  // OwnCandidatesAreRankedBesideTheHostsAndMarked.)
  v1::RankRequest request = PackingRequest();
  request.mutable_options()->set_own_candidates(0);
  absl::StatusOr<v1::RankReply> reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->ranked_size(), 2);
  EXPECT_EQ(reply->ranked(0).candidate(), "fresh");
  EXPECT_EQ(reply->ranked(0).score(), 1);
  EXPECT_LT(reply->ranked(1).score(), 0.95);
  EXPECT_EQ(metrics_.Value("phasord_policy_decisions_total", {{"decision", "overtaken"}}), 1);
  // With them, "fresh" would leave no whole free rack where the host's first
  // leaves leaf3: it is not ranked, and says why.
  for (const char* s : {"s2", "s4", "s5", "s6"}) request.add_free_servers(s);
  reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->ranked_size(), 1);
  EXPECT_EQ(reply->ranked(0).candidate(), "host");
  ASSERT_EQ(reply->rejected_size(), 1);
  EXPECT_EQ(reply->rejected(0).candidate(), "fresh");
  EXPECT_EQ(reply->rejected(0).reason(),
            "packing: leaves 2 whole free servers and 0 whole free racks; the host's first leaves 2 and 1");
  // phasord keeps the view of the last free servers; other free servers are
  // judged on their own. With s6 taken, leaf3 is no whole free rack either
  // way: "fresh" leaves no less than the host's first and overtakes again;
  // then the first list again gives the first answer.
  v1::RankRequest s6_taken = request;
  s6_taken.mutable_free_servers()->RemoveLast();
  reply = service->Rank(s6_taken);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->ranked_size(), 2);
  EXPECT_EQ(reply->ranked(0).candidate(), "fresh");
  EXPECT_EQ(reply->rejected_size(), 0);
  reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->ranked_size(), 1);
  EXPECT_EQ(reply->ranked(0).candidate(), "host");
  ASSERT_EQ(reply->rejected_size(), 1);
  // The host's first commits as usual.
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("host");
  EXPECT_TRUE(service->Commit(commit).ok());
  // Bad free servers are named.
  v1::RankRequest bad = request;
  bad.set_free_servers(1, "spine1");
  EXPECT_EQ(service->Rank(bad).status(),
            absl::InvalidArgumentError("free_servers[1]: 'spine1' is not a server of the fabric"));
  bad.set_free_servers(1, "s2");
  EXPECT_EQ(service->Rank(bad).status(), absl::InvalidArgumentError("free_servers[1]: 's2' is given twice"));

  // ranking_policy.keep_packing off: free_servers change nothing.
  service.reset();
  options_.ranking_policy.keep_packing = false;
  service = Open();
  ASSERT_NE(service, nullptr);
  reply = service->Rank(request);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->ranked_size(), 2);
  EXPECT_EQ(reply->ranked(0).candidate(), "fresh");
  EXPECT_EQ(reply->rejected_size(), 0);
}

TEST_F(ServiceTest, FreeServersNeedAFabric) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  v1::RankRequest request = PackingRequest();
  request.add_free_servers("s5");
  const absl::Status s = service->Rank(request).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("free_servers: phasord has no fabric"));
}

TEST_F(ServiceTest, LinkFormCommitsHaveNoServers) {
  std::unique_ptr<Service> service = Open();
  ASSERT_NE(service, nullptr);
  absl::StatusOr<v1::RankReply> reply = service->Rank(protocol::ToProto(::phasor::testing::SampleRankRequest()));
  ASSERT_TRUE(reply.ok());
  v1::CommitPlacement commit;
  commit.set_ranking_id(reply->ranking_id());
  commit.set_candidate("c0");
  ASSERT_TRUE(service->Commit(commit).ok());
  absl::StatusOr<v1::Snapshot> snap = service->GetSnapshot({});
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->placement_version(), 1u);
  EXPECT_EQ(snap->placement().candidates(0).links_size(), 3);
  EXPECT_EQ(snap->placement().candidates(0).servers_size(), 0);
}

TEST(SolverPoolTest, EveryJobCompletesOnTheTakingThreadInFinishingOrder) {
  std::atomic<int> notified{0};
  SolverPool pool(2, [&] { ++notified; });
  std::vector<int> done;
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(pool.Submit([i, &done]() -> std::function<void()> { return [i, &done] { done.push_back(i); }; }));
  }
  while (done.size() < 50) {
    pool.TakeDone();
    std::this_thread::yield();
  }
  EXPECT_EQ(pool.pending(), 0u);
  EXPECT_EQ(notified.load(), 50);
  std::vector<int> sorted = done;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
}

// At most max_queued jobs wait for a worker; running ones do not count.
TEST(SolverPoolTest, AFullQueueRefusesMoreWork) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> started{false};
  SolverPool pool(1, [] {}, 2);
  auto blocked = [&]() -> std::function<void()> {
    started = true;
    released.wait();
    return [] {};
  };
  ASSERT_TRUE(pool.Submit(blocked));
  while (!started) std::this_thread::yield();  // running: the queue is empty again
  int ran = 0;
  auto quick = [&ran]() -> std::function<void()> { return [&ran] { ++ran; }; };
  EXPECT_TRUE(pool.Submit(quick));
  EXPECT_TRUE(pool.Submit(quick));
  EXPECT_FALSE(pool.Submit(quick));
  EXPECT_EQ(pool.pending(), 3u);
  release.set_value();
  while (pool.pending() > 0) {
    pool.TakeDone();
    std::this_thread::yield();
  }
  EXPECT_EQ(ran, 2);
  EXPECT_TRUE(pool.Submit(quick));  // room again
}

}  // namespace
}  // namespace service_test
}  // namespace phasor::daemon
