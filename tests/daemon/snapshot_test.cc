// GetSnapshot: phasord reports the committed placement with the profiles and
// capacities it holds, over ipc://; bad requests get an Error, never a crash.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/probe_publisher.h"
#include "integrations/client/client.h"
#include "placer/candidate_routing.h"
#include "placer/rank_json.h"
#include "protocol/convert.h"
#include "protocol/framing.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/testing/subprocess.h"

namespace phasor {
namespace {

using ::phasor::testing::DaemonHarness;
using ::phasor::testing::SampleRankRequest;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

std::unique_ptr<client::Client> Connect(const DaemonHarness& h) {
  client::ClientOptions o;
  o.endpoint = h.options().request_endpoint;
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
  EXPECT_TRUE(c.ok());
  return c.ok() ? *std::move(c) : nullptr;
}

TEST(SnapshotTest, EmptyDaemonHasNoPlacement) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  absl::StatusOr<v1::Snapshot> s = c->GetSnapshot();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->epoch_us(), 0);
  EXPECT_EQ(s->placement().jobs_size(), 0);
  EXPECT_EQ(s->placement().links_size(), 0);
  ASSERT_EQ(s->placement().candidates_size(), 1);
  EXPECT_EQ(s->placement().candidates(0).id(), "committed");
  EXPECT_EQ(s->offsets_size(), 0);
}

TEST(SnapshotTest, CommittedPlacementWithProfilesCapacitiesAndOffsets) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  const placer::RankRequest request = SampleRankRequest();
  absl::StatusOr<client::RankResult> ranked = c->Rank(request);
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  absl::StatusOr<v1::CommitReply> commit = c->Commit(ranked->ranking_id, "c1");
  ASSERT_TRUE(commit.ok()) << commit.status();

  absl::StatusOr<v1::Snapshot> s = c->GetSnapshot();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->jobs_without_profile().empty());
  EXPECT_TRUE(s->links_without_capacity().empty());
  absl::StatusOr<placer::RankRequest> got = protocol::FromProto(s->placement());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->jobs.size(), 3u);
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(got->jobs[j].id, request.jobs[j].id);
    EXPECT_EQ(got->jobs[j].profile.period_us, request.jobs[j].profile.period_us);
    ASSERT_TRUE(got->jobs[j].profile.square.has_value());
    EXPECT_EQ(got->jobs[j].profile.square->up_us, request.jobs[j].profile.square->up_us);
  }
  ASSERT_EQ(got->links.size(), 2u);
  EXPECT_EQ(got->links[0].id, "tor1-up");
  EXPECT_EQ(got->links[0].capacity_gbps, 50.0);
  ASSERT_EQ(got->candidates.size(), 1u);
  EXPECT_EQ(got->candidates[0].links, request.candidates[1].links);
  ASSERT_EQ(s->offsets_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(s->offsets(i).job(), commit->offsets(i).job());
    EXPECT_EQ(s->offsets(i).shift_us(), commit->offsets(i).shift_us());
    EXPECT_EQ(s->offsets(i).origin_epoch_us(), s->epoch_us());
  }
}

TEST(SnapshotTest, MeasuredProfilesWinAndServerFormPlacementsKeepTheirLinks) {
  const std::string fabric = std::string(PHASOR_SOURCE_DIR) + "/data/examples/leaf_spine.yaml";
  DaemonHarness h([&](daemon::DaemonOptions& o) { o.topology_path = fabric; });
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  auto request = placer::ParseRankRequest(testing::ReadFileOrEmpty(
      std::string(PHASOR_SOURCE_DIR) + "/data/examples/rank_servers.json"));
  ASSERT_TRUE(request.ok());
  absl::StatusOr<client::RankResult> ranked = c->Rank(*request);
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  ASSERT_TRUE(c->Commit(ranked->ranking_id, "across-leaves").ok());

  // A probe measures job b, with a phase reference.
  auto probe = ::phasor::testing::ConnectProbe(h.options().profile_endpoint);
  ASSERT_TRUE(probe.ok());
  v1::ProfileUpdate u;
  u.set_subject("b");
  u.set_kind(v1::ProfileUpdate::JOB);
  u.set_period_us(200000);
  u.set_bin_us(10000);
  for (int k = 0; k < 20; ++k) u.add_gbps(k < 12 ? 70.0 : 0.0);
  u.set_t0_epoch_us(1'700'000'000'123'456);
  u.set_confidence(0.9);
  ASSERT_TRUE((*probe)->Publish(u));
  absl::StatusOr<v1::Snapshot> s;
  ASSERT_TRUE(DaemonHarness::WaitFor([&] {
    s = c->GetSnapshot();
    return s.ok() && s->placement().jobs_size() == 2 &&
           s->placement().jobs(1).profile().has_t0_epoch_us();
  }));
  absl::StatusOr<placer::RankRequest> got = protocol::FromProto(s->placement());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->jobs[1].profile.gbps[0], 70.0);
  EXPECT_EQ(got->jobs[1].profile.t0_epoch_us, 1'700'000'000'123'456);
  EXPECT_FALSE(got->jobs[0].profile.t0_epoch_us.has_value());

  // The placement's links, routed on phasord's fabric, with its capacities.
  placer::RankRequest routed = *request;
  std::vector<placer::RejectedCandidate> unrouted;
  ASSERT_TRUE(placer::RouteCandidatesFromFile(fabric, routed, unrouted).ok());
  EXPECT_EQ(got->candidates[0].links, routed.candidates[0].links);
  std::vector<std::string> links;
  for (const placer::Link& l : got->links) {
    links.push_back(l.id);
    EXPECT_EQ(l.capacity_gbps, 100.0);
  }
  EXPECT_THAT(links,
              UnorderedElementsAre("s1->leaf1", "leaf1->spine1", "leaf1->spine2", "spine1->leaf2",
                                   "spine2->leaf2", "leaf2->s3", "s3->leaf2", "leaf2->spine1",
                                   "leaf2->spine2", "spine1->leaf1", "spine2->leaf1", "leaf1->s1",
                                   "s2->leaf1", "leaf1->s2", "s4->leaf2", "leaf2->s4"));
}

TEST(SnapshotTest, BadPayloadGetsAnErrorAndTheDaemonKeepsServing) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  absl::StatusOr<std::vector<std::string>> reply =
      c->CallRaw({"phasor.v1", "GetSnapshot", std::string("\xff\xff\xff", 3)});
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->size(), 3u);
  EXPECT_EQ((*reply)[1], "Error");
  v1::Error e;
  ASSERT_TRUE(e.ParseFromString((*reply)[2]));
  EXPECT_EQ(e.code(), v1::Error::BAD_PAYLOAD);
  // A Snapshot is a reply, not a request.
  reply = c->CallRaw({"phasor.v1", "Snapshot", ""});
  ASSERT_TRUE(reply.ok());
  ASSERT_TRUE(e.ParseFromString((*reply)[2]));
  EXPECT_EQ(e.code(), v1::Error::UNKNOWN_TYPE);
  EXPECT_TRUE(c->GetSnapshot().ok());
  EXPECT_TRUE(c->Health().ok());
}

TEST(SnapshotTest, UnreachableDaemonIsUnavailable) {
  client::ClientOptions o;
  o.endpoint = "ipc:///tmp/phasor-no-daemon-here-" + std::to_string(::getpid());
  o.timeout_ms = 200;
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok());
  absl::StatusOr<v1::Snapshot> s = (*c)->GetSnapshot();
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.status().message(),
            "phasord at " + o.endpoint + ": no reply to GetSnapshot within 200 ms");
}

}  // namespace
}  // namespace phasor
