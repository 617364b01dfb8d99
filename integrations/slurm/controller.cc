#include "integrations/slurm/controller.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "integrations/slurm/tree_candidates.h"
#include "nlohmann/json.hpp"
#include "placer/candidate_routing.h"
#include "placer/packing.h"
#include "placer/rank_json.h"
#include "protocol/convert.h"
#include "spdlog/spdlog.h"
#include "topology/topology_file.h"

namespace phasor::slurm {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

int64_t SystemNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The job id of a submission in the ranking: it has no Slurm id yet.
std::string SubmitJobId(const std::string& token) { return "submit-" + token; }

absl::StatusOr<placer::TrafficProfile> ProfileFromJson(const json& doc, const std::string& field) {
  absl::StatusOr<placer::TrafficProfile> p = placer::TrafficProfileFromJson(doc, field);
  if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("state file: ", p.status().message()));
  return p;
}

}  // namespace

std::string RankRequestToServerJson(const placer::RankRequest& running_once) {
  placer::RankRequest request = running_once;
  placer::MoveRunningIntoCandidates(request);
  ordered_json doc;
  doc["links"] = ordered_json::array();
  for (const placer::Link& l : request.links) doc["links"].push_back({{"id", l.id}, {"capacity_gbps", l.capacity_gbps}});
  doc["jobs"] = ordered_json::array();
  for (const placer::Job& j : request.jobs) {
    ordered_json job = {{"id", j.id}, {"profile", placer::TrafficProfileToJson(j.profile)}};
    if (j.pinned_shift_us) job["pinned_shift_us"] = *j.pinned_shift_us;
    doc["jobs"].push_back(std::move(job));
  }
  doc["candidates"] = ordered_json::array();
  for (const placer::Candidate& c : request.candidates) {
    ordered_json servers = ordered_json::object();
    for (const auto& [job, list] : c.servers) servers[job] = list;
    doc["candidates"].push_back({{"id", c.id}, {"servers", std::move(servers)}});
  }
  return doc.dump(2) + "\n";
}

absl::StatusOr<std::unique_ptr<SlurmController>> SlurmController::Create(SlurmControllerOptions options) {
  std::unique_ptr<SlurmController> c(new SlurmController(std::move(options)));
  if (absl::Status s = c->Init(); !s.ok()) return s;
  return c;
}

absl::Status SlurmController::Init() {
  if (options_.topology_path.empty()) return absl::InvalidArgumentError("topology_path: required");
  if (options_.phasord_endpoint.empty()) return absl::InvalidArgumentError("phasord_endpoint: required");
  if (options_.state_path.empty()) return absl::InvalidArgumentError("state_path: required");
  if (options_.submit_timeout_ms <= 0) return absl::InvalidArgumentError("submit_timeout_ms: must be positive");
  if (options_.lifecycle_timeout_ms <= 0) return absl::InvalidArgumentError("lifecycle_timeout_ms: must be positive");
  if (options_.max_candidates == 0) return absl::InvalidArgumentError("max_candidates: must be at least 1");
  if (options_.proposal_ttl_ms <= 0) return absl::InvalidArgumentError("proposal_ttl_ms: must be positive");
  if (!options_.clock) options_.clock = SystemNowUs;
  absl::StatusOr<topology::Topology> fabric = topology::LoadTopologyFile(options_.topology_path, options_.slurm_import);
  if (!fabric.ok()) {
    return absl::Status(fabric.status().code(), absl::StrCat("topology_path: ", fabric.status().message()));
  }
  fabric_ = std::make_unique<topology::Topology>(*std::move(fabric));
  router_ = std::make_unique<topology::Router>(*fabric_);
  absl::StatusOr<ProfileResolver> resolver = ProfileResolver::Create(options_.profiles);
  if (!resolver.ok()) return resolver.status();
  resolver_ = *std::move(resolver);
  for (auto [client, timeout] : {std::pair{&fast_, options_.submit_timeout_ms},
                                 {&slow_, options_.lifecycle_timeout_ms},
                                 {&poll_, options_.lifecycle_timeout_ms}}) {
    client::ClientOptions o;
    o.endpoint = options_.phasord_endpoint;
    o.timeout_ms = timeout;
    o.curve = options_.curve;
    absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
    if (!c.ok()) return absl::Status(c.status().code(), absl::StrCat("phasord_endpoint: ", c.status().message()));
    *client = *std::move(c);
  }
  rng_.seed(options_.token_seed != 0 ? options_.token_seed : std::random_device{}());
  return Load();
}

