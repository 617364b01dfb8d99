#include "daemon/state_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

namespace phasor::daemon {
namespace {

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  int Step() { return sqlite3_step(stmt_); }
  int64_t Int(int c) { return sqlite3_column_int64(stmt_, c); }
  double Double(int c) { return sqlite3_column_double(stmt_, c); }
  std::string Text(int c) {
    const void* p = sqlite3_column_blob(stmt_, c);
    const int n = sqlite3_column_bytes(stmt_, c);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rankings (id INTEGER PRIMARY KEY, created_epoch_us INTEGER NOT NULL,
                                     reply BLOB NOT NULL, candidates BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS placements (job TEXT PRIMARY KEY, candidate TEXT NOT NULL,
                                       ranking_id INTEGER NOT NULL, links BLOB NOT NULL,
                                       committed_epoch_us INTEGER NOT NULL,
                                       servers BLOB NOT NULL DEFAULT x'');
CREATE TABLE IF NOT EXISTS offsets (job TEXT PRIMARY KEY, origin_epoch_us INTEGER NOT NULL,
                                    period_us INTEGER NOT NULL, shift_us INTEGER NOT NULL,
                                    version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS profiles (kind INTEGER NOT NULL, subject TEXT NOT NULL, update_msg BLOB NOT NULL,
                                     updated_epoch_us INTEGER NOT NULL, PRIMARY KEY (kind, subject));
CREATE TABLE IF NOT EXISTS link_scores (id INTEGER PRIMARY KEY AUTOINCREMENT, link TEXT NOT NULL,
                                        at_epoch_us INTEGER NOT NULL, score REAL NOT NULL,
                                        excess REAL NOT NULL, source TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS link_scores_by_link ON link_scores (link, id);
CREATE TABLE IF NOT EXISTS committed_profiles (job TEXT PRIMARY KEY, profile BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS committed_links (link TEXT PRIMARY KEY, capacity_gbps REAL NOT NULL);
CREATE TABLE IF NOT EXISTS releases (job TEXT PRIMARY KEY, next_ranking INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS quarantine (id INTEGER PRIMARY KEY AUTOINCREMENT, table_name TEXT NOT NULL,
                                       row_key TEXT NOT NULL, reason TEXT NOT NULL, at_epoch_us INTEGER NOT NULL);
)sql";

// Columns added after a table was first shipped: databases made before get
// them with an empty default (old placements have no servers).
struct AddedColumn {
  const char* table;
  const char* column;
  const char* definition;
};
constexpr AddedColumn kAddedColumns[] = {
    {"placements", "servers", "servers BLOB NOT NULL DEFAULT x''"},
};

// Bumps meta.placement_version inside the caller's transaction.
constexpr const char* kBumpPlacementVersion =
    "INSERT INTO meta (key, value) VALUES ('placement_version', 1) "
    "ON CONFLICT(key) DO UPDATE SET value = value + 1";

}  // namespace

std::string WhyStoredOffsetIsBad(int64_t period_us, int64_t shift_us, int64_t version) {
  if (period_us <= 0 || period_us > int64_t{UINT32_MAX}) {
    return absl::StrCat("period_us: ", period_us, " is outside 1..", UINT32_MAX);
  }
  if (shift_us < 0 || shift_us >= period_us) {
    return absl::StrCat("shift_us: ", shift_us, " is outside 0..period_us-1 (", period_us - 1, ")");
  }
  if (version < 0) return absl::StrCat("version: ", version, " is negative");
  return "";
}

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path, const std::string& synchronous,
                                                       uint32_t checkpoint_pages) {
  absl::StatusOr<std::unique_ptr<SqliteStateStore>> store = SqliteStateStore::Open(path, synchronous, checkpoint_pages);
  if (!store.ok()) return store.status();
  return std::unique_ptr<StateStore>(*std::move(store));
}

absl::StatusOr<std::unique_ptr<SqliteStateStore>> SqliteStateStore::Open(const std::string& path, const std::string& synchronous,
                                                             uint32_t checkpoint_pages) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat("state_path: cannot open '", path, "': ", msg));
  }
  std::unique_ptr<SqliteStateStore> store(new SqliteStateStore(db));
  sqlite3_busy_timeout(db, 5000);
  for (const std::string& sql :
       {std::string("PRAGMA journal_mode=WAL;"),
        absl::StrCat("PRAGMA synchronous=", synchronous == "full" ? "FULL" : "NORMAL", ";"),
        std::string(kSchema)}) {
    if (absl::Status s = store->Exec(sql); !s.ok()) {
      return absl::UnavailableError(absl::StrCat("state_path: '", path, "': ", s.message()));
    }
  }
  for (const AddedColumn& added : kAddedColumns) {
    bool present = false;
    {
      Statement columns(db, absl::StrCat("PRAGMA table_info(", added.table, ")").c_str());
      if (!columns.ok()) return store->Error("prepare");
      while (columns.Step() == SQLITE_ROW) present = present || columns.Text(1) == added.column;
    }
    if (present) continue;
    if (absl::Status s = store->Exec(absl::StrCat("ALTER TABLE ", added.table, " ADD COLUMN ", added.definition));
        !s.ok()) {
      return absl::UnavailableError(
          absl::StrCat("state_path: '", path, "': adding ", added.table, ".", added.column, ": ", s.message()));
    }
  }
  if (absl::Status s = store->StartCheckpointer(path, std::max<uint32_t>(1, checkpoint_pages)); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("state_path: '", path, "': ", s.message()));
  }
  return store;
}

absl::Status SqliteStateStore::StartCheckpointer(const std::string& path, uint32_t checkpoint_pages) {
  std::string mode;
  {
    Statement journal(db_, "PRAGMA journal_mode");
    if (!journal.ok() || journal.Step() != SQLITE_ROW) return Error("journal_mode");
    mode = journal.Text(0);
  }
  // No WAL (an in-memory database), or an SQLite built without threads:
  // SQLite's own checkpoints on the owning thread.
  if (mode != "wal" || sqlite3_threadsafe() == 0) return absl::OkStatus();
  const int rc = sqlite3_open_v2(path.c_str(), &checkpoint_db_, SQLITE_OPEN_READWRITE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = checkpoint_db_ ? sqlite3_errmsg(checkpoint_db_) : sqlite3_errstr(rc);
    sqlite3_close(checkpoint_db_);
    checkpoint_db_ = nullptr;
    return absl::UnavailableError(absl::StrCat("cannot open the checkpoint connection: ", msg));
  }
  // A connection opens the WAL when it first reads; until then a checkpoint
  // through it does nothing.
  {
    Statement journal(checkpoint_db_, "PRAGMA journal_mode");
    if (!journal.ok() || journal.Step() != SQLITE_ROW || journal.Text(0) != "wal") {
      sqlite3_close(checkpoint_db_);
      checkpoint_db_ = nullptr;
      return absl::UnavailableError("the checkpoint connection does not see the WAL");
    }
  }
  checkpoint_pages_ = checkpoint_pages;
  checkpointer_ = std::thread([this] { CheckpointLoop(); });
  // Replaces SQLite's automatic checkpoint (itself a WAL hook).
  sqlite3_wal_hook(db_, &SqliteStateStore::OnWalCommit, this);
  return absl::OkStatus();
}

int SqliteStateStore::OnWalCommit(void* self, sqlite3* db, const char* schema, int pages) {
  auto* store = static_cast<SqliteStateStore*>(self);
  const auto n = static_cast<uint64_t>(std::max(pages, 0));
  if (n < store->checkpoint_pages_) return SQLITE_OK;
  if (n >= uint64_t{16} * store->checkpoint_pages_) {
    // The thread fell behind (or its checkpoints keep failing): bound the WAL here.
    const int rc = sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    store->CountCheckpoint(rc, store->inline_checkpoints_);
    return SQLITE_OK;
  }
  {
    std::lock_guard<std::mutex> lock(store->mu_);
    store->checkpoint_due_ = true;
  }
  store->wake_.notify_one();
  return SQLITE_OK;
}

void SqliteStateStore::CheckpointLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return checkpoint_due_ || stopping_; });
    if (stopping_) return;
    checkpoint_due_ = false;
    lock.unlock();
    // PASSIVE: copies what no reader still needs, never waits for the writer.
    const int rc = sqlite3_wal_checkpoint_v2(checkpoint_db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    CountCheckpoint(rc, background_checkpoints_);
    lock.lock();
  }
}

