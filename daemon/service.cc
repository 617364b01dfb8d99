#include "daemon/service.h"

#include <chrono>
#include <cmath>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "placer/candidate_routing.h"
#include "placer/candidates.h"
#include "placer/packing.h"
#include "placer/traffic_profile.h"
#include "protocol/convert.h"
#include "protocol/framing.h"
#include "protocol/status.h"
#include "spdlog/spdlog.h"
#include "topology/topology_file.h"

namespace phasor::daemon {

Clock SystemClock() {
  return [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
}

namespace {

// A stored placement's servers: empty (none kept), or a ServerList of
// non-empty names.
absl::Status CheckStoredServers(const std::string& bytes) {
  v1::ServerList servers;
  if (!servers.ParseFromString(bytes)) return absl::InvalidArgumentError("servers: does not parse as ServerList");
  for (int i = 0; i < servers.servers_size(); ++i) {
    if (servers.servers(i).empty()) return absl::InvalidArgumentError(absl::StrCat("servers[", i, "]: is empty"));
  }
  return absl::OkStatus();
}

// A store failure as the service answers it: UNAVAILABLE as the store said
// it (the etcd store: another phasord leads, or etcd is away: retry, there
// or later); anything else Internal.
absl::Status StoreFailure(const absl::Status& s) {
  if (protocol::WireCode(s) == v1::Error::UNAVAILABLE) return s;
  return absl::InternalError(s.message());
}

// What the ranking policy did to a solved ranking, from the reply: "none"
// (nothing ranked), "off" (policy off), "host-first" (the first ranked is
// the earliest ranked candidate of the request) or "overtaken".
std::string PolicyOutcome(const PreparedRanking& prepared, const v1::RankReply& reply) {
  if (reply.ranked_size() == 0) return "none";
  if (prepared.policy.min_gain < 0) return "off";
  std::set<std::string> ranked;
  for (const v1::RankedCandidate& c : reply.ranked()) ranked.insert(c.candidate());
  for (const placer::Candidate& c : prepared.request.candidates) {
    if (ranked.contains(c.id)) return c.id == reply.ranked(0).candidate() ? "host-first" : "overtaken";
  }
  return "host-first";
}

// What Commit reads of a ranking: each ranked candidate's shifts and its
// links' scores. A store of a few KiB per ranking instead of the whole
// reply (every link's jobs and rounding errors: 170 KiB for 8 candidates
// among 20 running jobs), written on every Rank. `reply` is ToProto of
// `ranking` (the same candidates in the same order), with or without links.
// A link result every candidate shares (a link only pinned running jobs
// load: at 10,000 servers 8,000 of them) is kept once, in a last entry with
// no candidate id (kSharedLinks; ids are never empty), and Commit adds it to
// the chosen candidate's. On an arena: its link messages made and freed at once.
constexpr char kSharedLinks[] = "";
std::string CommitView(const v1::RankReply& reply, const placer::Ranking& ranking) {
  google::protobuf::Arena arena;
  v1::RankReply& view = *google::protobuf::Arena::CreateMessage<v1::RankReply>(&arena);
  view.set_ranking_id(reply.ranking_id());
  absl::flat_hash_map<const placer::LinkResult*, size_t> holders;
  if (ranking.ranked.size() > 1) {
    for (const placer::RankedCandidate& c : ranking.ranked) {
      for (size_t l = 0; l < c.links.size(); ++l) ++holders[c.links.held(l).get()];
    }
  }
  auto shared = [&](const placer::LinkResult* l) {
    auto it = holders.find(l);
    return it != holders.end() && it->second == ranking.ranked.size();
  };
  auto add = [](v1::RankedCandidate& to, const placer::LinkResult& l) {
    v1::LinkResult& link = *to.add_links();
    link.set_id(l.id);
    link.set_score(l.score);
  };
  for (int i = 0; i < reply.ranked_size(); ++i) {
    const v1::RankedCandidate& c = reply.ranked(i);
    v1::RankedCandidate& kept = *view.add_ranked();
    kept.set_candidate(c.candidate());
    kept.set_score(c.score());
    *kept.mutable_shifts() = c.shifts();
    const placer::LinkResults& links = ranking.ranked[static_cast<size_t>(i)].links;
    for (size_t l = 0; l < links.size(); ++l) {
      if (!shared(links.held(l).get())) add(kept, links[l]);
    }
  }
  if (!ranking.ranked.empty()) {
    v1::RankedCandidate* common = nullptr;
    const placer::LinkResults& links = ranking.ranked.front().links;
    for (size_t l = 0; l < links.size(); ++l) {
      if (!shared(links.held(l).get())) continue;
      if (common == nullptr) {
        common = view.add_ranked();
        common->set_candidate(kSharedLinks);
      }
      add(*common, links[l]);
    }
  }
  return view.SerializeAsString();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Service>> Service::Open(const DaemonOptions& options, Metrics* metrics, Clock clock,
                                                       OffsetPublisher publish, std::unique_ptr<StateStore> store) {
  if (absl::Status s = ValidateDaemonOptions(options); !s.ok()) return s;
  std::unique_ptr<Service> service(new Service(options, metrics, std::move(clock), std::move(publish)));
  if (absl::Status s = service->Restore(std::move(store)); !s.ok()) return s;
  return service;
}

absl::Status Service::Restore(std::unique_ptr<StateStore> given) {
  started_us_ = clock_();
  if (given) {
    store_ = std::move(given);
  } else {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        StateStore::Open(options_.state_path, options_.sqlite_synchronous);
    if (!store.ok()) return store.status();
    store_ = *std::move(store);
  }
  store_->KeepLinkScoresPerLink(options_.keep_link_scores);
  absl::StatusOr<int64_t> epoch = store_->EpochOr(started_us_);
  if (!epoch.ok()) return epoch.status();
  epoch_us_ = *epoch;
  absl::StatusOr<uint64_t> max_id = store_->MaxRankingId();
  if (!max_id.ok()) return max_id.status();
  next_ranking_id_ = *max_id + 1;
  // Rows that no longer validate are quarantined, each with one log line and
  // a count, and phasord serves on without them.
  std::vector<BadRow> bad;
  absl::StatusOr<std::vector<StoredOffset>> offsets = store_->LoadOffsets(&bad);
  if (!offsets.ok()) return offsets.status();
  for (const StoredOffset& o : *offsets) offsets_[o.job] = o;
  absl::StatusOr<std::vector<StoredPlacement>> placements = store_->LoadPlacements();
  if (!placements.ok()) return placements.status();
  for (const StoredPlacement& p : *placements) {
    if (v1::LinkShares shares; !shares.ParseFromString(p.links)) {
      bad.push_back({"placements", p.job, "links: does not parse as LinkShares"});
    } else if (absl::Status s = CheckStoredServers(p.servers); !s.ok()) {
      bad.push_back({"placements", p.job, std::string(s.message())});
    } else {
      ++placements_;
      std::set<std::string>& links = job_links_[p.job];
      for (const auto& [link, share] : shares.shares()) links.insert(link);
    }
  }
  absl::StatusOr<std::map<std::string, uint64_t>> markers = store_->LoadReleaseMarkers();
  if (!markers.ok()) return markers.status();
  release_markers_ = *std::move(markers);
  absl::StatusOr<uint64_t> version = store_->PlacementVersion();
  if (!version.ok()) return version.status();
  placement_version_ = *version;
  absl::StatusOr<std::vector<StoredProfile>> profiles = store_->LoadProfiles();
  if (!profiles.ok()) return profiles.status();
  for (const StoredProfile& p : *profiles) {
    v1::ProfileUpdate update;
    absl::Status valid = update.ParseFromString(p.update)
                             ? CheckProfileUpdate(update)
                             : absl::InvalidArgumentError("update_msg: does not parse as ProfileUpdate");
    if (!valid.ok()) {
      bad.push_back({"profiles", absl::StrCat(p.kind, "/", p.subject), std::string(valid.message())});
    } else if (p.kind == v1::ProfileUpdate::JOB) {
      job_profiles_[p.subject] = update;
    }
  }
  absl::StatusOr<CommittedInputs> committed = store_->LoadCommittedInputs();
  if (!committed.ok()) return committed.status();
  for (const auto& [job, bytes] : committed->profiles) {
    v1::TrafficProfile profile;
    if (!profile.ParseFromString(bytes)) {
      bad.push_back({"committed_profiles", job, "profile: does not parse as TrafficProfile"});
      continue;
    }
    placer::TrafficProfile p = protocol::FromProto(profile);
    if (absl::Status s = placer::ValidateProfile(p); !s.ok()) {
      bad.push_back({"committed_profiles", job, absl::StrCat("profile: ", s.message())});
      continue;
    }
    up_start_us_[job] = UpStartUs(p);
    request_profiles_[job] = std::move(p);
  }
  for (const auto& [link, capacity] : committed->capacities_gbps) {
    if (!(std::isfinite(capacity) && capacity > 0)) {
      bad.push_back({"committed_links", link, absl::StrCat("capacity_gbps: ", capacity, " is not a positive number")});
      continue;
    }
    link_capacity_gbps_[link] = capacity;
  }
  for (const BadRow& row : bad) {
    spdlog::warn("phasord: state_path: quarantined {} row '{}': {}", row.table, row.key, row.reason);
    metrics_->Increment("phasord_quarantined_rows_total", {{"table", row.table}});
    if (absl::Status s = store_->Quarantine(row, started_us_); !s.ok()) return s;
  }

  if (!options_.topology_path.empty()) {
    absl::StatusOr<topology::Topology> fabric = topology::LoadTopologyFile(options_.topology_path);
    if (!fabric.ok()) {
      return absl::Status(fabric.status().code(), absl::StrCat("topology_path: ", fabric.status().message()));
    }
    fabric_ = std::make_unique<topology::Topology>(*std::move(fabric));
    fabric_router_ = std::make_unique<topology::Router>(*fabric_);
  }
  metrics_->Set("phasord_epoch_us", {}, static_cast<double>(epoch_us_));
  metrics_->Set("phasord_jobs", {}, static_cast<double>(offsets_.size()));
  spdlog::info("phasord: epoch {} us; {} offsets, {} placements, {} job profiles restored; next ranking {}",
               epoch_us_, offsets_.size(), placements_, job_profiles_.size(), next_ranking_id_);
  return absl::OkStatus();
}

absl::StatusOr<PreparedRanking> Service::PrepareRank(const v1::RankRequest& req, SteadyTime arrival) {
  const uint64_t id = req.request_id();
  auto limit = [](const char* field, int n, uint32_t max) -> absl::Status {
    if (static_cast<uint32_t>(n) <= max) return absl::OkStatus();
    return absl::ResourceExhaustedError(absl::StrCat(field, ": ", n, " entries exceed the limit of ", max));
  };
  if (!v1::RankRequest::ReplyDetail_IsValid(req.reply_detail())) {
    return absl::InvalidArgumentError(
        absl::StrCat("reply_detail: ", static_cast<int>(req.reply_detail()), " is not FULL (0) or ORDER (1)"));
  }
  for (absl::Status s : {limit("jobs", req.jobs_size(), options_.max_jobs_per_request),
                         limit("links", req.links_size(), options_.max_links_per_request),
                         limit("candidates", req.candidates_size(), options_.max_candidates_per_request)}) {
    if (!s.ok()) return s;
  }
  absl::StatusOr<placer::RankRequest> request =
      protocol::FromProto(req, [this](const std::string& job) -> std::optional<placer::TrafficProfile> {
        auto it = job_profiles_.find(job);
        if (it == job_profiles_.end()) return std::nullopt;
        return IterationFrame(protocol::ProfileFromUpdate(it->second));  // the agent's frame
      });
  if (!request.ok()) return request.status();
  // The committed placement as the running part, before the request's own
  // jobs (which keep their indices in req offset by `committed`).
  size_t committed = 0;
  if (req.running_committed()) {
    if (req.running().links_size() > 0 || req.running().servers_size() > 0) {
      return absl::InvalidArgumentError(
          "running_committed: the request also carries a running part (running.links or running.servers); send one "
          "or the other");
    }
    absl::StatusOr<const CommittedRunning*> running = CommittedRunningJobs();
    if (!running.ok()) return running.status();
    committed = protocol::PrependRunningJobs((*running)->jobs, (*running)->links, *request);
  }
  // The request as the host gave it; routing below may give a link a share
  // above 1 (two hops of one ring over it), which the ranker multiplies, as
  // `phasor rank --topology` does.
  if (absl::Status s = placer::ValidateRankRequest(*request); !s.ok()) return s;
  PreparedRanking prepared;
  const std::map<std::string, std::vector<std::string>> running_servers = request->running.servers;
  // The running part's servers routed once, for phasor's own candidates and
  // the candidates' routing both.
  std::optional<placer::RoutedRunning> routed_running;
  if (fabric_router_) routed_running = placer::RouteRunning(*fabric_router_, *request);
  if (!request->free_servers.empty()) {
    if (!fabric_) {
      return absl::FailedPreconditionError(
          "free_servers: phasord has no fabric to find their racks in (set topology_path: in its configuration)");
    }
    if (!packing_ || packing_->free_servers != request->free_servers) {
      absl::StatusOr<placer::PackingView> view = placer::PackingViewOf(*fabric_, request->free_servers);
      if (!view.ok()) return view.status();
      auto packing = std::make_unique<Packing>();
      packing->free_servers = request->free_servers;
      packing->view = *std::move(view);
      packing->counts = std::make_unique<placer::PackingCounts>(packing->view);
      packing_ = std::move(packing);
    }
    // phasor's own candidates beside the host's (placer/candidates.h), from
    // the servers it says are wholly free; then the host's packing kept
    // (placer/packing.h): no server-form candidate, the host's or phasor's,
    // may leave fewer whole free servers or racks than the host's first.
    placer::AddOwnCandidates(*fabric_, *fabric_router_, *request, &*routed_running);
    if (options_.ranking_policy.keep_packing) placer::KeepPacking(*packing_->counts, *request, prepared.set_aside);
  }
  // Server-form candidates become link shares by the ring traffic model over
  // the configured fabric (the semantics of `phasor rank --topology`);
  // without a fabric Rank() rejects them itself.
  if (fabric_router_) placer::RouteCandidates(*fabric_, *fabric_router_, *request, prepared.set_aside, &*routed_running);
  prepared.limits = options_.rank_limits;
  prepared.limits.max_candidates = options_.max_candidates_per_request;
  prepared.policy = options_.ranking_policy;
  // Over a limit the answer comes now, before the request is queued.
  if (absl::Status s = placer::CheckRankLimits(*request, prepared.limits); !s.ok()) return s;
  // A ranking's links get their capacities recorded when it is committed
  // (only the loaded links', so the map is bounded by the placements).
  prepared.time_ms = prepared.limits.deadline_ms;
  if (req.wait_ms() > 0) prepared.time_ms = std::min<uint64_t>(prepared.time_ms, req.wait_ms());
  prepared.deadline = arrival + std::chrono::milliseconds(std::min<uint64_t>(prepared.time_ms, uint64_t{1} << 40));
  for (int j = 0; j < req.jobs_size(); ++j) {
    if (!req.jobs(j).has_profile()) continue;
    const placer::Job& job = request->jobs[committed + static_cast<size_t>(j)];
    // A committed job's profile is part of what GetSnapshot reports.
    if (offsets_.contains(job.id)) ++committed_changes_;
    request_profiles_[job.id] = job.profile;
  }
  // The request as ranked (options aside): server-form candidates routed to
  // link shares, so that a commit records the links each job loads, and the
  // jobs' profiles and links' capacities, which a commit keeps.
  // The running jobs routed here (RouteCandidates moved their shares into
  // request->running.links) leave it for a moment: their entries are
  // appended serialized (StoredRunningEntries), as protobuf parses
  // concatenated serializations as one message, merged.
  const placer::RoutedRunning* routed =
      routed_running && routed_running->routed && routed_running->failed_job.empty() ? &*routed_running : nullptr;
  std::map<std::string, std::map<std::string, double>> routed_links;
  if (routed != nullptr) {
    for (const auto& [job, ring] : routed->rings) {
      if (auto node = request->running.links.extract(job)) routed_links.insert(std::move(node));
    }
  }
  google::protobuf::Arena arena;
  v1::RankRequest& as_ranked = *google::protobuf::Arena::CreateMessage<v1::RankRequest>(&arena);
  protocol::ToProto(*request, as_ranked);
  request->running.links.merge(routed_links);
  as_ranked.clear_options();
  // The servers of server-form candidates, in the rank order the router
  // chose, beside the routed links, so that a commit records where each job
  // runs (routing clears them).
  for (int i = 0; i < as_ranked.candidates_size(); ++i) {
    v1::Candidate& c = *as_ranked.mutable_candidates(i);
    for (const auto& [job, servers] : request->candidates[i].rank_order) {
      v1::ServerList& list = (*c.mutable_servers())[job];
      list.clear_servers();
      for (const std::string& server : servers) list.add_servers(server);
    }
  }
  for (const auto& [job, servers] : running_servers) {
    v1::ServerList& list = (*as_ranked.mutable_running()->mutable_servers())[job];
    list.clear_servers();
    for (const std::string& server : servers) list.add_servers(server);
  }
  prepared.request_id = id;
  prepared.reply_links = req.reply_detail() == v1::RankRequest::FULL;
  prepared.ranking_id = next_ranking_id_++;
  prepared.request = *std::move(request);
  prepared.candidates = as_ranked.SerializeAsString();
  if (routed != nullptr) prepared.candidates += StoredRunningEntries(*routed);
  return prepared;
}

std::string Service::StoredRunningEntries(const placer::RoutedRunning& routed) {
  std::string out;
  std::map<std::string, RunningEntry> entries;
  for (const auto& [job, ring] : routed.rings) {
    RunningEntry& entry = entries[job];
    if (auto kept = running_entries_.find(job); kept != running_entries_.end() && kept->second.ring == ring) {
      entry = std::move(kept->second);
    } else {
      v1::RankRequest one;
      v1::LinkShares& shares = (*one.mutable_running()->mutable_links())[job];
      for (const auto& [link, share] : ring->by_id) (*shares.mutable_shares())[link] = share;
      entry = {ring, one.SerializeAsString()};
    }
    out += entry.bytes;
  }
  running_entries_ = std::move(entries);
  return out;
}

absl::StatusOr<SolvedRanking> Service::Solve(const PreparedRanking& prepared, SteadyTime now) {
  const auto begin = std::chrono::steady_clock::now();
  // The request's time ran from its arrival; what it spent waiting for a
  // solver is gone. One whose client gave up is not ranked at all.
  if (now >= prepared.deadline) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        now - (prepared.deadline - std::chrono::milliseconds(prepared.time_ms)));
    return absl::ResourceExhaustedError(absl::StrCat(
        "deadline_ms: ranking ", prepared.ranking_id, " waited ", waited.count(), " ms for a solver, past its ",
        prepared.time_ms, " ms (limits.deadline_ms, or the request's wait_ms when shorter): not ranked"));
  }
  placer::RankLimits limits = prepared.limits;
  limits.deadline_ms = static_cast<uint64_t>(
      std::chrono::ceil<std::chrono::milliseconds>(prepared.deadline - now).count());
  placer::Ranking ranking;
  try {
    // PrepareRank checked the limits.
    absl::StatusOr<placer::Ranking> ranked = placer::RankWithinDeadline(prepared.request, limits);
    if (!ranked.ok()) return ranked.status();
    ranking = *std::move(ranked);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("ranking failed: ", e.what()));
  }
  // The host's order, the predicted gain and its confidence (SPEC 5), as in
  // `phasor simulate`; RecordRanking counts the outcome.
  const placer::PolicyDecision decision = placer::ApplyRankingPolicy(prepared.request, prepared.policy, ranking);
  spdlog::debug("phasord: ranking {}: policy {} (host's first '{}', first now '{}')", prepared.ranking_id,
                decision.reason, decision.host_first, decision.chosen);
  ranking.rejected.insert(ranking.rejected.end(), prepared.set_aside.begin(), prepared.set_aside.end());
  // An ORDER reply has no links; the commit view keeps their ids and scores.
  SolvedRanking solved;
  solved.reply = protocol::ToProto(ranking, prepared.request, prepared.reply_links);
  solved.reply.set_request_id(prepared.request_id);
  solved.reply.set_ranking_id(prepared.ranking_id);
  solved.commit_view = CommitView(solved.reply, ranking);
  solved.reply.set_solve_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  return solved;
}

absl::Status Service::RecordRanking(const PreparedRanking& prepared, const SolvedRanking& solved) {
  metrics_->ObserveSolveSeconds(solved.reply.solve_seconds());
  metrics_->Increment("phasord_policy_decisions_total", {{"decision", PolicyOutcome(prepared, solved.reply)}});
  StoredRanking stored{prepared.ranking_id, clock_(), solved.commit_view, prepared.candidates};
  absl::Status s = store_->PutRanking(stored, options_.keep_rankings);
  if (absl::IsResourceExhausted(s)) {
    // Too large for the store to keep (one etcd write): the host still gets
    // its order; a commit of it is NOT_FOUND saying why.
    spdlog::warn("phasord: {}", std::string(s.message()));
    metrics_->Increment("phasord_rankings_not_kept_total");
    return absl::OkStatus();
  }
  if (!s.ok()) {
    spdlog::error("phasord: cannot store ranking {}: {}", prepared.ranking_id, std::string(s.message()));
    return StoreFailure(s);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::RankReply> Service::Rank(const v1::RankRequest& request) {
  absl::StatusOr<PreparedRanking> prepared = PrepareRank(request);
  if (!prepared.ok()) return prepared.status();
  absl::StatusOr<SolvedRanking> solved = Solve(*prepared);
  if (!solved.ok()) return solved.status();
  if (absl::Status s = RecordRanking(*prepared, *solved); !s.ok()) return s;
  return std::move(solved->reply);
}

v1::OffsetUpdate Service::ToUpdate(const StoredOffset& o) const {
  v1::OffsetUpdate u;
  u.set_job(o.job);
  u.set_origin_epoch_us(o.origin_epoch_us);
  u.set_period_us(o.period_us);
  u.set_shift_us(o.shift_us);
  u.set_version(o.version);
  return u;
}

void Service::Publish(const StoredOffset& offset) {
  publish_(ToUpdate(offset));
  metrics_->Increment("phasord_offsets_published_total");
}

void Service::PublishAll() {
  for (const auto& [job, offset] : offsets_) Publish(offset);
}

absl::StatusOr<v1::CommitReply> Service::Commit(const v1::CommitPlacement& req) {
  if (absl::Status s = protocol::ValidateCommitPlacement(req); !s.ok()) return s;
  absl::StatusOr<StoredRanking> stored = store_->GetRanking(req.ranking_id());
  if (!stored.ok()) {
    if (absl::IsNotFound(stored.status())) return stored.status();
    return StoreFailure(stored.status());
  }
  v1::RankReply ranking;
  v1::RankRequest candidates;
  if (!ranking.ParseFromString(stored->reply) || !candidates.ParseFromString(stored->candidates)) {
    return absl::InternalError("stored ranking does not parse");
  }
  const v1::RankedCandidate* chosen = nullptr;
  const v1::RankedCandidate* shared_links = nullptr;  // CommitView's links every candidate has
  for (const v1::RankedCandidate& c : ranking.ranked()) {
    if (c.candidate() == req.candidate()) chosen = &c;
    if (c.candidate() == kSharedLinks) shared_links = &c;
  }
  if (chosen == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("candidate: '", req.candidate(), "' is not ranked in ranking ", req.ranking_id()));
  }
  // A ranking made before one of its jobs was released would bring the job
  // back (and pin the others around a placement that no longer exists).
  for (const v1::JobShift& s : chosen->shifts()) {
    auto marker = release_markers_.find(s.job());
    if (marker != release_markers_.end() && req.ranking_id() < marker->second) {
      return absl::FailedPreconditionError(absl::StrCat("ranking_id: ranking ", req.ranking_id(),
                                                        " was made before job '", s.job(),
                                                        "' was released; rank again"));
    }
  }
  const v1::Candidate* shares = nullptr;
  for (const v1::Candidate& c : candidates.candidates()) {
    if (c.id() == req.candidate()) shares = &c;
  }
  const int64_t now = clock_();
  std::vector<StoredPlacement> placements;
  std::vector<StoredOffset> offsets;
  std::vector<LinkScoreSample> samples;
  for (const v1::JobShift& s : chosen->shifts()) {
    StoredOffset o{s.job(), epoch_us_, s.period_us(), s.shift_us(), 1};
    auto old = offsets_.find(s.job());
    if (old != offsets_.end()) {
      o.version = old->second.version;
      if (old->second.period_us != o.period_us || old->second.shift_us != o.shift_us) ++o.version;
    }
    offsets.push_back(o);
    std::string links, servers;
    // The job's links and servers: the candidate's, or the running part's
    // common to every candidate.
    if (shares != nullptr) {
      const v1::RunningPlacement& running = candidates.running();
      if (auto it = shares->links().find(s.job()); it != shares->links().end()) {
        links = it->second.SerializeAsString();
      } else if (auto r = running.links().find(s.job()); r != running.links().end()) {
        links = r->second.SerializeAsString();
      }
      if (auto on = shares->servers().find(s.job()); on != shares->servers().end()) {
        servers = on->second.SerializeAsString();
      } else if (auto r = running.servers().find(s.job()); r != running.servers().end()) {
        servers = r->second.SerializeAsString();
      }
    }
    placements.push_back({s.job(), req.candidate(), req.ranking_id(), links, now, servers});
  }
  for (const v1::RankedCandidate* c : {chosen, shared_links}) {
    if (c == nullptr) continue;
    for (const v1::LinkResult& l : c->links()) samples.push_back({l.id(), now, l.score(), 1 - l.score(), "commit"});
  }
  // The committed jobs' profiles and links' capacities as the request gave
  // them (rankings stored before they were kept have none).
  std::set<std::string> committed_jobs, loaded_links;
  for (const StoredOffset& o : offsets) committed_jobs.insert(o.job);
  if (shares != nullptr) {
    for (const auto& [job, job_shares] : shares->links()) {
      for (const auto& [link, share] : job_shares.shares()) loaded_links.insert(link);
    }
    for (const auto& [job, job_shares] : candidates.running().links()) {
      for (const auto& [link, share] : job_shares.shares()) loaded_links.insert(link);
    }
  }
  CommittedInputs inputs;
  for (const v1::Job& job : candidates.jobs()) {
    if (job.has_profile() && committed_jobs.contains(job.id())) {
      inputs.profiles[job.id()] = job.profile().SerializeAsString();
    }
  }
  // Where each committed job's Up phase starts after its slot (the profile
  // it was ranked with, in the iteration frame), for the closed loop.
  std::map<std::string, uint32_t> up_start_us;
  for (const v1::Job& job : candidates.jobs()) {
    if (committed_jobs.contains(job.id())) up_start_us[job.id()] = UpStartUs(protocol::FromProto(job.profile()));
  }
  for (const v1::Link& link : candidates.links()) {
    if (loaded_links.contains(link.id())) inputs.capacities_gbps[link.id()] = link.capacity_gbps();
  }
  if (absl::Status s = store_->Commit(placements, offsets, samples, inputs); !s.ok()) {
    spdlog::error("phasord: commit of '{}' failed: {}", req.candidate(), std::string(s.message()));
    return StoreFailure(s);
  }
  if (!placements.empty()) ++placement_version_;
  ++committed_changes_;
  v1::CommitReply reply;
  reply.set_request_id(req.request_id());
  for (const auto& [job, lead] : up_start_us) up_start_us_[job] = lead;
  for (const StoredPlacement& p : placements) {
    std::set<std::string>& links = job_links_[p.job];
    links.clear();
    if (v1::LinkShares loaded; loaded.ParseFromString(p.links)) {
      for (const auto& [link, share] : loaded.shares()) links.insert(link);
    }
  }
  for (const auto& [link, capacity] : inputs.capacities_gbps) link_capacity_gbps_[link] = capacity;
  for (const StoredOffset& o : offsets) {
    if (offsets_.count(o.job) == 0) ++placements_;
    offsets_[o.job] = o;
    Publish(o);
    *reply.add_offsets() = ToUpdate(o);
  }
  for (const LinkScoreSample& s : samples) {
    metrics_->Set("phasord_link_score", {{"link", s.link}, {"source", s.source}}, s.score);
    metrics_->Set("phasord_link_excess", {{"link", s.link}, {"source", s.source}}, s.excess);
  }
  metrics_->Set("phasord_jobs", {}, static_cast<double>(offsets_.size()));
  spdlog::info("phasord: committed candidate '{}' of ranking {} ({} jobs)", req.candidate(), req.ranking_id(),
               offsets.size());
  return reply;
}

absl::StatusOr<v1::OffsetUpdate> Service::GetOffset(const v1::GetOffset& req) const {
  if (req.job().empty()) return absl::InvalidArgumentError("job: must not be empty");
  if (absl::Status s = protocol::ValidateGetOffset(req); !s.ok()) return s;
  auto it = offsets_.find(req.job());
  if (it == offsets_.end()) return absl::NotFoundError(absl::StrCat("job: no offset for job '", req.job(), "'"));
  v1::OffsetUpdate reply = ToUpdate(it->second);
  reply.set_request_id(req.request_id());
  return reply;
}

v1::HealthReply Service::Health(const v1::Health& req) const {
  v1::HealthReply reply;
  reply.set_request_id(req.request_id());
  for (const std::string& v : protocol::SupportedVersions()) reply.add_versions(v);
  reply.set_epoch_us(epoch_us_);
  reply.set_jobs(offsets_.size());
  reply.set_placements(placements_);
  reply.set_uptime_seconds(static_cast<double>(clock_() - started_us_) / 1e6);
  return reply;
}

absl::StatusOr<v1::Snapshot> Service::GetSnapshot(const v1::GetSnapshot& req) const {
  absl::StatusOr<std::vector<StoredPlacement>> placements = store_->LoadPlacements();
  if (!placements.ok()) return absl::InternalError(placements.status().message());
  v1::Snapshot reply;
  reply.set_request_id(req.request_id());
  reply.set_epoch_us(epoch_us_);
  reply.set_placement_version(placement_version_);
  v1::RankRequest& placement = *reply.mutable_placement();
  v1::Candidate& committed = *placement.add_candidates();
  committed.set_id("committed");
  std::set<std::string> links;
  for (const StoredPlacement& p : *placements) {
    v1::LinkShares shares;
    v1::ServerList servers;
    if (!shares.ParseFromString(p.links) || !servers.ParseFromString(p.servers)) {
      return absl::InternalError(absl::StrCat("stored placement of job '", p.job, "' does not parse"));
    }
    // Where the job runs, whether or not its profile is known.
    if (servers.servers_size() > 0) (*committed.mutable_servers())[p.job] = std::move(servers);
    std::optional<placer::TrafficProfile> profile;
    if (auto it = job_profiles_.find(p.job); it != job_profiles_.end()) {
      profile = protocol::ProfileFromUpdate(it->second);
    } else if (auto r = request_profiles_.find(p.job); r != request_profiles_.end()) {
      profile = r->second;
    }
    if (!profile) {
      reply.add_jobs_without_profile(p.job);
      continue;
    }
    v1::Job& job = *placement.add_jobs();
    job.set_id(p.job);
    *job.mutable_profile() = protocol::ToProto(*profile);
    for (const auto& [link, share] : shares.shares()) links.insert(link);
    (*committed.mutable_links())[p.job] = std::move(shares);
    if (auto o = offsets_.find(p.job); o != offsets_.end()) *reply.add_offsets() = ToUpdate(o->second);
  }
  for (const std::string& link : links) {
    const std::optional<double> capacity = CapacityOf(link);
    if (!capacity) {
      reply.add_links_without_capacity(link);
      for (auto& [job, shares] : *committed.mutable_links()) shares.mutable_shares()->erase(link);
      continue;
    }
    v1::Link& l = *placement.add_links();
    l.set_id(link);
    l.set_capacity_gbps(*capacity);
  }
  return reply;
}

absl::Status CheckProfileUpdate(const v1::ProfileUpdate& update) {
  if (update.subject().empty()) return absl::InvalidArgumentError("subject: must not be empty");
  if (!(update.confidence() >= 0 && update.confidence() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("confidence: ", update.confidence(), " is not in 0..1"));
  }
  // The wire's ranges (protocol/convert.h): kind, source, the profile's.
  if (absl::Status s = protocol::ValidateProfileUpdate(update); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("profile of '", update.subject(), "': ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status Service::AcceptProfile(const v1::ProfileUpdate& update) {
  if (absl::Status s = CheckProfileUpdate(update); !s.ok()) return s;
  const placer::TrafficProfile profile = protocol::ProfileFromUpdate(update);
  if (update.confidence() < options_.min_profile_confidence) {
    metrics_->Increment("phasord_profiles_ignored_total", {{"reason", "low_confidence"}});
    return absl::OkStatus();
  }
  const int64_t now = clock_();
  if (absl::Status s = store_->PutProfile({update.kind(), update.subject(), update.SerializeAsString(), now}); !s.ok()) {
    spdlog::error("phasord: cannot store profile of '{}': {}", update.subject(), std::string(s.message()));
    return StoreFailure(s);
  }
  if (update.kind() == v1::ProfileUpdate::JOB) {
    metrics_->Increment("phasord_profiles_total", {{"kind", "job"}});
    job_profiles_[update.subject()] = update;
    ++committed_changes_;  // its profile, and a re-sent offset below
    auto it = offsets_.find(update.subject());
    if (update.has_t0_epoch_us() && it != offsets_.end() && it->second.period_us > 0) {
      const StoredOffset& o = it->second;
      // The probe's t0 is the start of an Up phase; the slot is the start of
      // an iteration: compare t0 with the slot plus the job's Up start.
      auto lead = up_start_us_.find(o.job);
      const uint32_t up_shift = static_cast<uint32_t>(
          (uint64_t{o.shift_us} + (lead != up_start_us_.end() ? lead->second : 0)) % o.period_us);
      const int64_t error = PhaseErrorUs(o.origin_epoch_us, o.period_us, up_shift, update.t0_epoch_us());
      metrics_->Set("phasord_phase_error_us", {{"job", o.job}}, static_cast<double>(error));
      if (options_.realign && realign_.ShouldRealign(o.job, error, now)) {
        // A new version: agents re-align on a changed offset only.
        StoredOffset resent = o;
        ++resent.version;
        if (absl::Status s = store_->Commit({}, {resent}, {}); !s.ok()) {
          spdlog::error("phasord: cannot store the re-sent offset of '{}': {}", o.job, std::string(s.message()));
          return StoreFailure(s);
        }
        it->second = resent;
        metrics_->Increment("phasord_realignments_total", {{"job", o.job}});
        spdlog::info("phasord: job '{}' is {} us off its slot: re-sending its offset (version {})", o.job, error,
                     resent.version);
        Publish(resent);
      }
    }
  } else {
    metrics_->Increment("phasord_profiles_total", {{"kind", "link"}});
    ScoreLinkProfile(update.subject(), profile);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::ReleaseReply> Service::Release(const v1::ReleasePlacement& req) {
  if (req.jobs().empty()) return absl::InvalidArgumentError("jobs: must not be empty");
  if (static_cast<uint32_t>(req.jobs_size()) > options_.max_jobs_per_request) {
    return absl::ResourceExhaustedError(
        absl::StrCat("jobs: ", req.jobs_size(), " entries exceed the limit of ", options_.max_jobs_per_request));
  }
  for (int i = 0; i < req.jobs_size(); ++i) {
    if (req.jobs(i).empty()) return absl::InvalidArgumentError(absl::StrCat("jobs[", i, "]: must not be empty"));
  }
  const std::set<std::string> named(req.jobs().begin(), req.jobs().end());
  // The links only released jobs load: their scores, capacities and series go too.
  std::set<std::string> still_loaded, unloaded;
  for (const auto& [job, links] : job_links_) {
    if (!named.contains(job)) still_loaded.insert(links.begin(), links.end());
  }
  for (const std::string& job : named) {
    auto it = job_links_.find(job);
    if (it == job_links_.end()) continue;
    for (const std::string& link : it->second) {
      if (!still_loaded.contains(link)) unloaded.insert(link);
    }
  }
  ReleaseExtras extras;
  extras.next_ranking_id = next_ranking_id_;
  extras.job_profile_kind = v1::ProfileUpdate::JOB;
  extras.unloaded_links.assign(unloaded.begin(), unloaded.end());
  absl::StatusOr<std::vector<std::string>> released =
      store_->Release(std::vector<std::string>(req.jobs().begin(), req.jobs().end()), extras);
  if (!released.ok()) {
    spdlog::error("phasord: release failed: {}", std::string(released.status().message()));
    return StoreFailure(released.status());
  }
  if (!released->empty()) ++placement_version_;
  ++committed_changes_;
  // Every named job, placed or not: a ranking made before now may not bring it back.
  for (const std::string& job : named) release_markers_[job] = next_ranking_id_;
  const uint64_t oldest_kept = next_ranking_id_ > options_.keep_rankings ? next_ranking_id_ - options_.keep_rankings : 0;
  std::erase_if(release_markers_, [&](const auto& m) { return m.second <= oldest_kept; });
  for (const std::string& job : named) {
    request_profiles_.erase(job);
    up_start_us_.erase(job);
    job_profiles_.erase(job);
    job_links_.erase(job);
    realign_.Forget(job);
    metrics_->Remove("phasord_phase_error_us", {{"job", job}});
    metrics_->Remove("phasord_realignments_total", {{"job", job}});
  }
  for (const std::string& link : unloaded) {
    link_capacity_gbps_.erase(link);
    for (const char* source : {"commit", "probe"}) {
      metrics_->Remove("phasord_link_score", {{"link", link}, {"source", source}});
      metrics_->Remove("phasord_link_excess", {{"link", link}, {"source", source}});
    }
  }
  v1::ReleaseReply reply;
  reply.set_request_id(req.request_id());
  for (const std::string& job : *released) {
    if (offsets_.erase(job) > 0 && placements_ > 0) --placements_;
    reply.add_released(job);
  }
  metrics_->Increment("phasord_released_total", {}, static_cast<double>(released->size()));
  metrics_->Set("phasord_jobs", {}, static_cast<double>(offsets_.size()));
  spdlog::info("phasord: released {} of {} named jobs", released->size(), req.jobs_size());
  return reply;
}

absl::StatusOr<const Service::CommittedRunning*> Service::CommittedRunningJobs() {
  if (committed_running_ && committed_running_->changes == committed_changes_) return committed_running_.get();
  absl::StatusOr<v1::Snapshot> snapshot = GetSnapshot(v1::GetSnapshot());
  if (!snapshot.ok()) return snapshot.status();
  auto built = std::make_unique<CommittedRunning>();
  absl::StatusOr<std::vector<protocol::RunningJob>> jobs = protocol::RunningJobsOfSnapshot(*snapshot, built->links);
  if (!jobs.ok()) {
    return absl::InternalError(absl::StrCat("running_committed: the committed placement does not convert: ",
                                            jobs.status().message()));
  }
  built->jobs = *std::move(jobs);
  built->changes = committed_changes_;
  committed_running_ = std::move(built);
  return committed_running_.get();
}

std::optional<double> Service::CapacityOf(const std::string& link) const {
  if (fabric_) {
    if (std::optional<topology::LinkIndex> l = fabric_->FindLink(link)) return fabric_->link(*l).capacity_gbps;
  }
  if (auto it = link_capacity_gbps_.find(link); it != link_capacity_gbps_.end()) return it->second;
  return std::nullopt;
}

void Service::ScoreLinkProfile(const std::string& link, const placer::TrafficProfile& profile) {
  const std::optional<double> capacity = CapacityOf(link);
  if (!capacity || *capacity <= 0) return;
  const MeasuredLinkScore measured = ScoreMeasuredLink(profile, *capacity);
  const LinkScoreSample sample{link, clock_(), measured.score, measured.excess, "probe"};
  if (absl::Status s = store_->AddLinkScore(sample); !s.ok()) {
    spdlog::error("phasord: cannot store link score of '{}': {}", link, std::string(s.message()));
  }
  metrics_->Set("phasord_link_score", {{"link", link}, {"source", "probe"}}, sample.score);
  metrics_->Set("phasord_link_excess", {{"link", link}, {"source", "probe"}}, sample.excess);
}

}  // namespace phasor::daemon
