// The etcd backend of StateStore (state_store.backend: etcd): phasord's
// state under one prefix of an etcd v3 cluster, written by the elected
// leader only (leader_election.h).
//
// Keys (PREFIX = state_store.etcd.prefix; names escaped: '%' -> %25, '/' -> %2F):
//   PREFIX/meta/epoch, PREFIX/meta/placement_version, PREFIX/meta/ranking_block
//   PREFIX/rankings/<id, 20 digits>        PREFIX/placements/<job>
//   PREFIX/offsets/<job>                   PREFIX/profiles/<kind>/<subject>
//   PREFIX/link_scores/<link>/<seq>        PREFIX/committed_profiles/<job>
//   PREFIX/committed_links/<link>          PREFIX/releases/<job>
//   PREFIX/quarantine/<seq>                (PREFIX/leader: the election's)
// Values are CBOR maps (nlohmann-json), protobuf bytes as CBOR byte strings.
//
// Fencing: every write is one etcd txn that first compares the leader key's
// create revision with this leader's (Fence); once another phasord leads, the
// compare fails, nothing is written and the call returns UNAVAILABLE
// (protocol::NotLeaderStatus), and fenced() turns true.
//
// Commits, releases, the epoch and quarantines are written before the call
// returns (one txn each). Rankings, probe profiles and probe link scores are
// queued and written by the store's writer thread in order (several to a
// txn), so that a RankRequest's reply does not wait for etcd's fsync: a
// leader that dies loses at most the rankings and probe updates of the last
// moments (a commit of such a ranking is NotFound: rank again; probes send
// again). Ranking ids come from blocks reserved before use
// (PREFIX/meta/ranking_block), so a new leader never reuses an id a dead one
// handed out. Rankings kept are bounded by keep_rankings, by their age
// (ranking_max_age_s) and by their total size (max_ranking_bytes).
//
// Thread safety: one thread calls the StateStore methods; the writer thread
// is internal.
#ifndef PHASOR_DAEMON_ETCD_STATE_STORE_H_
#define PHASOR_DAEMON_ETCD_STATE_STORE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config.h"
#include "daemon/etcd_client.h"
#include "daemon/state_store.h"

namespace phasor::daemon {

// Which leadership writes: the leader key and its create revision.
struct EtcdFence {
  std::string leader_key;
  int64_t create_revision = 0;
};

class EtcdStateStore final : public StateStore {
 public:
  // Reads what the writer needs from etcd (counters, kept rankings' ids).
  // Unavailable when no member answers.
  static absl::StatusOr<std::unique_ptr<EtcdStateStore>> Open(const EtcdOptions& options,
                                                              EtcdFence fence);
  ~EtcdStateStore() override;

  absl::StatusOr<int64_t> EpochOr(int64_t initial) override;
  absl::Status PutRanking(const StoredRanking& ranking, uint64_t keep) override;
  absl::StatusOr<StoredRanking> GetRanking(uint64_t id) override;
  absl::StatusOr<uint64_t> MaxRankingId() override;
  absl::Status Commit(const std::vector<StoredPlacement>& placements,
                      const std::vector<StoredOffset>& offsets,
                      const std::vector<LinkScoreSample>& samples,
                      const CommittedInputs& inputs = {}) override;
  absl::StatusOr<std::vector<std::string>> Release(const std::vector<std::string>& jobs,
                                                   const ReleaseExtras& extras = {}) override;
  absl::StatusOr<std::map<std::string, uint64_t>> LoadReleaseMarkers() override;
  absl::StatusOr<uint64_t> PlacementVersion() override;
  absl::StatusOr<CommittedInputs> LoadCommittedInputs() override;
  absl::StatusOr<std::vector<StoredOffset>> LoadOffsets(
      std::vector<BadRow>* bad = nullptr) override;
  absl::StatusOr<std::vector<StoredPlacement>> LoadPlacements() override;
  absl::Status PutProfile(const StoredProfile& profile) override;
  absl::StatusOr<std::vector<StoredProfile>> LoadProfiles() override;
  absl::Status AddLinkScore(const LinkScoreSample& sample) override;
  absl::StatusOr<std::vector<LinkScoreSample>> LinkScoreHistory(const std::string& link,
                                                                int limit) override;
  absl::Status Quarantine(const BadRow& row, int64_t at_epoch_us) override;
  absl::StatusOr<std::vector<BadRow>> LoadQuarantine() override;

  // True once a write was refused because another phasord leads.
  bool fenced() const { return fenced_.load(); }
  // Queued writes not yet in etcd, and queued writes that failed (logged).
  size_t queued() const;
  uint64_t failed_async_writes() const { return failed_async_.load(); }
  // Blocks until every queued write is in etcd (or failed).
  void Flush();

 private:
  struct Write {
    std::vector<EtcdOp> ops;
    bool sync = false;
    bool done = false;
    absl::Status status;
  };

  EtcdStateStore(const EtcdOptions& options, EtcdFence fence);
  absl::Status Load();
  // One fenced txn, on the calling thread's client.
  absl::Status FencedTxn(EtcdClient& client, const std::vector<EtcdOp>& ops);
  // Queues `ops`; with sync, waits for them (in order after what is queued).
  absl::Status Enqueue(std::vector<EtcdOp> ops, bool sync);
  void WriterLoop();

  std::string Key(const std::string& table, const std::string& name) const;
  std::string RankingKey(uint64_t id) const;
  std::string LinkScoreKey(const std::string& link, uint64_t seq) const;
  std::vector<EtcdOp> LinkScoreOps(const LinkScoreSample& sample);

  EtcdOptions options_;
  EtcdFence fence_;
  std::unique_ptr<EtcdClient> client_;  // the owning thread's
  std::unique_ptr<EtcdClient> writer_client_;
  std::atomic<bool> fenced_{false};
  std::atomic<uint64_t> failed_async_{0};

  uint64_t placement_version_ = 0;
  uint64_t ranking_block_end_ = 1;  // ids below it may have been handed out
  uint64_t max_ranking_id_ = 0;
  struct KeptRanking {
    uint64_t id;
    int64_t created_us;
    uint64_t bytes;
  };
  std::deque<KeptRanking> kept_;
  uint64_t kept_bytes_ = 0;
  std::map<uint64_t, StoredRanking> recent_;  // the newest rankings, also while queued
  // The newest rankings too large for one etcd write, with their sizes: a
  // commit of one is told why it is not found (at most kRecentRankings).
  std::map<uint64_t, size_t> oversized_;
  std::map<std::string, uint64_t> markers_;
  std::map<std::string, std::deque<uint64_t>> link_seqs_;
  uint64_t next_seq_ = 1;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::deque<std::shared_ptr<Write>> queue_;  // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  bool writing_ = false;                      // guarded by mu_
  std::thread writer_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_ETCD_STATE_STORE_H_
