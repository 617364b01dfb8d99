#include "daemon/state_store.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "tests/daemon/daemon_harness.h"

namespace phasor::daemon {
namespace state_store_test {
namespace {

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ::phasor::testing::MakeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<StateStore> Open() {
    absl::StatusOr<std::unique_ptr<StateStore>> s = StateStore::Open(dir_ + "/state.db", "normal");
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? *std::move(s) : nullptr;
  }
  std::string dir_;
};

TEST_F(StateStoreTest, TheWalIsCheckpointedOnTheStoresOwnThread) {
  const std::string path = dir_ + "/state.db";
  const std::string blob(64 * 1024, 'x');  // 16 pages and more per ranking
  {
    absl::StatusOr<std::unique_ptr<StateStore>> s = StateStore::Open(path, "normal", /*checkpoint_pages=*/32);
    ASSERT_TRUE(s.ok()) << s.status().message();
    const auto db_bytes_before = std::filesystem::file_size(path);
    for (uint64_t id = 1; id <= 20; ++id) {
      ASSERT_TRUE((*s)->PutRanking({id, static_cast<int64_t>(id), blob, "cands"}, 1000).ok());
    }
    // The thread copies the WAL into the database file while the store is
    // open (SQLite's own checkpoint would have run inside PutRanking).
    for (int i = 0; i < 1000 && (*s)->checkpoint_stats().background == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const CheckpointStats stats = (*s)->checkpoint_stats();
    EXPECT_GT(stats.background, 0u);
    EXPECT_EQ(stats.inline_, 0u);
    EXPECT_EQ(stats.failed, 0u);
    EXPECT_GT(std::filesystem::file_size(path), db_bytes_before + blob.size());
  }
  auto s = Open();
  EXPECT_EQ(*s->MaxRankingId(), 20u);
  for (uint64_t id : {1u, 20u}) {
    absl::StatusOr<StoredRanking> r = s->GetRanking(id);
    ASSERT_TRUE(r.ok()) << id;
    EXPECT_EQ(r->reply, blob);
  }
}

// A reader that keeps its snapshot stops every checkpoint short of the WAL's
// end, so the WAL grows past 16 x checkpoint_pages however often the store's
// thread checkpoints: the owning thread then checkpoints inline at each
// commit (SQLITE_BUSY, counted as busy, not failed, while the thread's own
// checkpoint is under way). Once the reader lets go, the thread's
// checkpoints go on, and nothing written meanwhile is lost.
TEST_F(StateStoreTest, AWalPastSixteenTimesTheThresholdIsCheckpointedInline) {
  const std::string path = dir_ + "/state.db";
  const std::string blob(16 * 1024, 'y');  // 4 pages and more per ranking
  {
    absl::StatusOr<std::unique_ptr<StateStore>> s = StateStore::Open(path, "normal", /*checkpoint_pages=*/4);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE((*s)->PutRanking({1, 1, blob, "cands"}, 1000).ok());
    sqlite3* reader = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path.c_str(), &reader, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM rankings;", nullptr, nullptr, nullptr), SQLITE_OK);
    for (uint64_t id = 2; id <= 40; ++id) {
      ASSERT_TRUE((*s)->PutRanking({id, static_cast<int64_t>(id), blob, "cands"}, 1000).ok());
    }
    const CheckpointStats pinned = (*s)->checkpoint_stats();
    EXPECT_GT(pinned.inline_ + pinned.busy, 0u);  // the owning thread tried
    EXPECT_EQ(pinned.failed, 0u);
    EXPECT_GT(std::filesystem::file_size(path + "-wal"), 16u * 4 * 4096);  // past the inline threshold
    ASSERT_EQ(sqlite3_exec(reader, "COMMIT;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(reader);
    for (uint64_t id = 41; id <= 60; ++id) {
      ASSERT_TRUE((*s)->PutRanking({id, static_cast<int64_t>(id), blob, "cands"}, 1000).ok());
    }
    for (int i = 0; i < 1000 && (*s)->checkpoint_stats().background <= pinned.background; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GT((*s)->checkpoint_stats().background, pinned.background);
    EXPECT_EQ((*s)->checkpoint_stats().failed, 0u);
  }
  auto s = Open();
  EXPECT_EQ(*s->MaxRankingId(), 60u);
  for (uint64_t id : {1u, 2u, 40u, 60u}) {
    absl::StatusOr<StoredRanking> r = s->GetRanking(id);
    ASSERT_TRUE(r.ok()) << id;
    EXPECT_EQ(r->reply, blob);
  }
}

TEST_F(StateStoreTest, EverythingSurvivesReopening) {
  {
    auto s = Open();
    EXPECT_EQ(*s->EpochOr(111), 111);
    EXPECT_EQ(*s->EpochOr(222), 111);  // kept
    ASSERT_TRUE(s->PutRanking({1, 10, "reply-1", "cands-1"}, 100).ok());
    ASSERT_TRUE(s->PutRanking({2, 20, std::string("re\0ply", 6), "cands-2"}, 100).ok());
    EXPECT_EQ(*s->PlacementVersion(), 0u);
    ASSERT_TRUE(s->Commit({{"a", "c0", 2, "links-a", 30, "servers-a"}}, {{"a", 111, 100000, 2500, 3}},
                          {{"tor1-up", 30, 0.75, 0.25, "commit"}})
                    .ok());
    ASSERT_TRUE(s->PutProfile({0, "a", "update-a", 40}).ok());
    ASSERT_TRUE(s->PutProfile({0, "a", "update-a2", 41}).ok());  // replaces
    ASSERT_TRUE(s->AddLinkScore({"tor1-up", 50, 0.5, 0.5, "probe"}).ok());
  }
  auto s = Open();
  EXPECT_EQ(*s->EpochOr(999), 111);
  EXPECT_EQ(*s->MaxRankingId(), 2u);
  absl::StatusOr<StoredRanking> r = s->GetRanking(2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->reply, std::string("re\0ply", 6));
  EXPECT_EQ(r->candidates, "cands-2");
  EXPECT_EQ(r->created_epoch_us, 20);
  EXPECT_EQ(s->GetRanking(3).status().code(), absl::StatusCode::kNotFound);
  auto offsets = *s->LoadOffsets();
  ASSERT_EQ(offsets.size(), 1u);
  EXPECT_EQ(offsets[0].job, "a");
  EXPECT_EQ(offsets[0].shift_us, 2500u);
  EXPECT_EQ(offsets[0].period_us, 100000u);
  EXPECT_EQ(offsets[0].version, 3u);
  auto placements = *s->LoadPlacements();
  ASSERT_EQ(placements.size(), 1u);
  EXPECT_EQ(placements[0].candidate, "c0");
  EXPECT_EQ(placements[0].links, "links-a");
  EXPECT_EQ(placements[0].servers, "servers-a");
  EXPECT_EQ(*s->PlacementVersion(), 1u);  // the commit; a link score alone is not a placement
  auto profiles = *s->LoadProfiles();
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].update, "update-a2");
  auto history = *s->LinkScoreHistory("tor1-up", 10);
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].source, "probe");  // newest first
  EXPECT_EQ(history[1].score, 0.75);
}

TEST_F(StateStoreTest, CommittedInputsSurviveReopeningLatestWins) {
  {
    auto s = Open();
    CommittedInputs first;
    first.profiles = {{"a", std::string("prof\0a", 6)}, {"b", "prof-b"}};
    first.capacities_gbps = {{"tor1-up", 50.0}};
    ASSERT_TRUE(s->Commit({}, {}, {}, first).ok());
    CommittedInputs second;
    second.profiles = {{"a", "prof-a2"}};
    second.capacities_gbps = {{"tor1-up", 100.0}, {"tor2-up", 25.0}};
    ASSERT_TRUE(s->Commit({}, {}, {}, second).ok());
  }
  absl::StatusOr<CommittedInputs> got = Open()->LoadCommittedInputs();
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->profiles, (std::map<std::string, std::string>{{"a", "prof-a2"}, {"b", "prof-b"}}));
  EXPECT_EQ(got->capacities_gbps,
            (std::map<std::string, double>{{"tor1-up", 100.0}, {"tor2-up", 25.0}}));
}

TEST_F(StateStoreTest, OldRankingsArePruned) {
  auto s = Open();
  for (uint64_t id = 1; id <= 5; ++id) ASSERT_TRUE(s->PutRanking({id, 0, "r", "c"}, 2).ok());
  EXPECT_EQ(s->GetRanking(3).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(s->GetRanking(4).ok());
  EXPECT_TRUE(s->GetRanking(5).ok());
  EXPECT_EQ(*s->MaxRankingId(), 5u);
}

TEST_F(StateStoreTest, UnopenablePathIsUnavailable) {
  absl::StatusOr<std::unique_ptr<StateStore>> s = StateStore::Open(dir_ + "/no/such/dir/state.db", "normal");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace state_store_test
}  // namespace phasor::daemon
