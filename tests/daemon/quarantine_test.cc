// Poisoned state: rows written straight into phasord's SQLite database that
// no longer validate are quarantined at start (one log line and a count
// each), and phasord serves on.
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integrations/client/client.h"
#include "protocol/convert.h"
#include "tests/daemon/daemon_harness.h"

namespace phasor {
namespace {

using ::phasor::testing::DaemonHarness;

void Exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

TEST(QuarantineTest, BadRowsAreSetAsideAndPhasordRanksOn) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());  // creates the schema
  h.Stop();
  // A measured profile whose period wraps a 32-bit quantised period (the
  // poisoned ProfileUpdate of issue 12), one that is not a ProfileUpdate at
  // all, an offset with period 0, a shift beyond its period, a link of
  // capacity -1, and an undecodable committed profile.
  v1::ProfileUpdate poisoned;
  poisoned.set_subject("a");
  poisoned.set_kind(v1::ProfileUpdate::JOB);
  poisoned.set_period_us(4294967295u);
  poisoned.set_bin_us(4294967295u);
  poisoned.add_gbps(10);
  poisoned.set_confidence(1);
  const std::string db = h.options().state_path;
  Exec(db, "INSERT INTO profiles (kind, subject, update_msg, updated_epoch_us) VALUES (0, 'a', x'" +
               Hex(poisoned.SerializeAsString()) + "', 1)");
  Exec(db, "INSERT INTO profiles (kind, subject, update_msg, updated_epoch_us) VALUES (0, 'b', x'ffffffff', 1)");
  Exec(db, "INSERT INTO offsets VALUES ('p0', 1, 0, 0, 1), ('far', 1, 1000, 5000, 1), ('ok', 1, 1000, 10, 3)");
  Exec(db, "INSERT INTO committed_links VALUES ('l-bad', -1.0), ('l-ok', 50.0)");
  Exec(db, "INSERT INTO committed_profiles VALUES ('c', x'ffff')");

  ASSERT_TRUE(h.Start());
  const daemon::Metrics& m = h.daemon().metrics();
  EXPECT_EQ(m.Value("phasord_quarantined_rows_total", {{"table", "profiles"}}), 2);
  EXPECT_EQ(m.Value("phasord_quarantined_rows_total", {{"table", "offsets"}}), 2);
  EXPECT_EQ(m.Value("phasord_quarantined_rows_total", {{"table", "committed_links"}}), 1);
  EXPECT_EQ(m.Value("phasord_quarantined_rows_total", {{"table", "committed_profiles"}}), 1);

  client::ClientOptions o;
  o.endpoint = h.options().request_endpoint;
  auto c = *client::Client::Connect(o);
  // The good offset is served; the quarantined ones are gone.
  absl::StatusOr<v1::OffsetUpdate> ok = c->GetOffset("ok");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->shift_us(), 10u);
  EXPECT_EQ(ok->version(), 3u);
  EXPECT_TRUE(absl::IsNotFound(c->GetOffset("p0").status()));
  // A ranking that names job a without a profile no longer meets the
  // poisoned one: NotFound, and phasord answers the next request.
  v1::RankRequest request = protocol::ToProto(::phasor::testing::SampleRankRequest());
  request.mutable_jobs(0)->clear_profile();
  EXPECT_TRUE(absl::IsNotFound(c->Rank(request).status()));
  EXPECT_TRUE(c->Rank(::phasor::testing::SampleRankRequest()).ok());
  h.Stop();

  // Quarantined rows stay aside: a second start finds nothing to quarantine.
  ASSERT_TRUE(h.Start());
  EXPECT_EQ(h.daemon().metrics().Value("phasord_quarantined_rows_total", {{"table", "profiles"}}), 0);
}

// A database made before phasord kept a placement's servers: its
// placements table lacks the column. It loads, the old row has no servers,
// and new commits store theirs.
TEST(QuarantineTest, DatabaseWithoutServersColumnLoads) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  const std::string db = dir + "/old.db";
  v1::LinkShares shares;
  (*shares.mutable_shares())["tor1-up"] = 1;
  Exec(db,
       "CREATE TABLE placements (job TEXT PRIMARY KEY, candidate TEXT NOT NULL, ranking_id INTEGER NOT NULL, "
       "links BLOB NOT NULL, committed_epoch_us INTEGER NOT NULL);"
       "INSERT INTO placements VALUES ('old', 'c0', 1, x'" +
           Hex(shares.SerializeAsString()) + "', 1);");
  DaemonHarness h([&](daemon::DaemonOptions& o) { o.state_path = db; });
  ASSERT_TRUE(h.Start());
  EXPECT_EQ(h.daemon().metrics().Value("phasord_quarantined_rows_total", {{"table", "placements"}}), 0);
  client::ClientOptions o;
  o.endpoint = h.options().request_endpoint;
  auto c = *client::Client::Connect(o);
  absl::StatusOr<v1::HealthReply> health = c->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->placements(), 1u);
  absl::StatusOr<v1::Snapshot> snap = c->GetSnapshot();
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(snap->placement_version(), 0u);
  EXPECT_THAT(snap->jobs_without_profile(), ::testing::ElementsAre("old"));
  EXPECT_EQ(snap->placement().candidates(0).servers_size(), 0);
  std::filesystem::remove_all(dir);
}

TEST(QuarantineTest, PlacementWithBadServersIsSetAside) {
  DaemonHarness h;
  ASSERT_TRUE(h.Start());
  h.Stop();
  v1::ServerList empty_name;
  empty_name.add_servers("s1");
  empty_name.add_servers("");
  Exec(h.options().state_path,
       "INSERT INTO placements (job, candidate, ranking_id, links, committed_epoch_us, servers) VALUES "
       "('garbled', 'c', 1, x'', 1, x'ffff'), ('unnamed', 'c', 1, x'', 1, x'" +
           Hex(empty_name.SerializeAsString()) + "'), ('fine', 'c', 1, x'', 1, x'')");
  ASSERT_TRUE(h.Start());
  EXPECT_EQ(h.daemon().metrics().Value("phasord_quarantined_rows_total", {{"table", "placements"}}), 2);
  client::ClientOptions o;
  o.endpoint = h.options().request_endpoint;
  auto c = *client::Client::Connect(o);
  absl::StatusOr<v1::Snapshot> snap = c->GetSnapshot();
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_THAT(snap->jobs_without_profile(), ::testing::ElementsAre("fine"));
  h.Stop();
  std::vector<std::string> reasons;
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(h.options().state_path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT row_key, reason FROM quarantine WHERE table_name='placements' ORDER BY id",
                               -1, &q, nullptr),
            SQLITE_OK);
  while (sqlite3_step(q) == SQLITE_ROW) {
    reasons.push_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(q, 0))) + ": " +
                      reinterpret_cast<const char*>(sqlite3_column_text(q, 1)));
  }
  sqlite3_finalize(q);
  sqlite3_close(raw);
  EXPECT_THAT(reasons, ::testing::ElementsAre("garbled: servers: does not parse as ServerList",
                                              "unnamed: servers[1]: is empty"));
}

}  // namespace
}  // namespace phasor
