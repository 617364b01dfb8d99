#include "daemon/etcd_state_store.h"

#include <algorithm>
#include <chrono>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"
#include "protocol/status.h"
#include "spdlog/spdlog.h"

namespace phasor::daemon {
namespace {

using nlohmann::json;

// A txn holds at most etcd's --max-txn-ops (128 by default) and its request
// at most --max-request-bytes (1.5 MiB): queued writes are grouped below both.
constexpr size_t kMaxOpsPerTxn = 120;
constexpr size_t kMaxBytesPerTxn = 1u << 20;
// How long queued writes wait for others to share their txn.
constexpr std::chrono::milliseconds kLinger{5};
// Ranking ids reserved per write of PREFIX/meta/ranking_block.
constexpr uint64_t kRankingBlock = 1000;
// Rankings kept in memory for Commit (the newest; older ones are read back).
constexpr size_t kRecentRankings = 64;

std::string Escape(const std::string& name) {
  return absl::StrReplaceAll(name, {{"%", "%25"}, {"/", "%2F"}});
}
std::string Unescape(const std::string& name) {
  return absl::StrReplaceAll(name, {{"%2F", "/"}, {"%25", "%"}});
}

json Bin(const std::string& s) { return json::binary(std::vector<uint8_t>(s.begin(), s.end())); }

std::string Encode(const json& j) {
  std::vector<uint8_t> v = json::to_cbor(j);
  return std::string(v.begin(), v.end());
}
json Decode(const std::string& s) {
  return json::from_cbor(s.begin(), s.end(), /*strict=*/true, /*allow_exceptions=*/false);
}
std::string BinOf(const json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_binary()) return "";
  const auto& b = it->get_binary();
  return std::string(b.begin(), b.end());
}
int64_t IntOf(const json& j, const char* field) {
  auto it = j.find(field);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}
double DoubleOf(const json& j, const char* field) {
  auto it = j.find(field);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}
std::string StrOf(const json& j, const char* field) {
  auto it = j.find(field);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

uint64_t ParseU64(const std::string& s) {
  uint64_t v = 0;
  (void)absl::SimpleAtoi(s, &v);
  return v;
}

// The name after `prefix` in `key`.
std::string NameAfter(const std::string& key, const std::string& prefix) {
  return key.size() > prefix.size() ? key.substr(prefix.size()) : "";
}

}  // namespace

EtcdStateStore::EtcdStateStore(const EtcdOptions& options, EtcdFence fence)
    : options_(options),
      fence_(std::move(fence)),
      client_(
          std::make_unique<EtcdClient>(options.endpoints, static_cast<int>(options.timeout_ms))),
      writer_client_(
          std::make_unique<EtcdClient>(options.endpoints, static_cast<int>(options.timeout_ms))) {}

absl::StatusOr<std::unique_ptr<EtcdStateStore>> EtcdStateStore::Open(const EtcdOptions& options,
                                                                     EtcdFence fence) {
  std::unique_ptr<EtcdStateStore> store(new EtcdStateStore(options, std::move(fence)));
  if (absl::Status s = store->Load(); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("state_store.etcd: ", s.message()));
  }
  store->writer_ = std::thread([s = store.get()] { s->WriterLoop(); });
  return store;
}

EtcdStateStore::~EtcdStateStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::string EtcdStateStore::Key(const std::string& table, const std::string& name) const {
  return absl::StrCat(options_.prefix, "/", table, "/", Escape(name));
}
std::string EtcdStateStore::RankingKey(uint64_t id) const {
  return absl::StrFormat("%s/rankings/%020u", options_.prefix, id);
}
std::string EtcdStateStore::LinkScoreKey(const std::string& link, uint64_t seq) const {
  return absl::StrFormat("%s/link_scores/%s/%020u", options_.prefix, Escape(link), seq);
}

