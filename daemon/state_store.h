// phasord's durable state: epoch, rankings awaiting a commit, placements,
// offsets (shifts), the latest profile per job and link, and link-score
// history. StateStore is the interface; two backends implement it:
//   - the SQLite store here (the default; state_store.backend: sqlite), an
//     embedded database in WAL mode;
//   - the etcd store (etcd_state_store.h; backend etcd), the state of an
//     elected phasord in an etcd cluster.
//
// Every mutating call is one transaction: when it returns OK the change
// survives a crash of the process (SQLite; with synchronous "full" also a
// power loss), or is in the etcd cluster's quorum. Not thread-safe: one
// thread owns a StateStore.
//
// The SQLite store's WAL is checkpointed (copied into the database file and
// synced) on the store's own thread, with its own connection, once it holds
// `checkpoint_pages` pages: no call pays for a checkpoint's copy and syncs.
// Should that thread fall behind, the owning thread checkpoints itself at
// 16 x `checkpoint_pages`, so the WAL stays bounded.
#ifndef PHASOR_DAEMON_STATE_STORE_H_
#define PHASOR_DAEMON_STATE_STORE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// SQLite stays behind the store: only state_store.cc includes <sqlite3.h>.
struct sqlite3;

namespace phasor::daemon {

struct StoredOffset {
  std::string job;
  int64_t origin_epoch_us = 0;
  uint32_t period_us = 0;
  uint32_t shift_us = 0;
  uint64_t version = 0;
};

// Why a stored offset's fields cannot be one phasord wrote (a row to
// quarantine): period_us outside 1..2^32-1, shift_us outside
// 0..period_us-1, or a negative version; empty when they can. Both stores
// check every offset they load with it.
std::string WhyStoredOffsetIsBad(int64_t period_us, int64_t shift_us, int64_t version);

struct StoredPlacement {
  std::string job;
  std::string candidate;
  uint64_t ranking_id = 0;
  std::string links;  // serialized phasor.v1.LinkShares of the job in the candidate
  int64_t committed_epoch_us = 0;
  // Serialized phasor.v1.ServerList of the job in the candidate (server-form
  // candidates); empty when the candidate gave links only, and in rows
  // written before phasord kept servers.
  std::string servers;
};

struct StoredRanking {
  uint64_t id = 0;
  int64_t created_epoch_us = 0;
  std::string reply;       // serialized phasor.v1.RankReply as Commit reads it (ranked: shifts, link scores)
  std::string candidates;  // serialized phasor.v1.RankRequest as ranked: links, jobs, candidates
};

struct StoredProfile {
  int kind = 0;  // phasor.v1.ProfileUpdate.SubjectKind
  std::string subject;
  std::string update;  // serialized phasor.v1.ProfileUpdate
  int64_t updated_epoch_us = 0;
};

struct LinkScoreSample {
  std::string link;
  int64_t at_epoch_us = 0;
  double score = 1;
  double excess = 0;   // 1 - score: mean excess over capacity, as a fraction of it
  std::string source;  // "commit" (predicted) or "probe" (observed)
};

// What the RankRequest of a committed placement said about its jobs and links
// (profile and capacity), kept so that a restarted phasord still knows them
// (GetSnapshot) when no probe or topology file tells it.
struct CommittedInputs {
  std::map<std::string, std::string> profiles;  // job -> serialized phasor.v1.TrafficProfile
  std::map<std::string, double> capacities_gbps;  // link -> capacity
};

// What goes with a release beside the jobs' own rows, in its transaction.
struct ReleaseExtras {
  // Rankings with an id below this were made before the release: the
  // released jobs' markers (ReleaseMarkers) refuse their commits. 0: none.
  uint64_t next_ranking_id = 0;
  // The `profiles` kind whose subject is a job (phasor.v1.ProfileUpdate.JOB):
  // a released job's latest profile goes too.
  int job_profile_kind = 0;
  // Links no remaining placement loads: their link_scores and committed_links rows go.
  std::vector<std::string> unloaded_links;
};

// A stored row that no longer validates (an old version's, or one written by
// hand): which table, its key, and why.
struct BadRow {
  std::string table;  // offsets, placements, profiles, committed_profiles, committed_links
  std::string key;    // the job, the link, or "<kind>/<subject>" for profiles
  std::string reason;
};

// What the WAL checkpoints did since the store was opened.
struct CheckpointStats {
  uint64_t background = 0;  // checkpoints run on the store's thread
  uint64_t inline_ = 0;     // checkpoints the owning thread ran (the thread fell behind)
  uint64_t busy = 0;        // checkpoints that found another under way (SQLITE_BUSY: the other
                            // connection's, which copies the same frames; retried at the next commit)
  uint64_t failed = 0;      // checkpoints that returned another error (retried at the next commit)
};

// The state phasord keeps, whatever holds it. Errors: Unavailable (or, from
// the etcd store, UNAVAILABLE with a leader: protocol::NotLeaderStatus) when
// the store cannot be reached or this phasord no longer leads; NotFound for
// an unknown ranking.
class StateStore {
 public:
  // SQLite's own default threshold (PRAGMA wal_autocheckpoint).
  static constexpr uint32_t kDefaultCheckpointPages = 1000;

