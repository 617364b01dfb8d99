// ReleasePlacement: a job that ends leaves the committed placement and its
// offset is no longer published; the store forgets it across a reopen.
#include <filesystem>
#include <thread>

#include "daemon/state_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integrations/client/client.h"
#include "tests/daemon/daemon_harness.h"
#include "zmq.hpp"
#include "zmq_addon.hpp"

namespace phasor {
namespace {

using ::phasor::testing::DaemonHarness;
using ::phasor::testing::SampleRankRequest;
using ::testing::ElementsAre;

std::unique_ptr<client::Client> Connect(const DaemonHarness& h) {
  client::ClientOptions o;
  o.endpoint = h.options().request_endpoint;
  o.timeout_ms = 5000;
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
  EXPECT_TRUE(c.ok());
  return c.ok() ? *std::move(c) : nullptr;
}

// Counts the OffsetUpdates published on `topic` within `ms`.
int CountPublished(zmq::socket_t& sub, int ms) {
  int n = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(20)) <= 0) continue;
    std::vector<zmq::message_t> frames;
    if (zmq::recv_multipart(sub, std::back_inserter(frames))) ++n;
  }
  return n;
}

TEST(ReleaseTest, ReleasedJobsLeaveThePlacementAndTheirOffsetsStop) {
  DaemonHarness h([](daemon::DaemonOptions& o) { o.republish_interval_ms = 50; });
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  absl::StatusOr<client::RankResult> ranked = c->Rank(SampleRankRequest());
  ASSERT_TRUE(ranked.ok()) << ranked.status().message();
  ASSERT_TRUE(c->Commit(ranked->ranking_id, ranked->reply.ranked(0).candidate()).ok());

  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::linger, 0);
  sub.set(zmq::sockopt::subscribe, "a");
  sub.connect(h.options().offset_endpoint);
  EXPECT_GT(CountPublished(sub, 300), 0);  // republished every 50 ms

  absl::StatusOr<v1::ReleaseReply> released = c->Release({"a", "nobody"});
  ASSERT_TRUE(released.ok()) << released.status().message();
  EXPECT_THAT(released->released(), ElementsAre("a"));
  EXPECT_EQ(h.daemon().metrics().Value("phasord_released_total"), 1);

  absl::StatusOr<v1::HealthReply> health = c->Health();
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->jobs(), 2u);
  EXPECT_EQ(health->placements(), 2u);
  EXPECT_EQ(c->GetOffset("a").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(c->GetOffset("b").ok());
  absl::StatusOr<v1::Snapshot> snapshot = c->GetSnapshot();
  ASSERT_TRUE(snapshot.ok());
  ASSERT_EQ(snapshot->placement().jobs_size(), 2);
  EXPECT_EQ(snapshot->placement().jobs(0).id(), "b");
  EXPECT_EQ(snapshot->placement().jobs(1).id(), "c");

  CountPublished(sub, 100);  // drain what was queued before the release
  EXPECT_EQ(CountPublished(sub, 300), 0);

  // Releasing again is harmless and releases nothing.
  released = c->Release({"a"});
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->released_size(), 0);
}

TEST(ReleaseTest, BadReleasesAreRefusedNamingTheField) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  auto c = Connect(h);
  absl::Status empty = c->Release({}).status();
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.message(), "phasord: INVALID_ARGUMENT: jobs: must not be empty");
  absl::Status blank = c->Release({"a", ""}).status();
  EXPECT_EQ(blank.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(blank.message(), "phasord: INVALID_ARGUMENT: jobs[1]: must not be empty");
}

TEST(ReleaseTest, StoreForgetsReleasedJobsAcrossReopening) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  {
    auto s = *daemon::StateStore::Open(dir + "/state.db", "normal");
    ASSERT_TRUE(s->Commit({{"a", "c0", 1, "la", 10, ""}, {"b", "c0", 1, "lb", 10, ""}},
                          {{"a", 5, 100000, 10, 1}, {"b", 5, 100000, 20, 1}}, {},
                          {{{"a", "pa"}, {"b", "pb"}}, {}})
                    .ok());
    absl::StatusOr<std::vector<std::string>> released = s->Release({"b", "zz"});
    ASSERT_TRUE(released.ok());
    EXPECT_THAT(*released, ElementsAre("b"));
  }
  auto s = *daemon::StateStore::Open(dir + "/state.db", "normal");
  auto placements = *s->LoadPlacements();
  ASSERT_EQ(placements.size(), 1u);
  EXPECT_EQ(placements[0].job, "a");
  auto offsets = *s->LoadOffsets();
  ASSERT_EQ(offsets.size(), 1u);
  EXPECT_EQ(offsets[0].job, "a");
  auto inputs = *s->LoadCommittedInputs();
  EXPECT_EQ(inputs.profiles.size(), 1u);
  EXPECT_EQ(inputs.profiles.count("a"), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace phasor