void SqliteStateStore::CountCheckpoint(int rc, std::atomic<uint64_t>& done) {
  ++(rc == SQLITE_OK ? done : rc == SQLITE_BUSY ? busy_checkpoints_ : failed_checkpoints_);
}

CheckpointStats SqliteStateStore::checkpoint_stats() const {
  return {background_checkpoints_.load(), inline_checkpoints_.load(), busy_checkpoints_.load(),
          failed_checkpoints_.load()};
}

SqliteStateStore::~SqliteStateStore() {
  if (checkpointer_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_one();
    checkpointer_.join();
  }
  sqlite3_close(checkpoint_db_);
  // The last connection to close checkpoints the WAL and removes it.
  sqlite3_close(db_);
}

absl::Status SqliteStateStore::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return absl::UnavailableError(absl::StrCat("sqlite: ", msg));
  }
  return absl::OkStatus();
}

absl::Status SqliteStateStore::Error(const std::string& what) const {
  return absl::UnavailableError(absl::StrCat("sqlite: ", what, ": ", sqlite3_errmsg(db_)));
}

absl::StatusOr<int64_t> SqliteStateStore::EpochOr(int64_t initial) {
  {
    Statement get(db_, "SELECT value FROM meta WHERE key='epoch_us'");
    if (!get.ok()) return Error("prepare");
    if (get.Step() == SQLITE_ROW) return get.Int(0);
  }
  Statement put(db_, "INSERT INTO meta (key, value) VALUES ('epoch_us', ?)");
  if (!put.ok()) return Error("prepare");
  put.Bind(1, initial);
  if (put.Step() != SQLITE_DONE) return Error("store epoch");
  return initial;
}