  // The SQLite store: opens (creating if needed) the database at `path`;
  // synchronous is "normal" or "full". Unavailable when SQLite cannot open it.
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(const std::string& path, const std::string& synchronous,
                                                          uint32_t checkpoint_pages = kDefaultCheckpointPages);
  virtual ~StateStore() = default;

  // The epoch; when none is stored yet, stores `initial` and returns it.
  virtual absl::StatusOr<int64_t> EpochOr(int64_t initial) = 0;

  virtual absl::Status PutRanking(const StoredRanking& ranking, uint64_t keep) = 0;
  // NotFound when the ranking is unknown (never made, or pruned).
  virtual absl::StatusOr<StoredRanking> GetRanking(uint64_t id) = 0;
  // At least the largest ranking id ever handed out (ids are never reused).
  virtual absl::StatusOr<uint64_t> MaxRankingId() = 0;

  // One transaction: placements, offsets and inputs replace the jobs' (and
  // links') previous ones; samples are appended. When `placements` is not
  // empty the placement version goes up by one.
  virtual absl::Status Commit(const std::vector<StoredPlacement>& placements,
                              const std::vector<StoredOffset>& offsets,
                              const std::vector<LinkScoreSample>& samples,
                              const CommittedInputs& inputs = {}) = 0;

  // One transaction: removes the jobs' placements, offsets, committed
  // profiles and latest profiles, and what `extras` names; records a release
  // marker (extras.next_ranking_id) for every job named. Returns the jobs that
  // held a placement or an offset (in the order given); an unknown job is
  // skipped, not an error. When a job was released the placement version
  // goes up by one.
  virtual absl::StatusOr<std::vector<std::string>> Release(const std::vector<std::string>& jobs,
                                                           const ReleaseExtras& extras = {}) = 0;
  // job -> the first ranking id made after its latest release, for the
  // markers still able to refuse a kept ranking (PutRanking prunes the rest).
  virtual absl::StatusOr<std::map<std::string, uint64_t>> LoadReleaseMarkers() = 0;

  // How many times the committed placement changed (Commit with placements,
  // Release that released a job) since the state was created; 0 before.
  virtual absl::StatusOr<uint64_t> PlacementVersion() = 0;

  // The profiles and capacities of every commit so far, the latest per job
  // and link.
  virtual absl::StatusOr<CommittedInputs> LoadCommittedInputs() = 0;

  // Rows whose numbers do not fit their fields (a period of 0 or above
  // 2^32 - 1 us, a shift not below its period, a negative version) are not
  // returned but appended to `bad` (when given).
  virtual absl::StatusOr<std::vector<StoredOffset>> LoadOffsets(std::vector<BadRow>* bad = nullptr) = 0;
  virtual absl::StatusOr<std::vector<StoredPlacement>> LoadPlacements() = 0;

  virtual absl::Status PutProfile(const StoredProfile& profile) = 0;
  virtual absl::StatusOr<std::vector<StoredProfile>> LoadProfiles() = 0;

  virtual absl::Status AddLinkScore(const LinkScoreSample& sample) = 0;
  // Keep at most this many samples per link (the newest); 0: all. Applies to
  // every sample added from now on (AddLinkScore, Commit).
  void KeepLinkScoresPerLink(uint32_t keep) { keep_link_scores_ = keep; }
  // The newest `limit` samples of `link`, newest first.
  virtual absl::StatusOr<std::vector<LinkScoreSample>> LinkScoreHistory(const std::string& link, int limit) = 0;

  // Moves a bad row out of its table into `quarantine` (table, key, reason,
  // time), so that it is never loaded again and can still be inspected.
  virtual absl::Status Quarantine(const BadRow& row, int64_t at_epoch_us) = 0;
  // Everything quarantined so far, oldest first.
  virtual absl::StatusOr<std::vector<BadRow>> LoadQuarantine() = 0;

  // The SQLite store's WAL checkpoints; zeros for other backends.
  virtual CheckpointStats checkpoint_stats() const { return {}; }

 protected:
  StateStore() = default;
  uint32_t keep_link_scores_ = 0;
};

// The SQLite backend (state_store.backend: sqlite).
class SqliteStateStore final : public StateStore {
 public:
  static absl::StatusOr<std::unique_ptr<SqliteStateStore>> Open(const std::string& path, const std::string& synchronous,
                                                          uint32_t checkpoint_pages = kDefaultCheckpointPages);
  ~SqliteStateStore() override;
  SqliteStateStore(const SqliteStateStore&) = delete;
  SqliteStateStore& operator=(const SqliteStateStore&) = delete;