std::string SlurmController::NewToken() {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(rng_()),
                static_cast<unsigned long long>(rng_()));
  return buf;
}

absl::Status SlurmController::Save() const {
  ordered_json doc;
  doc["pending"] = ordered_json::object();
  for (const auto& [token, p] : pending_) {
    doc["pending"][token] = {
        {"nodes", p.nodes}, {"profile", placer::TrafficProfileToJson(p.profile)}, {"created_us", p.created_us}};
  }
  doc["placed"] = ordered_json::object();
  for (const auto& [job, p] : placed_) {
    doc["placed"][job] = {{"token", p.token}, {"nodes", p.nodes}, {"profile", placer::TrafficProfileToJson(p.profile)}};
  }
  doc["unreleased"] = unreleased_;
  const std::string tmp = options_.state_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump(1) << "\n";
    if (!out.flush()) return absl::UnavailableError(absl::StrCat("state_path: cannot write '", tmp, "'"));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, options_.state_path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("state_path: cannot rename to '", options_.state_path, "': ", ec.message()));
  return absl::OkStatus();
}

absl::Status SlurmController::Load() {
  std::ifstream in(options_.state_path);
  if (!in) return absl::OkStatus();  // a first start
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  const std::string where = absl::StrCat("state_path '", options_.state_path, "': ");
  if (doc.is_discarded() || !doc.is_object()) return absl::InvalidArgumentError(where + "not a JSON object");
  try {
    const json pending = doc.value("pending", json::object());
    const json placed = doc.value("placed", json::object());
    const json unreleased = doc.value("unreleased", json::array());
    for (const auto& [token, p] : pending.items()) {
      absl::StatusOr<placer::TrafficProfile> profile = ProfileFromJson(p.at("profile"), "pending." + token);
      if (!profile.ok()) return profile.status();
      pending_[token] = {p.at("nodes").get<std::vector<std::string>>(), *profile, p.at("created_us").get<int64_t>()};
    }
    for (const auto& [job, p] : placed.items()) {
      absl::StatusOr<placer::TrafficProfile> profile = ProfileFromJson(p.at("profile"), "placed." + job);
      if (!profile.ok()) return profile.status();
      placed_[job] = {p.at("token").get<std::string>(), p.at("nodes").get<std::vector<std::string>>(), *profile};
    }
    for (const json& j : unreleased) unreleased_.insert(j.get<std::string>());
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(where + e.what());
  }
  spdlog::info("phasor slurm: restored {} proposals and {} placed jobs from {}", pending_.size(), placed_.size(),
               options_.state_path);
  return absl::OkStatus();
}

void SlurmController::Route(placer::RankRequest& request, std::string& why) const {
  std::vector<placer::RejectedCandidate> unrouted;
  placer::RouteCandidates(*fabric_, *router_, request, unrouted);
  if (!unrouted.empty()) why = absl::StrCat(unrouted[0].candidate, ": ", unrouted[0].reason);
}

std::vector<client::RunningJob> SlurmController::RunningJobs() const {
  std::vector<client::RunningJob> running;
  for (const auto& [job, p] : placed_) {
    client::RunningJob r;
    r.id = job;
    auto observed = observed_profiles_.find(job);
    r.profile = observed != observed_profiles_.end() ? observed->second : p.profile;
    if (auto shift = shifts_us_.find(job); shift != shifts_us_.end()) r.shift_us = shift->second;
    r.servers = p.nodes;
    running.push_back(std::move(r));
  }
  return running;
}