absl::Status SqliteStateStore::PutRanking(const StoredRanking& r, uint64_t keep) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  {
    Statement put(db_, "INSERT OR REPLACE INTO rankings (id, created_epoch_us, reply, candidates) VALUES (?,?,?,?)");
    if (!put.ok()) return Error("prepare");
    put.Bind(1, static_cast<int64_t>(r.id));
    put.Bind(2, r.created_epoch_us);
    put.BindBlob(3, r.reply);
    put.BindBlob(4, r.candidates);
    if (put.Step() != SQLITE_DONE) {
      absl::Status s = Error("store ranking");
      (void)Exec("ROLLBACK");
      return s;
    }
    if (r.id > keep) {
      Statement prune(db_, "DELETE FROM rankings WHERE id <= ?");
      prune.Bind(1, static_cast<int64_t>(r.id - keep));
      prune.Step();
      // A marker refuses only rankings below it: those at or below the
      // oldest kept one refuse nothing and go (every 64th ranking: a few
      // left a while are harmless, and the request path saves a statement).
      if (r.id % 64 == 0) {
        Statement markers(db_, "DELETE FROM releases WHERE next_ranking <= ?");
        markers.Bind(1, static_cast<int64_t>(r.id - keep + 1));
        markers.Step();
      }
    }
  }
  return Exec("COMMIT");
}

absl::StatusOr<StoredRanking> SqliteStateStore::GetRanking(uint64_t id) {
  Statement get(db_, "SELECT created_epoch_us, reply, candidates FROM rankings WHERE id = ?");
  if (!get.ok()) return Error("prepare");
  get.Bind(1, static_cast<int64_t>(id));
  if (get.Step() != SQLITE_ROW) {
    return absl::NotFoundError(absl::StrCat("ranking_id: ranking ", id, " is unknown (never made or pruned)"));
  }
  return StoredRanking{id, get.Int(0), get.Text(1), get.Text(2)};
}

absl::StatusOr<uint64_t> SqliteStateStore::MaxRankingId() {
  Statement get(db_, "SELECT COALESCE(MAX(id), 0) FROM rankings");
  if (!get.ok() || get.Step() != SQLITE_ROW) return Error("max ranking id");
  return static_cast<uint64_t>(get.Int(0));
}