absl::Status EtcdStateStore::Load() {
  const std::string meta = options_.prefix + "/meta/";
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(meta, {EtcdClient::PrefixEnd(meta)});
  if (!kvs.ok()) return kvs.status();
  for (const EtcdKv& kv : *kvs) {
    const std::string name = NameAfter(kv.key, meta);
    if (name == "placement_version") placement_version_ = ParseU64(kv.value);
    if (name == "ranking_block") ranking_block_end_ = std::max<uint64_t>(1, ParseU64(kv.value));
  }
  // Kept rankings: their ids (keys only: a takeover does not read every
  // ranking's bytes). Their age counts from now and their size as 0, so the
  // age and size bounds prune them later than they would have, never sooner;
  // keep_rankings bounds them as before.
  const std::string rankings = options_.prefix + "/rankings/";
  EtcdRangeOptions ids{EtcdClient::PrefixEnd(rankings)};
  ids.keys_only = true;
  kvs = client_->Range(rankings, ids);
  if (!kvs.ok()) return kvs.status();
  const int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  for (const EtcdKv& kv : *kvs) {
    const uint64_t id = ParseU64(NameAfter(kv.key, rankings));
    kept_.push_back({id, now_us, 0});
    max_ranking_id_ = std::max(max_ranking_id_, id);
  }
  // Ids below the reserved block may have been handed out by the leader
  // before (and lost with it): never reuse them.
  max_ranking_id_ = std::max(max_ranking_id_, ranking_block_end_ - 1);
  const std::string scores = options_.prefix + "/link_scores/";
  EtcdRangeOptions keys_only{EtcdClient::PrefixEnd(scores)};
  keys_only.keys_only = true;
  kvs = client_->Range(scores, keys_only);
  if (!kvs.ok()) return kvs.status();
  for (const EtcdKv& kv : *kvs) {
    const std::string rest = NameAfter(kv.key, scores);
    const size_t slash = rest.rfind('/');
    if (slash == std::string::npos) continue;
    const uint64_t seq = ParseU64(rest.substr(slash + 1));
    link_seqs_[Unescape(rest.substr(0, slash))].push_back(seq);
    next_seq_ = std::max(next_seq_, seq + 1);
  }
  for (auto& [link, seqs] : link_seqs_) std::sort(seqs.begin(), seqs.end());
  const std::string quarantine = options_.prefix + "/quarantine/";
  keys_only.range_end = EtcdClient::PrefixEnd(quarantine);
  kvs = client_->Range(quarantine, keys_only);
  if (!kvs.ok()) return kvs.status();
  for (const EtcdKv& kv : *kvs)
    next_seq_ = std::max(next_seq_, ParseU64(NameAfter(kv.key, quarantine)) + 1);
  absl::StatusOr<std::map<std::string, uint64_t>> markers = LoadReleaseMarkers();
  if (!markers.ok()) return markers.status();
  markers_ = *std::move(markers);
  return absl::OkStatus();
}

absl::Status EtcdStateStore::FencedTxn(EtcdClient& client, const std::vector<EtcdOp>& ops) {
  if (fenced_) {
    return protocol::NotLeaderStatus("state_store: this phasord no longer leads: write refused",
                                     "");
  }
  absl::StatusOr<EtcdTxnResult> r = client.Txn({{fence_.leader_key, fence_.create_revision}}, ops);
  if (!r.ok()) {
    return protocol::NotLeaderStatus(absl::StrCat("state_store: etcd: ", r.status().message()), "");
  }
  if (!r->succeeded) {
    fenced_ = true;
    return protocol::NotLeaderStatus(
        absl::StrCat("state_store: the leader key ", fence_.leader_key,
                     " is no longer this phasord's (created at ", fence_.create_revision,
                     "): another phasord leads; write refused"),
        "");
  }
  return absl::OkStatus();
}

absl::Status EtcdStateStore::Enqueue(std::vector<EtcdOp> ops, bool sync) {
  auto w = std::make_shared<Write>();
  w->ops = std::move(ops);
  w->sync = sync;
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(w);
  // The writer lingers for more queued writes: woken only for the first, a
  // sync one, or a full txn's worth (fewer context switches per ranking).
  if (sync || queue_.size() == 1 || queue_.size() >= kMaxOpsPerTxn / 2) wake_.notify_all();
  if (!sync) return absl::OkStatus();
  done_.wait(lock, [&] { return w->done; });
  return w->status;
}