absl::StatusOr<Proposal> SlurmController::Submit(const SubmitQuery& query) {
  std::lock_guard<std::mutex> lock(mu_);
  auto decline = [&](absl::Status s) {
    ++counters_.declined;
    return s;
  };
  if (query.nodes == 0) return decline(absl::InvalidArgumentError("nodes: must be at least 1"));
  absl::StatusOr<JobSpec> spec = ParseJobSpec(query.comment);
  if (!spec.ok()) return decline(spec.status());
  if (!have_state_) return decline(absl::FailedPreconditionError("no Slurm state polled yet"));
  absl::StatusOr<placer::TrafficProfile> profile = resolver_->Resolve(*spec, query.nodes);
  if (!profile.ok()) return decline(profile.status());

  const int64_t now = options_.clock();
  std::set<std::string> promised;
  for (const auto& [token, p] : pending_) {
    if (now - p.created_us < options_.proposal_ttl_ms * 1000) promised.insert(p.nodes.begin(), p.nodes.end());
  }
  std::set<std::string> free;
  for (const SlurmNode& n : nodes_) {
    if (NodeIsFree(n) && !promised.contains(n.name)) free.insert(n.name);
  }
  absl::StatusOr<std::vector<NodeSet>> sets =
      EnumerateTreeCandidates(*fabric_, free, query.nodes, options_.max_candidates);
  if (!sets.ok()) return decline(sets.status());

  const std::string token = NewToken();
  const std::string self = SubmitJobId(token);
  placer::RankRequest request;
  // The running jobs' servers go once (routed once), common to every candidate.
  client::AddRunningJobs(RunningJobs(), request);
  request.jobs.push_back({self, *profile, std::nullopt});
  for (size_t i = 0; i < sets->size(); ++i) {
    placer::Candidate c;
    c.id = absl::StrCat("c", i);
    c.servers[self] = (*sets)[i].nodes;
    request.candidates.push_back(std::move(c));
  }
  // Slurm's own first choice (topology/tree's best fit) keeps its packing:
  // no candidate that leaves fewer idle nodes or idle leaves goes to phasord.
  if (options_.keep_packing) {
    // Idle nodes the fabric does not know hold no candidate: left out, as
    // EnumerateTreeCandidates leaves them.
    std::vector<std::string> known;
    for (const std::string& n : free) {
      if (std::optional<topology::NodeIndex> i = fabric_->FindNode(n); i && fabric_->IsServer(*i)) known.push_back(n);
    }
    absl::StatusOr<placer::PackingView> view = placer::PackingViewOf(*fabric_, known);
    if (!view.ok()) return decline(absl::InternalError(view.status().message()));
    std::vector<placer::RejectedCandidate> unpacked;
    placer::KeepPacking(*view, request, unpacked);
    for (const placer::RejectedCandidate& r : unpacked) {
      spdlog::debug("phasor slurm: candidate {} not ranked: {}", r.candidate, r.reason);
    }
    counters_.packing_dropped += unpacked.size();
  }
  if (!options_.dump_dir.empty()) {
    std::ofstream(options_.dump_dir + "/" + token + ".json") << RankRequestToServerJson(request);
  }
  const std::vector<placer::Candidate> as_servers = request.candidates;
  std::string unrouted;
  Route(request, unrouted);
  if (request.candidates.empty()) {
    return decline(absl::FailedPreconditionError(absl::StrCat("no candidate can be routed: ", unrouted)));
  }
  absl::StatusOr<client::RankResult> ranked = fast_->Rank(request);
  if (!ranked.ok()) return decline(absl::Status(ranked.status().code(), absl::StrCat("phasord: ", ranked.status().message())));
  if (ranked->ranking.ranked.empty()) {
    std::string why = ranked->ranking.rejected.empty() ? "no candidate" : ranked->ranking.rejected[0].reason;
    return decline(absl::FailedPreconditionError(absl::StrCat("phasord ranked no candidate: ", why)));
  }
  const placer::RankedCandidate& best = ranked->ranking.ranked[0];
  size_t index = 0;
  while (index < as_servers.size() && as_servers[index].id != best.candidate) ++index;
  if (index == as_servers.size()) {
    return decline(absl::InternalError(absl::StrCat("phasord ranked an unknown candidate '", best.candidate, "'")));
  }
  Proposal proposal{token, as_servers[index].servers.at(self), best.candidate, best.score,
                    static_cast<uint32_t>(as_servers.size())};
  pending_[token] = {proposal.nodes, *profile, now};
  // Drop proposals whose job never started.
  for (auto it = pending_.begin(); it != pending_.end();) {
    it = now - it->second.created_us >= options_.proposal_ttl_ms * 1000 ? pending_.erase(it) : std::next(it);
  }
  if (absl::Status s = Save(); !s.ok()) return decline(s);
  ++counters_.proposals;
  return proposal;
}