absl::Status SqliteStateStore::Commit(const std::vector<StoredPlacement>& placements,
                                const std::vector<StoredOffset>& offsets,
                                const std::vector<LinkScoreSample>& samples,
                                const CommittedInputs& inputs) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  auto fail = [&](const std::string& what) {
    absl::Status s = Error(what);
    (void)Exec("ROLLBACK");
    return s;
  };
  for (const StoredPlacement& p : placements) {
    Statement put(db_,
                  "INSERT OR REPLACE INTO placements (job, candidate, ranking_id, links, committed_epoch_us, servers) "
                  "VALUES (?,?,?,?,?,?)");
    put.Bind(1, p.job);
    put.Bind(2, p.candidate);
    put.Bind(3, static_cast<int64_t>(p.ranking_id));
    put.BindBlob(4, p.links);
    put.Bind(5, p.committed_epoch_us);
    put.BindBlob(6, p.servers);
    if (put.Step() != SQLITE_DONE) return fail("store placement");
  }
  if (!placements.empty()) {
    Statement bump(db_, kBumpPlacementVersion);
    if (bump.Step() != SQLITE_DONE) return fail("store placement version");
  }
  for (const StoredOffset& o : offsets) {
    Statement put(db_,
                  "INSERT OR REPLACE INTO offsets (job, origin_epoch_us, period_us, shift_us, version) "
                  "VALUES (?,?,?,?,?)");
    put.Bind(1, o.job);
    put.Bind(2, o.origin_epoch_us);
    put.Bind(3, static_cast<int64_t>(o.period_us));
    put.Bind(4, static_cast<int64_t>(o.shift_us));
    put.Bind(5, static_cast<int64_t>(o.version));
    if (put.Step() != SQLITE_DONE) return fail("store offset");
  }
  for (const LinkScoreSample& s : samples) {
    if (!InsertLinkScore(s)) return fail("store link score");
  }
  for (const auto& [job, profile] : inputs.profiles) {
    Statement put(db_, "INSERT OR REPLACE INTO committed_profiles (job, profile) VALUES (?,?)");
    put.Bind(1, job);
    put.BindBlob(2, profile);
    if (put.Step() != SQLITE_DONE) return fail("store committed profile");
  }
  for (const auto& [link, capacity] : inputs.capacities_gbps) {
    Statement put(db_, "INSERT OR REPLACE INTO committed_links (link, capacity_gbps) VALUES (?,?)");
    put.Bind(1, link);
    put.Bind(2, capacity);
    if (put.Step() != SQLITE_DONE) return fail("store committed link");
  }
  return Exec("COMMIT");
}

bool SqliteStateStore::InsertLinkScore(const LinkScoreSample& s) {
  Statement put(db_, "INSERT INTO link_scores (link, at_epoch_us, score, excess, source) VALUES (?,?,?,?,?)");
  put.Bind(1, s.link);
  put.Bind(2, s.at_epoch_us);
  put.Bind(3, s.score);
  put.Bind(4, s.excess);
  put.Bind(5, s.source);
  if (put.Step() != SQLITE_DONE) return false;
  if (keep_link_scores_ == 0) return true;
  // The newest keep_link_scores_ of the link stay (the index on (link, id)
  // finds the cut without a scan).
  Statement prune(db_,
                  "DELETE FROM link_scores WHERE link = ?1 AND id <= (SELECT id FROM link_scores WHERE link = ?1 "
                  "ORDER BY id DESC LIMIT 1 OFFSET ?2)");
  prune.Bind(1, s.link);
  prune.Bind(2, static_cast<int64_t>(keep_link_scores_));
  return prune.Step() == SQLITE_DONE;
}

absl::StatusOr<CommittedInputs> SqliteStateStore::LoadCommittedInputs() {
  CommittedInputs out;
  {
    Statement get(db_, "SELECT job, profile FROM committed_profiles");
    if (!get.ok()) return Error("prepare");
    while (get.Step() == SQLITE_ROW) out.profiles[get.Text(0)] = get.Text(1);
  }
  Statement get(db_, "SELECT link, capacity_gbps FROM committed_links");
  if (!get.ok()) return Error("prepare");
  while (get.Step() == SQLITE_ROW) out.capacities_gbps[get.Text(0)] = get.Double(1);
  return out;
}