void EtcdStateStore::WriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty() && stopping_) return;
    // Queued writes linger up to kLinger for more to join them: fewer, larger
    // txns (etcd's cost is per txn: its raft round and fsync), so a burst of
    // rankings does not keep etcd busy on a small machine.
    if (!queue_.front()->sync) {
      wake_.wait_for(lock, kLinger, [this] {
        return stopping_ || queue_.size() >= kMaxOpsPerTxn / 2 || queue_.back()->sync;
      });
    }
    // A sync write alone (one txn per commit); consecutive queued ones together.
    std::vector<std::shared_ptr<Write>> batch = {queue_.front()};
    queue_.pop_front();
    size_t ops = batch[0]->ops.size(), bytes = 0;
    for (const EtcdOp& op : batch[0]->ops) bytes += op.key.size() + op.value.size();
    while (!batch[0]->sync && !queue_.empty() && !queue_.front()->sync) {
      size_t b = 0;
      for (const EtcdOp& op : queue_.front()->ops) b += op.key.size() + op.value.size();
      if (ops + queue_.front()->ops.size() > kMaxOpsPerTxn || bytes + b > kMaxBytesPerTxn) break;
      ops += queue_.front()->ops.size();
      bytes += b;
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    writing_ = true;
    lock.unlock();
    std::vector<EtcdOp> all;
    for (const auto& w : batch) all.insert(all.end(), w->ops.begin(), w->ops.end());
    absl::Status s = FencedTxn(*writer_client_, all);
    if (!s.ok() && !batch[0]->sync) {
      failed_async_ += batch.size();
      spdlog::warn("phasord: state_store: {} queued writes lost: {}", batch.size(),
                   std::string(s.message()));
    }
    lock.lock();
    writing_ = false;
    for (const auto& w : batch) {
      w->status = s;
      w->done = true;
    }
    done_.notify_all();
  }
}

size_t EtcdStateStore::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + (writing_ ? 1 : 0);
}

void EtcdStateStore::Flush() { (void)Enqueue({}, true); }

absl::StatusOr<int64_t> EtcdStateStore::EpochOr(int64_t initial) {
  const std::string key = options_.prefix + "/meta/epoch";
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(key);
  if (!kvs.ok()) return kvs.status();
  if (!kvs->empty()) {
    int64_t v = 0;
    if (!absl::SimpleAtoi((*kvs)[0].value, &v))
      return absl::InternalError("state_store: meta/epoch is not a number");
    return v;
  }
  if (absl::Status s = Enqueue({EtcdOp::Put(key, absl::StrCat(initial))}, true); !s.ok()) return s;
  return initial;
}