absl::Status SlurmController::Start(const std::string& token, const std::string& job_id,
                                    const std::vector<std::string>& nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (job_id.empty()) return absl::InvalidArgumentError("job: must not be empty");
  if (placed_.contains(job_id)) return absl::OkStatus();
  auto pending = pending_.find(token);
  if (pending == pending_.end()) return absl::NotFoundError(absl::StrCat("token: '", token, "' is unknown or expired"));
  const std::vector<std::string> where = nodes.empty() ? pending->second.nodes : nodes;
  placer::RankRequest request;
  client::AddRunningJobs(RunningJobs(), request);
  request.jobs.push_back({job_id, pending->second.profile, std::nullopt});
  placer::Candidate c;
  c.id = "slurm-" + job_id;
  c.servers[job_id] = where;
  request.candidates.push_back(c);
  std::string unrouted;
  Route(request, unrouted);
  if (request.candidates.empty()) return absl::FailedPreconditionError(absl::StrCat("cannot route the job: ", unrouted));
  absl::StatusOr<client::RankResult> ranked = slow_->Rank(request);
  if (!ranked.ok()) return absl::Status(ranked.status().code(), absl::StrCat("phasord: ", ranked.status().message()));
  if (ranked->ranking.ranked.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "phasord: ", ranked->ranking.rejected.empty() ? "no ranking" : ranked->ranking.rejected[0].reason));
  }
  absl::StatusOr<v1::CommitReply> committed = slow_->Commit(ranked->ranking_id, c.id);
  if (!committed.ok()) return absl::Status(committed.status().code(), absl::StrCat("phasord: ", committed.status().message()));
  for (const v1::OffsetUpdate& o : committed->offsets()) shifts_us_[o.job()] = o.shift_us();
  placed_[job_id] = {token, where, pending->second.profile};
  pending_.erase(pending);
  unreleased_.erase(job_id);
  ++counters_.starts;
  spdlog::info("phasor slurm: job {} started on {}: committed", job_id, absl::StrJoin(where, ","));
  return Save();
}

absl::Status SlurmController::ReleaseLocked(const std::vector<std::string>& jobs) {
  for (const std::string& j : jobs) {
    placed_.erase(j);
    shifts_us_.erase(j);
    observed_profiles_.erase(j);
    unreleased_.insert(j);
  }
  absl::Status saved = Save();
  if (unreleased_.empty()) return saved;
  absl::StatusOr<v1::ReleaseReply> released =
      slow_->Release(std::vector<std::string>(unreleased_.begin(), unreleased_.end()));
  if (!released.ok()) {
    spdlog::warn("phasor slurm: phasord did not take the release of {}: {} (retried)", absl::StrJoin(unreleased_, ","),
                 std::string(released.status().message()));
    return absl::Status(released.status().code(), absl::StrCat("phasord: ", released.status().message()));
  }
  counters_.releases += unreleased_.size();
  spdlog::info("phasor slurm: released {}", absl::StrJoin(unreleased_, ","));
  unreleased_.clear();
  return Save();
}