absl::StatusOr<std::vector<StoredOffset>> SqliteStateStore::LoadOffsets(std::vector<BadRow>* bad) {
  Statement get(db_, "SELECT job, origin_epoch_us, period_us, shift_us, version FROM offsets ORDER BY job");
  if (!get.ok()) return Error("prepare");
  std::vector<StoredOffset> out;
  while (get.Step() == SQLITE_ROW) {
    const int64_t period = get.Int(2), shift = get.Int(3), version = get.Int(4);
    const std::string why = WhyStoredOffsetIsBad(period, shift, version);
    if (!why.empty()) {
      if (bad != nullptr) bad->push_back({"offsets", get.Text(0), why});
      continue;
    }
    out.push_back({get.Text(0), get.Int(1), static_cast<uint32_t>(period), static_cast<uint32_t>(shift),
                   static_cast<uint64_t>(version)});
  }
  return out;
}

absl::StatusOr<std::vector<StoredPlacement>> SqliteStateStore::LoadPlacements() {
  Statement get(db_,
                "SELECT job, candidate, ranking_id, links, committed_epoch_us, servers FROM placements ORDER BY job");
  if (!get.ok()) return Error("prepare");
  std::vector<StoredPlacement> out;
  while (get.Step() == SQLITE_ROW) {
    out.push_back(
        {get.Text(0), get.Text(1), static_cast<uint64_t>(get.Int(2)), get.Text(3), get.Int(4), get.Text(5)});
  }
  return out;
}

absl::StatusOr<uint64_t> SqliteStateStore::PlacementVersion() {
  Statement get(db_, "SELECT value FROM meta WHERE key='placement_version'");
  if (!get.ok()) return Error("prepare");
  if (get.Step() != SQLITE_ROW) return 0;
  return static_cast<uint64_t>(get.Int(0));
}