absl::Status EtcdStateStore::PutRanking(const StoredRanking& r, uint64_t keep) {
  const std::string value =
      Encode({{"t", r.created_epoch_us}, {"reply", Bin(r.reply)}, {"cand", Bin(r.candidates)}});
  if (value.size() > kMaxBytesPerTxn) {
    oversized_[r.id] = value.size();
    while (oversized_.size() > kRecentRankings) oversized_.erase(oversized_.begin());
    return absl::ResourceExhaustedError(
        absl::StrCat("state_store: ranking ", r.id, " takes ", value.size(), " bytes, above the ",
                     kMaxBytesPerTxn, " one etcd write may hold: not kept"));
  }
  std::vector<EtcdOp> ops = {EtcdOp::Put(RankingKey(r.id), value)};
  kept_.push_back({r.id, r.created_epoch_us, value.size()});
  kept_bytes_ += value.size();
  max_ranking_id_ = std::max(max_ranking_id_, r.id);
  // Bounded in number, age and size: the oldest go first.
  const int64_t oldest_us = r.created_epoch_us - int64_t{options_.ranking_max_age_s} * 1000000;
  uint64_t cut = 0;
  while (kept_.size() > 1 && (kept_.size() > keep || kept_.front().created_us < oldest_us ||
                              kept_bytes_ > options_.max_ranking_bytes)) {
    cut = kept_.front().id;
    kept_bytes_ -= kept_.front().bytes;
    kept_.pop_front();
    // Each pruned key alone: a range delete from 0 would walk every
    // tombstone etcd keeps until it compacts.
    ops.push_back(EtcdOp::Delete(RankingKey(cut)));
  }
  if (cut > 0) {
    // Markers refuse only rankings below them: those at or below the oldest kept one go.
    for (auto it = markers_.begin(); it != markers_.end();) {
      if (it->second <= cut + 1) {
        ops.push_back(EtcdOp::Delete(Key("releases", it->first)));
        it = markers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  recent_[r.id] = r;
  while (recent_.size() > kRecentRankings) recent_.erase(recent_.begin());
  if (r.id >= ranking_block_end_) {
    // Reserve the next block before the id goes out (a sync write, once per block).
    const uint64_t end = r.id + kRankingBlock;
    ops.push_back(EtcdOp::Put(options_.prefix + "/meta/ranking_block", absl::StrCat(end)));
    if (absl::Status s = Enqueue(std::move(ops), true); !s.ok()) return s;
    ranking_block_end_ = end;
    return absl::OkStatus();
  }
  return Enqueue(std::move(ops), false);
}

absl::StatusOr<StoredRanking> EtcdStateStore::GetRanking(uint64_t id) {
  if (auto it = recent_.find(id); it != recent_.end()) {
    const bool kept =
        std::any_of(kept_.begin(), kept_.end(), [&](const KeptRanking& k) { return k.id == id; });
    if (kept) return it->second;
  }
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(RankingKey(id));
  if (!kvs.ok()) return kvs.status();
  if (kvs->empty()) {
    if (auto big = oversized_.find(id); big != oversized_.end()) {
      return absl::NotFoundError(absl::StrCat("ranking_id: ranking ", id, " was not kept: its ", big->second,
                                              " bytes are above the ", kMaxBytesPerTxn,
                                              " one etcd write may hold (fewer candidates or running jobs "
                                              "make it smaller)"));
    }
    return absl::NotFoundError(
        absl::StrCat("ranking_id: ranking ", id, " is unknown (never made or pruned)"));
  }
  const json v = Decode((*kvs)[0].value);
  if (v.is_discarded())
    return absl::InternalError(absl::StrCat("state_store: ranking ", id, " does not decode"));
  return StoredRanking{id, IntOf(v, "t"), BinOf(v, "reply"), BinOf(v, "cand")};
}

absl::StatusOr<uint64_t> EtcdStateStore::MaxRankingId() { return max_ranking_id_; }

std::vector<EtcdOp> EtcdStateStore::LinkScoreOps(const LinkScoreSample& s) {
  const uint64_t seq = next_seq_++;
  std::vector<EtcdOp> ops = {EtcdOp::Put(
      LinkScoreKey(s.link, seq),
      Encode({{"t", s.at_epoch_us}, {"s", s.score}, {"e", s.excess}, {"src", s.source}}))};
  std::deque<uint64_t>& seqs = link_seqs_[s.link];
  seqs.push_back(seq);
  while (keep_link_scores_ > 0 && seqs.size() > keep_link_scores_) {
    ops.push_back(EtcdOp::Delete(LinkScoreKey(s.link, seqs.front())));
    seqs.pop_front();
  }
  return ops;
}

absl::Status EtcdStateStore::Commit(const std::vector<StoredPlacement>& placements,
                                    const std::vector<StoredOffset>& offsets,
                                    const std::vector<LinkScoreSample>& samples,
                                    const CommittedInputs& inputs) {
  std::vector<EtcdOp> ops;
  for (const StoredPlacement& p : placements) {
    ops.push_back(
        EtcdOp::Put(Key("placements", p.job), Encode({{"c", p.candidate},
                                                      {"r", static_cast<int64_t>(p.ranking_id)},
                                                      {"l", Bin(p.links)},
                                                      {"t", p.committed_epoch_us},
                                                      {"s", Bin(p.servers)}})));
  }
  if (!placements.empty()) {
    ops.push_back(EtcdOp::Put(options_.prefix + "/meta/placement_version",
                              absl::StrCat(placement_version_ + 1)));
  }
  for (const StoredOffset& o : offsets) {
    ops.push_back(
        EtcdOp::Put(Key("offsets", o.job), Encode({{"o", o.origin_epoch_us},
                                                   {"p", int64_t{o.period_us}},
                                                   {"s", int64_t{o.shift_us}},
                                                   {"v", static_cast<int64_t>(o.version)}})));
  }
  // Samples beyond what one txn holds are kept in memory's count only for
  // the newest; older samples of a large commit would be pruned at once anyway.
  std::map<std::string, std::deque<uint64_t>> saved_seqs = link_seqs_;
  const uint64_t saved_next = next_seq_;
  for (const LinkScoreSample& s : samples) {
    std::vector<EtcdOp> more = LinkScoreOps(s);
    ops.insert(ops.end(), more.begin(), more.end());
  }
  for (const auto& [job, profile] : inputs.profiles)
    ops.push_back(EtcdOp::Put(Key("committed_profiles", job), profile));
  for (const auto& [link, capacity] : inputs.capacities_gbps) {
    ops.push_back(EtcdOp::Put(Key("committed_links", link), Encode({{"c", capacity}})));
  }
  absl::Status s;
  if (ops.size() > kMaxOpsPerTxn * 8) {
    s = absl::ResourceExhaustedError(absl::StrCat(
        "state_store: a commit of ", ops.size(), " writes is more than one etcd txn holds (",
        kMaxOpsPerTxn * 8, "; etcd's --max-txn-ops must allow them)"));
  } else {
    s = Enqueue(std::move(ops), true);
  }
  if (!s.ok()) {
    link_seqs_ = std::move(saved_seqs);
    next_seq_ = saved_next;
    return s;
  }
  if (!placements.empty()) ++placement_version_;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> EtcdStateStore::Release(
    const std::vector<std::string>& jobs, const ReleaseExtras& extras) {
  std::vector<EtcdOp> ops;
  std::vector<std::string> released;
  for (const std::string& job : jobs) {
    bool held = false;
    for (const char* table : {"placements", "offsets"}) {
      absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(Key(table, job));
      if (!kvs.ok()) return kvs.status();
      held = held || !kvs->empty();
      ops.push_back(EtcdOp::Delete(Key(table, job)));
    }
    ops.push_back(EtcdOp::Delete(Key("committed_profiles", job)));
    ops.push_back(EtcdOp::Delete(
        absl::StrCat(options_.prefix, "/profiles/", extras.job_profile_kind, "/", Escape(job))));
    if (held) released.push_back(job);
    if (extras.next_ranking_id > 0) {
      ops.push_back(EtcdOp::Put(Key("releases", job), absl::StrCat(extras.next_ranking_id)));
    }
  }
  for (const std::string& link : extras.unloaded_links) {
    const std::string scores = absl::StrCat(options_.prefix, "/link_scores/", Escape(link), "/");
    ops.push_back(EtcdOp::Delete(scores, EtcdClient::PrefixEnd(scores)));
    ops.push_back(EtcdOp::Delete(Key("committed_links", link)));
  }
  if (!released.empty()) {
    ops.push_back(EtcdOp::Put(options_.prefix + "/meta/placement_version",
                              absl::StrCat(placement_version_ + 1)));
  }
  if (absl::Status s = Enqueue(std::move(ops), true); !s.ok()) return s;
  if (!released.empty()) ++placement_version_;
  for (const std::string& link : extras.unloaded_links) link_seqs_.erase(link);
  if (extras.next_ranking_id > 0) {
    for (const std::string& job : jobs) markers_[job] = extras.next_ranking_id;
  }
  return released;
}

absl::StatusOr<std::map<std::string, uint64_t>> EtcdStateStore::LoadReleaseMarkers() {
  const std::string prefix = options_.prefix + "/releases/";
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(prefix, {EtcdClient::PrefixEnd(prefix)});
  if (!kvs.ok()) return kvs.status();
  std::map<std::string, uint64_t> out;
  for (const EtcdKv& kv : *kvs) out[Unescape(NameAfter(kv.key, prefix))] = ParseU64(kv.value);
  return out;
}

absl::StatusOr<uint64_t> EtcdStateStore::PlacementVersion() { return placement_version_; }

absl::StatusOr<CommittedInputs> EtcdStateStore::LoadCommittedInputs() {
  CommittedInputs out;
  const std::string profiles = options_.prefix + "/committed_profiles/";
  absl::StatusOr<std::vector<EtcdKv>> kvs =
      client_->Range(profiles, {EtcdClient::PrefixEnd(profiles)});
  if (!kvs.ok()) return kvs.status();
  for (const EtcdKv& kv : *kvs) out.profiles[Unescape(NameAfter(kv.key, profiles))] = kv.value;
  const std::string links = options_.prefix + "/committed_links/";
  kvs = client_->Range(links, {EtcdClient::PrefixEnd(links)});
  if (!kvs.ok()) return kvs.status();
  for (const EtcdKv& kv : *kvs) {
    const json v = Decode(kv.value);
    if (v.is_discarded()) {
      spdlog::warn("phasord: state_store: {} does not decode; ignored", kv.key);
      continue;
    }
    out.capacities_gbps[Unescape(NameAfter(kv.key, links))] = DoubleOf(v, "c");
  }
  return out;
}

absl::StatusOr<std::vector<StoredOffset>> EtcdStateStore::LoadOffsets(std::vector<BadRow>* bad) {
  const std::string prefix = options_.prefix + "/offsets/";
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(prefix, {EtcdClient::PrefixEnd(prefix)});
  if (!kvs.ok()) return kvs.status();
  std::vector<StoredOffset> out;
  for (const EtcdKv& kv : *kvs) {
    const std::string job = Unescape(NameAfter(kv.key, prefix));
    const json v = Decode(kv.value);
    std::string why;
    int64_t period = 0, shift = 0, version = 0;
    if (v.is_discarded() || !v.is_object()) {
      why = "does not decode as an offset";
    } else {
      period = IntOf(v, "p");
      shift = IntOf(v, "s");
      version = IntOf(v, "v");
      why = WhyStoredOffsetIsBad(period, shift, version);
    }
    if (!why.empty()) {
      if (bad != nullptr) bad->push_back({"offsets", job, why});
      continue;
    }
    out.push_back({job, IntOf(v, "o"), static_cast<uint32_t>(period), static_cast<uint32_t>(shift),
                   static_cast<uint64_t>(version)});
  }
  return out;
}

absl::StatusOr<std::vector<StoredPlacement>> EtcdStateStore::LoadPlacements() {
  const std::string prefix = options_.prefix + "/placements/";
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(prefix, {EtcdClient::PrefixEnd(prefix)});
  if (!kvs.ok()) return kvs.status();
  std::vector<StoredPlacement> out;
  for (const EtcdKv& kv : *kvs) {
    const std::string job = Unescape(NameAfter(kv.key, prefix));
    const json v = Decode(kv.value);
    if (v.is_discarded() || !v.is_object()) {
      // Left to the service's checks: links that do not parse quarantine it.
      out.push_back({job, "", 0, std::string("\xff", 1), 0, ""});
      continue;
    }
    out.push_back({job, StrOf(v, "c"), static_cast<uint64_t>(IntOf(v, "r")), BinOf(v, "l"),
                   IntOf(v, "t"), BinOf(v, "s")});
  }
  return out;
}

absl::Status EtcdStateStore::PutProfile(const StoredProfile& p) {
  return Enqueue(
      {EtcdOp::Put(absl::StrCat(options_.prefix, "/profiles/", p.kind, "/", Escape(p.subject)),
                   Encode({{"u", Bin(p.update)}, {"t", p.updated_epoch_us}}))},
      false);
}

absl::StatusOr<std::vector<StoredProfile>> EtcdStateStore::LoadProfiles() {
  const std::string prefix = options_.prefix + "/profiles/";
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(prefix, {EtcdClient::PrefixEnd(prefix)});
  if (!kvs.ok()) return kvs.status();
  std::vector<StoredProfile> out;
  for (const EtcdKv& kv : *kvs) {
    const std::string rest = NameAfter(kv.key, prefix);
    const size_t slash = rest.find('/');
    int kind = 0;
    const json v = Decode(kv.value);
    if (slash == std::string::npos || !absl::SimpleAtoi(rest.substr(0, slash), &kind) ||
        v.is_discarded()) {
      spdlog::warn("phasord: state_store: {} does not decode; ignored", kv.key);
      continue;
    }
    out.push_back({kind, Unescape(rest.substr(slash + 1)), BinOf(v, "u"), IntOf(v, "t")});
  }
  std::sort(out.begin(), out.end(), [](const StoredProfile& a, const StoredProfile& b) {
    return std::tie(a.kind, a.subject) < std::tie(b.kind, b.subject);
  });
  return out;
}

absl::Status EtcdStateStore::AddLinkScore(const LinkScoreSample& sample) {
  return Enqueue(LinkScoreOps(sample), false);
}

absl::StatusOr<std::vector<LinkScoreSample>> EtcdStateStore::LinkScoreHistory(
    const std::string& link, int limit) {
  Flush();  // what was queued is read back too
  const std::string prefix = absl::StrCat(options_.prefix, "/link_scores/", Escape(link), "/");
  EtcdRangeOptions o{EtcdClient::PrefixEnd(prefix)};
  o.limit = limit;
  o.descending = true;
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(prefix, o);
  if (!kvs.ok()) return kvs.status();
  std::vector<LinkScoreSample> out;
  for (const EtcdKv& kv : *kvs) {
    const json v = Decode(kv.value);
    if (v.is_discarded()) continue;
    out.push_back({link, IntOf(v, "t"), DoubleOf(v, "s"), DoubleOf(v, "e"), StrOf(v, "src")});
  }
  return out;
}

absl::Status EtcdStateStore::Quarantine(const BadRow& row, int64_t at_epoch_us) {
  std::string key;
  if (row.table == "offsets" || row.table == "placements" || row.table == "committed_profiles" ||
      row.table == "committed_links") {
    key = Key(row.table, row.key);
  } else if (row.table == "profiles") {
    const size_t slash = row.key.find('/');
    if (slash == std::string::npos)
      return absl::InvalidArgumentError("quarantine: a profile key is KIND/SUBJECT");
    key = absl::StrCat(options_.prefix, "/profiles/", row.key.substr(0, slash), "/",
                       Escape(row.key.substr(slash + 1)));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("quarantine: no table '", row.table, "'"));
  }
  const uint64_t seq = next_seq_++;
  return Enqueue({EtcdOp::Put(absl::StrFormat("%s/quarantine/%020u", options_.prefix, seq),
                              Encode({{"table", row.table},
                                      {"key", row.key},
                                      {"reason", row.reason},
                                      {"t", at_epoch_us}})),
                  EtcdOp::Delete(key)},
                 true);
}

absl::StatusOr<std::vector<BadRow>> EtcdStateStore::LoadQuarantine() {
  const std::string prefix = options_.prefix + "/quarantine/";
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(prefix, {EtcdClient::PrefixEnd(prefix)});
  if (!kvs.ok()) return kvs.status();
  std::vector<BadRow> out;
  for (const EtcdKv& kv : *kvs) {
    const json v = Decode(kv.value);
    if (v.is_discarded()) continue;
    out.push_back({StrOf(v, "table"), StrOf(v, "key"), StrOf(v, "reason")});
  }
  return out;
}

}  // namespace phasor::daemon