  // The epoch; when none is stored yet, stores `initial` and returns it.
  absl::StatusOr<int64_t> EpochOr(int64_t initial) override;

  absl::Status PutRanking(const StoredRanking& ranking, uint64_t keep) override;
  // NotFound when the ranking is unknown (never made, or pruned).
  absl::StatusOr<StoredRanking> GetRanking(uint64_t id) override;
  absl::StatusOr<uint64_t> MaxRankingId() override;

  // One transaction: placements, offsets and inputs replace the jobs' (and
  // links') previous ones; samples are appended. When `placements` is not
  // empty the placement version goes up by one.
  absl::Status Commit(const std::vector<StoredPlacement>& placements,
                      const std::vector<StoredOffset>& offsets,
                      const std::vector<LinkScoreSample>& samples,
                      const CommittedInputs& inputs = {}) override;

  // One transaction: removes the jobs' placements, offsets, committed
  // profiles and latest profiles, and what `extras` names; records a release
  // marker (extras.next_ranking_id) for every job named. Returns the jobs that
  // held a placement or an offset (in the order given); an unknown job is
  // skipped, not an error. When a job was released the placement version
  // goes up by one.
  absl::StatusOr<std::vector<std::string>> Release(const std::vector<std::string>& jobs,
                                                   const ReleaseExtras& extras = {}) override;
  // job -> the first ranking id made after its latest release, for the
  // markers still able to refuse a kept ranking (PutRanking prunes the rest).
  absl::StatusOr<std::map<std::string, uint64_t>> LoadReleaseMarkers() override;

  // How many times the committed placement changed (Commit with placements,
  // Release that released a job) since the database was created; 0 before.
  absl::StatusOr<uint64_t> PlacementVersion() override;

  // The profiles and capacities of every commit so far, the latest per job
  // and link.
  absl::StatusOr<CommittedInputs> LoadCommittedInputs() override;

  // Rows whose numbers do not fit their fields (a period of 0 or above
  // 2^32 - 1 us, a shift not below its period, a negative version) are not
  // returned but appended to `bad` (when given).
  absl::StatusOr<std::vector<StoredOffset>> LoadOffsets(std::vector<BadRow>* bad = nullptr) override;
  absl::StatusOr<std::vector<StoredPlacement>> LoadPlacements() override;

  absl::Status PutProfile(const StoredProfile& profile) override;
  absl::StatusOr<std::vector<StoredProfile>> LoadProfiles() override;

  absl::Status AddLinkScore(const LinkScoreSample& sample) override;
  // Keep at most this many samples per link (the newest); 0: all. Applies to
  // every sample added from now on (AddLinkScore, Commit).
  // The newest `limit` samples of `link`, newest first.
  absl::StatusOr<std::vector<LinkScoreSample>> LinkScoreHistory(const std::string& link, int limit) override;

  // Moves a bad row out of its table into `quarantine` (table, key, reason,
  // time), so that it is never loaded again and can still be inspected.
  absl::Status Quarantine(const BadRow& row, int64_t at_epoch_us) override;
  // Everything quarantined so far, oldest first.
  absl::StatusOr<std::vector<BadRow>> LoadQuarantine() override;

  CheckpointStats checkpoint_stats() const override;

 private:
  explicit SqliteStateStore(sqlite3* db) : db_(db) {}
  absl::Status Exec(const std::string& sql);
  absl::Status Error(const std::string& what) const;
  // Starts the checkpoint thread with its own connection to `path`.
  absl::Status StartCheckpointer(const std::string& path, uint32_t checkpoint_pages);
  // sqlite3_wal_hook: after every commit, with the WAL's size in pages.
  static int OnWalCommit(void* self, sqlite3* db, const char* schema, int pages);
  void CheckpointLoop();
  // Counts a checkpoint's result: `done` on SQLITE_OK, else busy or failed.
  void CountCheckpoint(int rc, std::atomic<uint64_t>& done);

  // Appends one sample (inside the caller's transaction) and drops the
  // link's samples beyond keep_link_scores_. False on an SQLite error.
  bool InsertLinkScore(const LinkScoreSample& sample);

  sqlite3* db_;
  // The checkpoint thread (absent for a database without a WAL).
  sqlite3* checkpoint_db_ = nullptr;
  uint32_t checkpoint_pages_ = kDefaultCheckpointPages;
  std::thread checkpointer_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool checkpoint_due_ = false;  // guarded by mu_
  bool stopping_ = false;        // guarded by mu_
  std::atomic<uint64_t> background_checkpoints_{0};
  std::atomic<uint64_t> inline_checkpoints_{0};
  std::atomic<uint64_t> busy_checkpoints_{0};
  std::atomic<uint64_t> failed_checkpoints_{0};
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_STATE_STORE_H_