absl::Status SlurmController::End(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (job_id.empty()) return absl::InvalidArgumentError("job: must not be empty");
  if (!placed_.contains(job_id)) return absl::OkStatus();
  return ReleaseLocked({job_id});
}

absl::Status SlurmController::Refresh(const std::vector<SlurmNode>& nodes, const std::vector<SlurmJob>& jobs) {
  std::vector<std::string> to_release;
  absl::Status status = absl::OkStatus();
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_ = nodes;
    jobs_.clear();
    for (const SlurmJob& j : jobs) jobs_[j.id] = j;
    have_state_ = true;
    std::set<std::string> failed;
    for (const SlurmNode& n : nodes_) {
      if (NodeHasFailed(n)) failed.insert(n.name);
    }
    std::vector<std::string> gone;
    for (const auto& [job, p] : placed_) {
      auto it = jobs_.find(job);
      const bool lost_node =
          std::any_of(p.nodes.begin(), p.nodes.end(), [&](const std::string& n) { return failed.contains(n); });
      if (it == jobs_.end() || !JobIsRunning(it->second) || lost_node) {
        spdlog::info("phasor slurm: job {} is {}: withdrawing its placement", job,
                     lost_node ? "on a failed node" : it == jobs_.end() ? "gone" : it->second.state);
        gone.push_back(job);
      }
    }
    for (const std::string& j : gone) {
      placed_.erase(j);
      shifts_us_.erase(j);
      observed_profiles_.erase(j);
      unreleased_.insert(j);
    }
    if (!gone.empty()) status = Save();
    to_release.assign(unreleased_.begin(), unreleased_.end());
  }
  // phasord is asked without the lock held, so a slow phasord never delays
  // a submission beyond its own deadline.
  bool released = false;
  if (!to_release.empty()) {
    absl::StatusOr<v1::ReleaseReply> reply = poll_->Release(to_release);
    if (reply.ok()) {
      released = true;
    } else {
      spdlog::warn("phasor slurm: phasord did not take the release of {}: {} (retried)", absl::StrJoin(to_release, ","),
                   std::string(reply.status().message()));
      status = absl::Status(reply.status().code(), absl::StrCat("phasord: ", reply.status().message()));
    }
  }
  // The running jobs' latest profiles (the probes' when phasord has them) and shifts.
  absl::StatusOr<v1::Snapshot> snapshot = poll_->GetSnapshot();
  std::lock_guard<std::mutex> lock(mu_);
  if (released) {
    for (const std::string& j : to_release) unreleased_.erase(j);
    counters_.releases += to_release.size();
    spdlog::info("phasor slurm: released {}", absl::StrJoin(to_release, ","));
    if (absl::Status s = Save(); !s.ok() && status.ok()) status = s;
  }
  if (snapshot.ok()) {
    for (const v1::Job& j : snapshot->placement().jobs()) {
      if (placed_.contains(j.id()) && j.has_profile()) observed_profiles_[j.id()] = protocol::FromProto(j.profile());
    }
    for (const v1::OffsetUpdate& o : snapshot->offsets()) {
      if (placed_.contains(o.job())) shifts_us_[o.job()] = o.shift_us();
    }
  } else if (status.ok()) {
    status = absl::Status(snapshot.status().code(), absl::StrCat("phasord: ", snapshot.status().message()));
  }
  return status;
}

std::map<std::string, std::vector<std::string>> SlurmController::Placed() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [job, p] : placed_) out[job] = p.nodes;
  return out;
}

ControllerCounters SlurmController::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace phasor::slurm