absl::Status SqliteStateStore::PutProfile(const StoredProfile& p) {
  Statement put(db_,
                "INSERT OR REPLACE INTO profiles (kind, subject, update_msg, updated_epoch_us) VALUES (?,?,?,?)");
  if (!put.ok()) return Error("prepare");
  put.Bind(1, static_cast<int64_t>(p.kind));
  put.Bind(2, p.subject);
  put.BindBlob(3, p.update);
  put.Bind(4, p.updated_epoch_us);
  if (put.Step() != SQLITE_DONE) return Error("store profile");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StoredProfile>> SqliteStateStore::LoadProfiles() {
  Statement get(db_, "SELECT kind, subject, update_msg, updated_epoch_us FROM profiles ORDER BY kind, subject");
  if (!get.ok()) return Error("prepare");
  std::vector<StoredProfile> out;
  while (get.Step() == SQLITE_ROW) {
    out.push_back({static_cast<int>(get.Int(0)), get.Text(1), get.Text(2), get.Int(3)});
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> SqliteStateStore::Release(const std::vector<std::string>& jobs,
                                                             const ReleaseExtras& extras) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  auto fail = [&](const std::string& what) {
    absl::Status s = Error(what);
    (void)Exec("ROLLBACK");
    return s;
  };
  std::vector<std::string> released;
  for (const std::string& job : jobs) {
    int removed = 0;
    // A job was placed when it had a placement or an offset row; its
    // committed profile and latest profile go with them but do not count.
    const std::pair<const char*, bool> deletes[] = {{"DELETE FROM placements WHERE job = ?1", true},
                                                    {"DELETE FROM offsets WHERE job = ?1", true},
                                                    {"DELETE FROM committed_profiles WHERE job = ?1", false},
                                                    {"DELETE FROM profiles WHERE subject = ?1 AND kind = ?2", false}};
    for (const auto& [sql, counts] : deletes) {
      Statement del(db_, sql);
      del.Bind(1, job);
      if (std::string_view(sql).find("?2") != std::string_view::npos) del.Bind(2, int64_t{extras.job_profile_kind});
      if (del.Step() != SQLITE_DONE) return fail("release job");
      if (counts) removed += sqlite3_changes(db_);
    }
    if (removed > 0) released.push_back(job);
    if (extras.next_ranking_id > 0) {
      Statement mark(db_, "INSERT OR REPLACE INTO releases (job, next_ranking) VALUES (?,?)");
      mark.Bind(1, job);
      mark.Bind(2, static_cast<int64_t>(extras.next_ranking_id));
      if (mark.Step() != SQLITE_DONE) return fail("release marker");
    }
  }
  for (const std::string& link : extras.unloaded_links) {
    for (const char* sql : {"DELETE FROM link_scores WHERE link = ?", "DELETE FROM committed_links WHERE link = ?"}) {
      Statement del(db_, sql);
      del.Bind(1, link);
      if (del.Step() != SQLITE_DONE) return fail("release link");
    }
  }
  if (!released.empty()) {
    Statement bump(db_, kBumpPlacementVersion);
    if (bump.Step() != SQLITE_DONE) {
      absl::Status s = Error("store placement version");
      (void)Exec("ROLLBACK");
      return s;
    }
  }
  if (absl::Status s = Exec("COMMIT"); !s.ok()) return s;
  return released;
}

absl::StatusOr<std::map<std::string, uint64_t>> SqliteStateStore::LoadReleaseMarkers() {
  Statement get(db_, "SELECT job, next_ranking FROM releases");
  if (!get.ok()) return Error("prepare");
  std::map<std::string, uint64_t> out;
  while (get.Step() == SQLITE_ROW) out[get.Text(0)] = static_cast<uint64_t>(get.Int(1));
  return out;
}

absl::Status SqliteStateStore::AddLinkScore(const LinkScoreSample& s) { return Commit({}, {}, {s}); }

absl::StatusOr<std::vector<LinkScoreSample>> SqliteStateStore::LinkScoreHistory(const std::string& link, int limit) {
  Statement get(db_,
                "SELECT link, at_epoch_us, score, excess, source FROM link_scores WHERE link = ? "
                "ORDER BY id DESC LIMIT ?");
  if (!get.ok()) return Error("prepare");
  get.Bind(1, link);
  get.Bind(2, static_cast<int64_t>(limit));
  std::vector<LinkScoreSample> out;
  while (get.Step() == SQLITE_ROW) {
    out.push_back({get.Text(0), get.Int(1), get.Double(2), get.Double(3), get.Text(4)});
  }
  return out;
}

absl::Status SqliteStateStore::Quarantine(const BadRow& row, int64_t at_epoch_us) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  auto fail = [&](const std::string& what) {
    absl::Status s = Error(what);
    (void)Exec("ROLLBACK");
    return s;
  };
  {
    Statement put(db_, "INSERT INTO quarantine (table_name, row_key, reason, at_epoch_us) VALUES (?,?,?,?)");
    put.Bind(1, row.table);
    put.Bind(2, row.key);
    put.Bind(3, row.reason);
    put.Bind(4, at_epoch_us);
    if (put.Step() != SQLITE_DONE) return fail("quarantine");
  }
  // The key column of each table (fixed strings, never from the row).
  std::string sql;
  if (row.table == "offsets" || row.table == "placements" || row.table == "committed_profiles") {
    sql = absl::StrCat("DELETE FROM ", row.table, " WHERE job = ?");
  } else if (row.table == "committed_links") {
    sql = "DELETE FROM committed_links WHERE link = ?";
  } else if (row.table == "profiles") {
    sql = "DELETE FROM profiles WHERE (CAST(kind AS TEXT) || '/' || subject) = ?";
  } else {
    (void)Exec("ROLLBACK");
    return absl::InvalidArgumentError(absl::StrCat("quarantine: no table '", row.table, "'"));
  }
  Statement del(db_, sql.c_str());
  del.Bind(1, row.key);
  if (del.Step() != SQLITE_DONE) return fail("quarantine");
  return Exec("COMMIT");
}

absl::StatusOr<std::vector<BadRow>> SqliteStateStore::LoadQuarantine() {
  Statement get(db_, "SELECT table_name, row_key, reason FROM quarantine ORDER BY id");
  if (!get.ok()) return Error("prepare");
  std::vector<BadRow> out;
  while (get.Step() == SQLITE_ROW) out.push_back({get.Text(0), get.Text(1), get.Text(2)});
  return out;
}

}  // namespace phasor::daemon
