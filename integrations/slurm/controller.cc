#include "integrations/slurm/controller.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "placer/candidate_routing.h"
#include "placer/candidates.h"
#include "placer/packing.h"
#include "placer/rank_json.h"
#include "protocol/convert.h"
#include "spdlog/spdlog.h"
#include "topology/topology_file.h"

namespace phasor::slurm {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Less time than this left before the hook's deadline: no ranking (the job
// gets its token; phasor places it if it waits).
constexpr int64_t kMinRankUs = 5000;
// How long a gate (End) remembers that it counted a job's nodes as free.
constexpr int64_t kGateMemoryUs = 60'000'000;

int64_t SystemNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<placer::TrafficProfile> ProfileFromJson(const json& doc, const std::string& field) {
  absl::StatusOr<placer::TrafficProfile> p = placer::TrafficProfileFromJson(doc, field);
  if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("state file: ", p.status().message()));
  return p;
}

ordered_json RequestToJson(const JobRequest& r) {
  ordered_json j = ordered_json::object();
  for (auto [key, value] : {std::pair{"partition", &r.partition},
                            {"features", &r.features},
                            {"reservation", &r.reservation},
                            {"exc_nodes", &r.exc_nodes},
                            {"gres_per_node", &r.gres_per_node}}) {
    if (!value->empty()) j[key] = *value;
  }
  for (auto [key, value] : {std::pair{"min_nodes", r.min_nodes},
                            {"max_nodes", r.max_nodes},
                            {"num_tasks", r.num_tasks},
                            {"ntasks_per_node", r.ntasks_per_node},
                            {"cpus_per_task", r.cpus_per_task},
                            {"pn_min_cpus", r.pn_min_cpus}}) {
    if (value != 0) j[key] = value;
  }
  for (auto [key, value] : {std::pair{"mem_per_node_mb", r.mem_per_node_mb},
                            {"mem_per_cpu_mb", r.mem_per_cpu_mb},
                            {"tmp_disk_mb", r.tmp_disk_mb}}) {
    if (value != 0) j[key] = value;
  }
  return j;
}

JobRequest RequestFromJson(const json& j) {
  JobRequest r;
  if (!j.is_object()) return r;
  r.partition = j.value("partition", "");
  r.features = j.value("features", "");
  r.reservation = j.value("reservation", "");
  r.exc_nodes = j.value("exc_nodes", "");
  r.gres_per_node = j.value("gres_per_node", "");
  r.min_nodes = j.value("min_nodes", 0u);
  r.max_nodes = j.value("max_nodes", 0u);
  r.num_tasks = j.value("num_tasks", 0u);
  r.ntasks_per_node = j.value("ntasks_per_node", 0u);
  r.cpus_per_task = j.value("cpus_per_task", 0u);
  r.pn_min_cpus = j.value("pn_min_cpus", 0u);
  r.mem_per_node_mb = j.value("mem_per_node_mb", uint64_t{0});
  r.mem_per_cpu_mb = j.value("mem_per_cpu_mb", uint64_t{0});
  r.tmp_disk_mb = j.value("tmp_disk_mb", uint64_t{0});
  return r;
}

// The node count to give back to a job whose pin phasor takes away.
std::string NumNodesWithoutPin(const JobRequest& r, const ClusterState& cluster, const std::string& partition) {
  if (r.min_nodes > 0) return r.max_nodes > r.min_nodes ? absl::StrCat(r.min_nodes, "-", r.max_nodes) : absl::StrCat(r.min_nodes);
  // Tasks only: any number of nodes the partition has (Slurm raises the
  // minimum to what the tasks need).
  size_t nodes = cluster.nodes.size();
  for (const SlurmPartition& p : cluster.partitions) {
    if (p.name == partition) nodes = p.nodes.size();
  }
  return absl::StrCat("1-", std::max<size_t>(1, nodes));
}

bool AllIn(const std::vector<std::string>& nodes, const std::set<std::string>& set) {
  return std::all_of(nodes.begin(), nodes.end(), [&](const std::string& n) { return set.contains(n); });
}

// Pending jobs in Slurm's order of consideration: priority, then job id.
std::vector<const SlurmJob*> PendingInPriorityOrder(const ClusterState& cluster) {
  std::vector<const SlurmJob*> out;
  for (const SlurmJob& j : cluster.jobs) {
    if (j.state == "PENDING") out.push_back(&j);
  }
  auto id = [](const SlurmJob* j) {
    uint64_t v = 0;
    return absl::SimpleAtoi(j->id, &v) ? v : UINT64_MAX;
  };
  std::stable_sort(out.begin(), out.end(), [&](const SlurmJob* a, const SlurmJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return id(a) < id(b);
  });
  return out;
}

// The partitions a job of the queue waits in ("" means the default).
std::vector<std::string> PartitionsOf(const SlurmJob& job, const ClusterState& cluster) {
  std::vector<std::string> out = absl::StrSplit(job.partition, ',', absl::SkipEmpty());
  if (out.empty()) {
    for (const SlurmPartition& p : cluster.partitions) {
      if (p.is_default) out.push_back(p.name);
    }
  }
  return out;
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
  if (options_.slurm == nullptr) return absl::InvalidArgumentError("slurm: required");
  if (options_.submit_timeout_ms <= 0) return absl::InvalidArgumentError("submit_timeout_ms: must be positive");
  if (options_.lifecycle_timeout_ms <= 0) return absl::InvalidArgumentError("lifecycle_timeout_ms: must be positive");
  if (options_.replan_timeout_ms <= 0) return absl::InvalidArgumentError("replan_timeout_ms: must be positive");
  if (options_.max_candidates == 0) return absl::InvalidArgumentError("max_candidates: must be at least 1");
  if (options_.unbound_grace_ms <= 0) return absl::InvalidArgumentError("unbound_grace_ms: must be positive");
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
  for (auto [client, timeout] :
       {std::pair{&submit_client_, options_.submit_timeout_ms}, {&replan_client_, options_.replan_timeout_ms}}) {
    client::ClientOptions o;
    o.endpoint = options_.phasord_endpoint;
    o.timeout_ms = timeout;
    o.curve = options_.curve;
    absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
    if (!c.ok()) return absl::Status(c.status().code(), absl::StrCat("phasord_endpoint: ", c.status().message()));
    *client = *std::move(c);
  }
  rng_.seed(options_.token_seed != 0 ? options_.token_seed : std::random_device{}());
  if (absl::Status s = Load(); !s.ok()) return s;
  // The state file is written off every caller's path (a slow disk never
  // holds up a submission).
  writer_ = std::thread([this] { WriterLoop(); });
  return absl::OkStatus();
}

std::unique_ptr<client::Client> SlurmController::AcquireClient() {
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    if (!idle_clients_.empty()) {
      std::unique_ptr<client::Client> c = std::move(idle_clients_.back());
      idle_clients_.pop_back();
      return c;
    }
  }
  client::ClientOptions o;
  o.endpoint = options_.phasord_endpoint;
  o.timeout_ms = options_.lifecycle_timeout_ms;
  o.curve = options_.curve;
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
  return c.ok() ? *std::move(c) : nullptr;  // Init connected the same options once
}

void SlurmController::ReturnClient(std::unique_ptr<client::Client> c) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  if (c != nullptr && idle_clients_.size() < 8) idle_clients_.push_back(std::move(c));
}

std::string SlurmController::NewToken() {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(rng_()),
                static_cast<unsigned long long>(rng_()));
  return buf;
}

std::string SlurmController::StateJsonLocked() const {
  ordered_json doc;
  doc["proposals"] = ordered_json::object();
  for (const auto& [token, p] : proposals_) {
    ordered_json e = {{"job", p.job_id},
                      {"created_us", p.created_us},
                      {"request", RequestToJson(p.request)},
                      {"profile", placer::TrafficProfileToJson(p.profile)},
                      {"pin", p.pin},
                      {"num_nodes", p.num_nodes}};
    doc["proposals"][token] = std::move(e);
  }
  doc["placed"] = ordered_json::object();
  for (const auto& [job, p] : placed_) {
    doc["placed"][job] = {{"token", p.token}, {"nodes", p.nodes}, {"profile", placer::TrafficProfileToJson(p.profile)}};
  }
  doc["unreleased"] = unreleased_;
  return doc.dump(1) + "\n";
}

absl::Status SlurmController::WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return absl::UnavailableError(absl::StrCat("cannot write '", tmp, "'"));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot rename to '", path, "': ", ec.message()));
  return absl::OkStatus();
}

void SlurmController::Save() {
  std::lock_guard<std::mutex> lock(write_mu_);
  dirty_ = true;
  write_cv_.notify_one();
}

void SlurmController::QueueDump(const std::string& name, const placer::RankRequest& request) const {
  if (options_.dump_dir.empty()) return;
  std::lock_guard<std::mutex> lock(write_mu_);
  if (dumps_.size() < 256) dumps_.emplace_back(options_.dump_dir + "/" + name + ".json", request);
  write_cv_.notify_one();
}

void SlurmController::WriteOnce() {
  std::lock_guard<std::mutex> writing(writing_mu_);
  bool dirty;
  std::deque<std::pair<std::string, placer::RankRequest>> dumps;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    dirty = dirty_;
    dirty_ = false;
    dumps.swap(dumps_);
  }
  for (const auto& [path, request] : dumps) {
    if (absl::Status s = WriteAtomically(path, RankRequestToServerJson(request)); !s.ok()) {
      spdlog::warn("phasor slurm: dump_dir: {}", std::string(s.message()));
    }
  }
  if (!dirty) return;
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    text = StateJsonLocked();
  }
  if (absl::Status s = WriteAtomically(options_.state_path, text); !s.ok()) {
    spdlog::warn("phasor slurm: state_path: {} (retried at the next change)", std::string(s.message()));
  }
}

void SlurmController::WriterLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(write_mu_);
      write_cv_.wait(lock, [&] { return stop_writer_ || dirty_ || !dumps_.empty(); });
      if (stop_writer_ && !dirty_ && dumps_.empty()) return;
    }
    WriteOnce();
  }
}

void SlurmController::Flush() { WriteOnce(); }

SlurmController::~SlurmController() {
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    stop_writer_ = true;
    write_cv_.notify_one();
  }
  if (writer_.joinable()) writer_.join();
  WriteOnce();
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
    const json proposals = doc.value("proposals", json::object());
    const json placed = doc.value("placed", json::object());
    const json unreleased = doc.value("unreleased", json::array());
    for (const auto& [token, p] : proposals.items()) {
      absl::StatusOr<placer::TrafficProfile> profile = ProfileFromJson(p.at("profile"), "proposals." + token);
      if (!profile.ok()) return profile.status();
      Proposal& prop = proposals_[token];
      prop.job_id = p.at("job").get<std::string>();
      prop.created_us = p.at("created_us").get<int64_t>();
      prop.request = RequestFromJson(p.at("request"));
      prop.profile = *profile;
      prop.pin = p.at("pin").get<std::vector<std::string>>();
      prop.num_nodes = p.at("num_nodes").get<std::string>();
      if (!prop.job_id.empty()) token_of_[prop.job_id] = token;
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
  spdlog::info("phasor slurm: restored {} proposals and {} placed jobs from {}", proposals_.size(), placed_.size(),
               options_.state_path);
  return absl::OkStatus();
}

void SlurmController::Route(placer::RankRequest& request, std::string& why) const {
  std::vector<placer::RejectedCandidate> unrouted;
  placer::RouteCandidates(*fabric_, *router_, request, unrouted);
  if (!unrouted.empty()) why = absl::StrCat(unrouted[0].candidate, ": ", unrouted[0].reason);
}

std::vector<protocol::RunningJob> SlurmController::RunningJobs() const {
  std::vector<protocol::RunningJob> running;
  for (const auto& [job, p] : placed_) {
    protocol::RunningJob r;
    r.id = job;
    auto observed = observed_profiles_.find(job);
    r.profile = observed != observed_profiles_.end() ? observed->second : p.profile;
    if (auto shift = shifts_us_.find(job); shift != shifts_us_.end()) r.shift_us = shift->second;
    r.servers = p.nodes;
    running.push_back(std::move(r));
  }
  return running;
}

absl::StatusOr<SlurmController::Ranking> SlurmController::PrepareRanking(const std::string& self,
                                                                         const placer::TrafficProfile& profile,
                                                                         const std::set<std::string>& eligible,
                                                                         uint32_t count,
                                                                         const std::set<std::string>& free) {
  absl::StatusOr<std::vector<placer::ServerSet>> sets =
      placer::LeafCandidates(*fabric_, free, eligible, count, options_.max_candidates);
  if (!sets.ok()) return sets.status();
  Ranking r;
  r.self = self;
  // The running jobs' servers go once (routed once), common to every candidate.
  protocol::AddRunningJobs(RunningJobs(), r.request, self);
  r.request.jobs.push_back({self, profile, std::nullopt});
  for (size_t i = 0; i < sets->size(); ++i) {
    placer::Candidate c;
    c.id = absl::StrCat("c", i);
    c.servers[self] = (*sets)[i].servers;
    r.request.candidates.push_back(std::move(c));
  }
  // phasor's own candidates among the free nodes the job may use (its
  // partition, constraints...): the controller holds the fabric and routes
  // itself, so they are added here (phasord need not know the fabric).
  for (const std::string& n : free) {
    if (!eligible.contains(n)) continue;
    if (std::optional<topology::NodeIndex> i = fabric_->FindNode(n); i && fabric_->IsServer(*i)) {
      r.request.free_servers.push_back(n);
    }
  }
  placer::AddOwnCandidates(*fabric_, *router_, r.request);
  r.request.free_servers.clear();
  // Slurm's own first choice (topology/tree's best fit) keeps its packing:
  // no candidate that leaves fewer idle nodes or idle leaves goes to phasord.
  if (options_.keep_packing) {
    if (!packing_ || packing_->idle != free) {
      // Idle nodes the fabric does not know hold no candidate: left out, as
      // LeafCandidates leaves them.
      std::vector<std::string> known;
      for (const std::string& n : free) {
        if (std::optional<topology::NodeIndex> i = fabric_->FindNode(n); i && fabric_->IsServer(*i)) known.push_back(n);
      }
      absl::StatusOr<placer::PackingView> view = placer::PackingViewOf(*fabric_, known);
      if (!view.ok()) return absl::InternalError(view.status().message());
      packing_ = std::make_unique<Packing>();
      packing_->idle = free;
      packing_->view = *std::move(view);
      packing_->counts = std::make_unique<placer::PackingCounts>(packing_->view);
    }
    std::vector<placer::RejectedCandidate> unpacked;
    placer::KeepPacking(*packing_->counts, r.request, unpacked);
    for (const placer::RejectedCandidate& u : unpacked) {
      spdlog::debug("phasor slurm: candidate {} not ranked: {}", u.candidate, u.reason);
    }
    counters_.packing_dropped += unpacked.size();
  }
  r.as_servers = r.request.candidates;
  return r;
}

absl::StatusOr<SlurmController::Choice> SlurmController::Rank(Ranking& r, client::Client& phasord,
                                                              const std::string& dump_name) const {
  QueueDump(dump_name, r.request);
  std::string unrouted;
  Route(r.request, unrouted);
  if (r.request.candidates.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("no candidate can be routed: ", unrouted));
  }
  // The controller reads the order, the score and the ring order only.
  absl::StatusOr<client::RankResult> ranked = phasord.Rank(r.request, v1::RankRequest::ORDER);
  if (!ranked.ok()) return absl::Status(ranked.status().code(), absl::StrCat("phasord: ", ranked.status().message()));
  if (ranked->ranking.ranked.empty()) {
    std::string why = ranked->ranking.rejected.empty() ? "no candidate" : ranked->ranking.rejected[0].reason;
    return absl::FailedPreconditionError(absl::StrCat("phasord ranked no candidate: ", why));
  }
  const placer::RankedCandidate& best = ranked->ranking.ranked[0];
  // The nodes in the ring order phasor chose (its own candidates' servers).
  auto order = best.rank_order.find(r.self);
  for (const placer::Candidate& c : r.as_servers) {
    if (c.id != best.candidate) continue;
    const std::vector<std::string>& servers = c.servers.at(r.self);
    const bool ordered = order != best.rank_order.end() && order->second.size() == servers.size();
    return Choice{ordered ? order->second : servers, best.candidate, best.score,
                  static_cast<uint32_t>(r.as_servers.size())};
  }
  if (best.proposed_by_phasor && order != best.rank_order.end() && !order->second.empty()) {
    return Choice{order->second, best.candidate, best.score, static_cast<uint32_t>(r.as_servers.size())};
  }
  return absl::InternalError(absl::StrCat("phasord ranked an unknown candidate '", best.candidate, "'"));
}

SlurmController::FreeNodes SlurmController::FreeNodesLocked(const std::set<std::string>& freeing) const {
  // Nodes held only by jobs that end (their Epilog runs, the node is
  // released next) count as free soon; so do the nodes an Epilog names.
  std::map<std::string, std::pair<size_t, size_t>> jobs_on;  // node -> (jobs, ending jobs)
  for (const SlurmJob& j : cluster_.jobs) {
    if (!JobIsRunning(j) && j.state != "COMPLETING") continue;
    for (const std::string& n : j.nodes) {
      ++jobs_on[n].first;
      if (j.state == "COMPLETING") ++jobs_on[n].second;
    }
  }
  FreeNodes free;
  for (const SlurmNode& n : cluster_.nodes) {
    if (NodeIsFree(n)) {
      free.idle.insert(n.name);
      continue;
    }
    if (NodeHasFailed(n)) continue;
    const bool drained = std::any_of(n.flags.begin(), n.flags.end(), [](const std::string& f) {
      return f.rfind("DRAIN", 0) == 0 || f == "MAINTENANCE" || f == "POWERING_DOWN" || f == "POWERED_DOWN";
    });
    if (drained) continue;
    auto on = jobs_on.find(n.name);
    const size_t running = on == jobs_on.end() ? 0 : on->second.first - on->second.second;
    const bool completing = n.state == "completing" ||
                            std::find(n.flags.begin(), n.flags.end(), "COMPLETING") != n.flags.end();
    const bool ending = (completing || (on != jobs_on.end() && on->second.second > 0)) && running == 0;
    if (ending || (freeing.contains(n.name) && running <= 1)) free.soon.insert(n.name);
  }
  // Pins of submissions no poll shows yet: Slurm starts them there.
  for (const auto& [token, p] : proposals_) {
    if (p.job_id.empty()) TakeNodes(free, p.pin);
  }
  return free;
}

void SlurmController::TakeNodes(FreeNodes& free, const std::vector<std::string>& nodes) {
  for (const std::string& n : nodes) {
    free.idle.erase(n);
    free.soon.erase(n);
  }
}

std::set<std::string> SlurmController::PoolFor(const FreeNodes& free, const NodeDemand& demand) {
  // Idle nodes first: a job that fits on them does not wait for an Epilog.
  std::set<std::string> idle;
  for (const std::string& n : demand.eligible) {
    if (free.idle.contains(n)) idle.insert(n);
  }
  if (idle.size() >= demand.count) return free.idle;
  std::set<std::string> all = free.idle;
  all.insert(free.soon.begin(), free.soon.end());
  return all;
}

size_t SlurmController::Usable(const std::set<std::string>& pool, const NodeDemand& demand) {
  size_t n = 0;
  for (const std::string& e : demand.eligible) n += pool.contains(e);
  return n;
}

std::vector<std::string> SlurmController::TreeFirst(const std::set<std::string>& pool, const NodeDemand& demand) const {
  absl::StatusOr<std::vector<placer::ServerSet>> first = placer::LeafCandidates(*fabric_, pool, demand.eligible, demand.count, 1);
  return first.ok() && !first->empty() ? (*first)[0].servers : std::vector<std::string>();
}

std::set<std::string> SlurmController::Occupied(const ClusterState& cluster) {
  std::set<std::string> out;
  for (const SlurmJob& j : cluster.jobs) {
    if (JobIsRunning(j)) out.insert(j.nodes.begin(), j.nodes.end());
  }
  for (const SlurmNode& n : cluster.nodes) {
    const bool drained = std::any_of(n.flags.begin(), n.flags.end(), [](const std::string& f) {
      return f.rfind("DRAIN", 0) == 0 || f == "POWERING_DOWN" || f == "POWERED_DOWN";
    });
    if (NodeHasFailed(n) || drained || n.state == "drained") out.insert(n.name);
  }
  return out;
}

bool SlurmController::PinIsStale(const std::vector<std::string>& pin, const NodeDemand& demand,
                                 const std::set<std::string>& occupied) {
  if (pin.size() != demand.count) return true;
  return std::any_of(pin.begin(), pin.end(),
                     [&](const std::string& n) { return occupied.contains(n) || !demand.eligible.contains(n); });
}

SlurmController::Walk SlurmController::WalkLocked(const std::set<std::string>& freeing) const {
  Walk w;
  w.free = FreeNodesLocked(freeing);
  const std::set<std::string> occupied = Occupied(cluster_);
  for (const SlurmJob* job : PendingInPriorityOrder(cluster_)) {
    const Proposal* prop = nullptr;
    if (auto t = token_of_.find(job->id); t != token_of_.end()) {
      if (auto p = proposals_.find(t->second); p != proposals_.end()) prop = &p->second;
    }
    const JobRequest request = prop != nullptr ? prop->request : JobRequestFromSqueue(*job);
    absl::StatusOr<NodeDemand> demand = ResolveDemand(request, cluster_);
    if (!demand.ok()) {
      if (request.held || request.deferred) continue;
      // A job phasor does not model: if it names its nodes and they are
      // free it takes them; otherwise it holds its partitions.
      if (!job->required_nodes.empty()) {
        absl::StatusOr<std::vector<std::string>> nodes = topology::ExpandHostList(job->required_nodes);
        if (nodes.ok() && AllIn(*nodes, w.free.idle)) {
          TakeNodes(w.free, *nodes);
          continue;
        }
      }
      for (const std::string& p : PartitionsOf(*job, cluster_)) w.blocked.insert(p);
      continue;
    }
    if (!demand->startable || w.blocked.contains(demand->partition)) continue;
    const std::set<std::string> pool = PoolFor(w.free, *demand);
    std::vector<std::string> takes;
    if (prop != nullptr && !prop->pin.empty() && !PinIsStale(prop->pin, *demand, occupied)) {
      // Slurm starts a pinned job on its pin only (and waits for it).
      std::set<std::string> all = w.free.idle;
      all.insert(w.free.soon.begin(), w.free.soon.end());
      if (AllIn(prop->pin, all)) takes = prop->pin;
    } else if (Usable(pool, *demand) >= demand->count) {
      takes = TreeFirst(pool, *demand);
    }
    if (takes.empty()) {
      w.blocked.insert(demand->partition);
    } else {
      TakeNodes(w.free, takes);
    }
  }
  return w;
}

absl::Status SlurmController::ReplanLocked(const std::set<std::string>& freeing) {
  struct Item {
    SlurmJob job;
    std::string token;
    std::optional<Proposal> proposal;
  };
  std::vector<Item> order;
  ClusterState cluster;
  FreeNodes free;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!have_state_) return absl::OkStatus();
    bool any = false;
    for (const SlurmJob* job : PendingInPriorityOrder(cluster_)) {
      Item item{*job, "", std::nullopt};
      if (auto t = token_of_.find(job->id); t != token_of_.end()) {
        if (auto p = proposals_.find(t->second); p != proposals_.end()) {
          item.token = t->second;
          item.proposal = p->second;
          any = true;
        }
      }
      order.push_back(std::move(item));
    }
    if (!any) {
      base_ = WalkLocked({});
      return absl::OkStatus();
    }
    cluster = cluster_;
    free = FreeNodesLocked(freeing);
  }
  const std::set<std::string> occupied = Occupied(cluster);
  absl::Status status = absl::OkStatus();
  std::set<std::string> blocked;
  auto record = [&](const std::string& token, const std::vector<std::string>& pin) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto p = proposals_.find(token); p != proposals_.end()) p->second.pin = pin;
    ++(pin.empty() ? counters_.replan_unpins : counters_.replan_pins);
    Save();
  };
  auto unpin = [&](const Item& item) {
    absl::Status s = options_.slurm->UpdatePendingJob(item.job.id, {}, item.proposal->num_nodes);
    if (!s.ok()) {
      spdlog::info("phasor slurm: job {}: could not take its pin back: {}", item.job.id, std::string(s.message()));
      return;
    }
    spdlog::info("phasor slurm: job {}: pin on {} taken back (it cannot start there now)", item.job.id,
                 absl::StrJoin(item.proposal->pin, ","));
    record(item.token, {});
  };
  for (const Item& item : order) {
    const SlurmJob& job = item.job;
    const JobRequest request = item.proposal ? item.proposal->request : JobRequestFromSqueue(job);
    absl::StatusOr<NodeDemand> demand = ResolveDemand(request, cluster);
    const bool pinned = item.proposal && !item.proposal->pin.empty();
    std::set<std::string> all = free.idle;
    all.insert(free.soon.begin(), free.soon.end());
    if (!demand.ok()) {
      if (pinned) unpin(item);
      if (request.held || request.deferred) continue;
      if (!job.required_nodes.empty() && !item.proposal) {
        absl::StatusOr<std::vector<std::string>> nodes = topology::ExpandHostList(job.required_nodes);
        if (nodes.ok() && AllIn(*nodes, free.idle)) {
          TakeNodes(free, *nodes);
          continue;
        }
      }
      for (const std::string& p : PartitionsOf(job, cluster)) blocked.insert(p);
      continue;
    }
    if (!demand->startable) {
      if (pinned) unpin(item);
      continue;
    }
    // A pin is taken back only when another job took its nodes (or they
    // failed, or the job may no longer use them); a pin waiting for nodes
    // that are about to free stays.
    const bool stale = pinned && PinIsStale(item.proposal->pin, *demand, occupied);
    if (blocked.contains(demand->partition)) {
      // Slurm's main scheduler starts nothing here before the job ahead.
      if (stale) unpin(item);
      continue;
    }
    const std::set<std::string> pool = PoolFor(free, *demand);
    if (!item.proposal) {
      std::vector<std::string> first = Usable(pool, *demand) >= demand->count ? TreeFirst(pool, *demand)
                                                                               : std::vector<std::string>();
      if (first.empty()) {
        blocked.insert(demand->partition);
      } else {
        TakeNodes(free, first);
      }
      continue;
    }
    // An opted-in job.
    if (pinned && !stale) {
      // It waits for its pin unless it could start at once elsewhere.
      const bool waits = !AllIn(item.proposal->pin, all);
      if (!waits || Usable(free.idle, *demand) < demand->count) {
        if (waits) blocked.insert(demand->partition);
        TakeNodes(free, item.proposal->pin);
        continue;
      }
    }
    if (Usable(pool, *demand) < demand->count) {
      if (stale) unpin(item);
      blocked.insert(demand->partition);
      continue;
    }
    absl::StatusOr<Ranking> ranking;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ranking = PrepareRanking(job.id, item.proposal->profile, demand->eligible, demand->count, pool);
    }
    absl::StatusOr<Choice> choice =
        ranking.ok() ? Rank(*ranking, *replan_client_, item.token) : absl::StatusOr<Choice>(ranking.status());
    if (!choice.ok()) {
      // Left to Slurm, which starts it on its own first choice.
      spdlog::info("phasor slurm: job {} left to Slurm: {}", job.id, std::string(choice.status().message()));
      if (pinned) unpin(item);
      TakeNodes(free, TreeFirst(pool, *demand));
      continue;
    }
    absl::Status s = options_.slurm->UpdatePendingJob(job.id, choice->nodes, "");
    if (!s.ok()) {
      spdlog::info("phasor slurm: job {}: could not pin {}: {}", job.id, absl::StrJoin(choice->nodes, ","),
                   std::string(s.message()));
      continue;
    }
    TakeNodes(free, choice->nodes);
    spdlog::info("phasor slurm: job {} pending: pinned to {} (candidate {} of {}, score {:.4f})", job.id,
                 absl::StrJoin(choice->nodes, ","), choice->candidate, choice->candidates, choice->score);
    record(item.token, choice->nodes);
  }
  std::lock_guard<std::mutex> lock(mu_);
  base_ = WalkLocked({});
  return status;
}

absl::StatusOr<SubmitAnswer> SlurmController::Submit(const SubmitQuery& query) {
  std::lock_guard<std::mutex> one_at_a_time(submit_mu_);
  const int64_t arrived = options_.clock();
  auto decline = [&](absl::Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.declined;
    return s;
  };
  if (query.deadline_us != 0 && arrived >= query.deadline_us) {
    return decline(absl::DeadlineExceededError("the hook's deadline passed before the request was read"));
  }
  absl::StatusOr<JobSpec> spec = ParseJobSpec(query.comment);
  if (!spec.ok()) return decline(spec.status());
  absl::StatusOr<JobRequest> request = JobRequestFromHook(query.fields, arrived / 1000000);
  if (!request.ok()) return decline(request.status());

  std::unique_lock<std::mutex> lock(mu_);
  auto declined = [&](absl::Status s) {
    ++counters_.declined;
    return s;
  };
  if (!have_state_) return declined(absl::FailedPreconditionError("no Slurm state polled yet"));
  absl::StatusOr<NodeDemand> demand = ResolveDemand(*request, cluster_);
  if (!demand.ok()) return declined(demand.status());
  absl::StatusOr<placer::TrafficProfile> profile = resolver_->Resolve(*spec, demand->count);
  if (!profile.ok()) return declined(profile.status());
  const std::string token = NewToken();
  SubmitAnswer answer;
  answer.token = token;
  answer.comment = WithToken(query.comment, token);
  if (answer.comment.size() > kMaxCommentBytes) {
    return declined(absl::InvalidArgumentError(
        absl::StrCat("comment: with the token it would exceed ", kMaxCommentBytes, " bytes")));
  }
  Proposal proposal;
  proposal.created_us = arrived;
  proposal.request = *request;
  proposal.profile = *profile;
  proposal.num_nodes = NumNodesWithoutPin(*request, cluster_, demand->partition);

  // Would Slurm start it now? Then phasor chooses its nodes now.
  std::set<std::string> avail;
  for (const std::string& n : demand->eligible) {
    if (base_.free.idle.contains(n)) avail.insert(avail.end(), n);  // in order: constant time
  }
  if (!demand->startable) {
    answer.unpinned_because = "it may not start yet (held, a begin time, a dependency, or its partition or reservation not up)";
  } else if (base_.blocked.contains(demand->partition)) {
    answer.unpinned_because = absl::StrCat("jobs wait ahead of it in partition ", demand->partition);
  } else if (avail.size() < demand->count) {
    answer.unpinned_because = absl::StrCat(avail.size(), " free nodes it may use, it needs ", demand->count);
  } else if (query.deadline_us != 0 && query.deadline_us - options_.clock() < kMinRankUs) {
    answer.unpinned_because = "too little time left before the hook's deadline to rank";
  }
  std::optional<Ranking> ranking;
  if (answer.unpinned_because.empty()) {
    absl::StatusOr<Ranking> r = PrepareRanking("submit-" + token, *profile, demand->eligible, demand->count, base_.free.idle);
    if (r.ok()) {
      ranking = *std::move(r);
    } else {
      answer.unpinned_because = std::string(r.status().message());
    }
  }
  // Preparing the candidates can take long on a large cluster (tens of ms
  // at 10,000 nodes): past the hook's deadline the hook has given up, so
  // neither routing nor phasord's time is spent on the answer.
  if (ranking && query.deadline_us != 0 && options_.clock() >= query.deadline_us) {
    return declined(absl::DeadlineExceededError(
        "the hook's deadline passed while the candidates were prepared: the job goes on unmodified"));
  }
  if (ranking) {
    lock.unlock();
    absl::StatusOr<Choice> choice = Rank(*ranking, *submit_client_, token);
    lock.lock();
    if (query.deadline_us != 0 && options_.clock() >= query.deadline_us) {
      return declined(absl::DeadlineExceededError("answered after the hook's deadline: the job goes on unmodified"));
    }
    if (!choice.ok()) return declined(choice.status());
    if (!AllIn(choice->nodes, base_.free.idle)) {
      answer.unpinned_because = "its nodes went to another job meanwhile";
    } else {
      TakeNodes(base_.free, choice->nodes);
      proposal.pin = choice->nodes;
      answer.nodes = choice->nodes;
      answer.node_count = demand->count;
      answer.candidate = choice->candidate;
      answer.score = choice->score;
      answer.candidates = choice->candidates;
      ++counters_.pinned_at_submit;
    }
  }
  proposals_[token] = std::move(proposal);
  ++counters_.proposals;
  Save();
  return answer;
}

void SlurmController::Abandon(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto p = proposals_.find(token);
  if (p == proposals_.end() || !p->second.job_id.empty()) return;
  std::set<std::string> idle;
  for (const SlurmNode& n : cluster_.nodes) {
    if (NodeIsFree(n)) idle.insert(n.name);
  }
  for (const std::string& n : p->second.pin) {
    if (idle.contains(n)) base_.free.idle.insert(n);
  }
  spdlog::info("phasor slurm: the hook did not take the answer for token {}: dropped", token);
  proposals_.erase(p);
  ++counters_.dropped_unbound;
  Save();
}

absl::Status SlurmController::Poll() {
  std::lock_guard<std::mutex> one(replan_mu_);
  const int64_t polled_at = options_.clock();
  absl::StatusOr<ClusterState> state = options_.slurm->Poll();
  if (!state.ok()) return state.status();
  absl::Status refreshed = RefreshImpl(*state, polled_at, /*snapshot=*/true);
  absl::Status replanned = ReplanLocked({});
  return refreshed.ok() ? replanned : refreshed;
}

absl::Status SlurmController::RefreshImpl(const ClusterState& state, int64_t polled_at_us, bool snapshot) {
  struct ToStart {
    std::string job, token;
    std::vector<std::string> nodes;
  };
  std::vector<ToStart> to_start;
  std::vector<std::pair<std::string, std::string>> to_unpin;  // job, its node count
  absl::Status status = absl::OkStatus();
  {
    std::lock_guard<std::mutex> lock(mu_);
    cluster_ = state;
    jobs_.clear();
    for (const SlurmJob& j : cluster_.jobs) jobs_[j.id] = j;
    have_state_ = true;
    bool changed = false;
    // Bind tokens to the first job that carries them.
    std::map<std::string, std::vector<std::string>> carriers;  // token -> job ids
    for (const SlurmJob& j : cluster_.jobs) {
      absl::StatusOr<JobSpec> spec = ParseJobSpec(j.comment);
      if (spec.ok() && !spec->token.empty() && proposals_.contains(spec->token)) carriers[spec->token].push_back(j.id);
    }
    for (auto& [token, ids] : carriers) {
      std::sort(ids.begin(), ids.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
      });
      Proposal& p = proposals_[token];
      if (p.job_id.empty() && !token_of_.contains(ids[0])) {
        p.job_id = ids[0];
        token_of_[ids[0]] = token;
        changed = true;
      }
      for (const std::string& id : ids) {
        if (id != p.job_id) {
          ++counters_.token_conflicts;
          spdlog::warn("phasor slurm: job {} carries the token of job {}: ignored", id, p.job_id);
        }
      }
    }
    // Proposals whose job never came or is gone.
    for (auto it = proposals_.begin(); it != proposals_.end();) {
      Proposal& p = it->second;
      const char* why = nullptr;
      if (p.job_id.empty()) {
        if (p.created_us < polled_at_us - options_.unbound_grace_ms * 1000) {
          why = "no job carries it (the submission was abandoned or rejected)";
          ++counters_.dropped_unbound;
        }
      } else if (auto job = jobs_.find(p.job_id); job == jobs_.end() || JobHasEnded(job->second)) {
        why = "its job left the queue";
      } else if (absl::StatusOr<JobSpec> spec = ParseJobSpec(job->second.comment); !spec.ok() || spec->token != it->first) {
        why = "its job's comment no longer carries it";
      } else if (JobIsRunning(job->second) && !placed_.contains(p.job_id) && !starting_.contains(p.job_id)) {
        to_start.push_back({p.job_id, it->first, job->second.nodes});
      }
      if (why != nullptr) {
        spdlog::info("phasor slurm: token {}{}{} dropped: {}", it->first, p.job_id.empty() ? "" : " of job ", p.job_id,
                     why);
        // A job that still waits keeps no pin phasor no longer answers for.
        if (auto job = jobs_.find(p.job_id); !p.pin.empty() && job != jobs_.end() && job->second.state == "PENDING") {
          to_unpin.emplace_back(p.job_id, p.num_nodes);
        }
        token_of_.erase(p.job_id);
        it = proposals_.erase(it);
        changed = true;
      } else {
        ++it;
      }
    }
    // Placed jobs that no longer run.
    std::set<std::string> failed;
    for (const SlurmNode& n : cluster_.nodes) {
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
      changed = true;
    }
    base_ = WalkLocked({});
    if (changed) Save();
  }
  if (absl::Status s = ReleaseUnreleased(); !s.ok() && status.ok()) status = s;
  for (const auto& [job, num_nodes] : to_unpin) {
    if (absl::Status s = options_.slurm->UpdatePendingJob(job, {}, num_nodes); !s.ok()) {
      spdlog::info("phasor slurm: job {}: could not take its pin back: {}", job, std::string(s.message()));
    }
  }
  for (const ToStart& t : to_start) {
    spdlog::info("phasor slurm: job {} runs but its Prolog never reached the controller: committing it", t.job);
    if (absl::Status s = Start(t.job, t.token, t.nodes); !s.ok()) {
      spdlog::warn("phasor slurm: job {}: {}", t.job, std::string(s.message()));
    }
  }
  if (!snapshot) return status;
  // The running jobs' latest profiles (the probes' when phasord has them) and shifts.
  std::unique_ptr<client::Client> phasord = AcquireClient();
  if (phasord == nullptr) return status;
  absl::StatusOr<v1::Snapshot> snap = phasord->GetSnapshot();
  ReturnClient(std::move(phasord));
  std::lock_guard<std::mutex> lock(mu_);
  if (snap.ok()) {
    for (const v1::Job& j : snap->placement().jobs()) {
      if (placed_.contains(j.id()) && j.has_profile()) observed_profiles_[j.id()] = protocol::FromProto(j.profile());
    }
    for (const v1::OffsetUpdate& o : snap->offsets()) {
      if (placed_.contains(o.job())) shifts_us_[o.job()] = o.shift_us();
    }
  } else if (status.ok()) {
    status = absl::Status(snap.status().code(), absl::StrCat("phasord: ", snap.status().message()));
  }
  return status;
}

absl::Status SlurmController::ReleaseUnreleased() {
  std::lock_guard<std::mutex> one(release_mu_);  // End and a poll: one release at a time
  std::vector<std::string> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs.assign(unreleased_.begin(), unreleased_.end());
  }
  if (jobs.empty()) return absl::OkStatus();
  std::unique_ptr<client::Client> phasord = AcquireClient();
  if (phasord == nullptr) return absl::UnavailableError("phasord: cannot connect");
  absl::StatusOr<v1::ReleaseReply> released = phasord->Release(jobs);
  ReturnClient(std::move(phasord));
  if (!released.ok()) {
    spdlog::warn("phasor slurm: phasord did not take the release of {}: {} (retried)", absl::StrJoin(jobs, ","),
                 std::string(released.status().message()));
    return absl::Status(released.status().code(), absl::StrCat("phasord: ", released.status().message()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& j : jobs) {
    // A job that started again meanwhile is placed anew: keep it out.
    if (!placed_.contains(j)) unreleased_.erase(j);
  }
  counters_.releases += jobs.size();
  spdlog::info("phasor slurm: released {}", absl::StrJoin(jobs, ","));
  Save();
  return absl::OkStatus();
}

absl::Status SlurmController::Start(const std::string& job_id, const std::string& token,
                                    const std::vector<std::string>& nodes, std::vector<std::string>* ring) {
  if (job_id.empty()) return absl::InvalidArgumentError("job: must not be empty");
  std::unique_lock<std::mutex> lock(mu_);
  started_cv_.wait(lock, [&] { return !starting_.contains(job_id); });
  if (auto placed = placed_.find(job_id); placed != placed_.end()) {
    if (ring != nullptr) *ring = placed->second.nodes;
    return absl::OkStatus();
  }
  std::string own;
  if (auto t = token_of_.find(job_id); t != token_of_.end()) {
    own = t->second;
  } else if (!token.empty()) {
    auto p = proposals_.find(token);
    if (p != proposals_.end() && !p->second.job_id.empty() && p->second.job_id != job_id) {
      ++counters_.token_conflicts;
      return absl::PermissionDeniedError(absl::StrCat("token: belongs to job ", p->second.job_id));
    }
    if (p != proposals_.end()) {
      p->second.job_id = job_id;
      token_of_[job_id] = token;
      own = token;
    }
  }
  auto p = proposals_.find(own);
  if (own.empty() || p == proposals_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, ": phasor gave it no token (or it expired)"));
  }
  std::vector<std::string> where = nodes.empty() ? p->second.pin : nodes;
  if (where.empty()) return absl::InvalidArgumentError("nodelist: the job's nodes are not known");
  const placer::TrafficProfile profile = p->second.profile;
  // Slurm lists the nodes in its own order: on the pin's nodes, the ring is
  // the pin's (phasor's ring order, as ranked at submission).
  std::vector<std::string> sorted_where = where, sorted_pin = p->second.pin;
  std::sort(sorted_where.begin(), sorted_where.end());
  std::sort(sorted_pin.begin(), sorted_pin.end());
  const bool on_pin = sorted_where == sorted_pin;
  if (on_pin) where = p->second.pin;
  placer::RankRequest request;
  // Elsewhere, phasor orders the ring of the nodes Slurm gave.
  request.options.ring_order = on_pin ? placer::RingOrderMode::kHost : placer::RingOrderMode::kPhasor;
  request.options.own_candidates = 0;
  protocol::AddRunningJobs(RunningJobs(), request, job_id);
  request.jobs.push_back({job_id, profile, std::nullopt});
  placer::Candidate c;
  c.id = "slurm-" + job_id;
  c.servers[job_id] = where;
  request.candidates.push_back(c);
  starting_.insert(job_id);
  lock.unlock();

  absl::Status status = absl::OkStatus();
  std::vector<v1::OffsetUpdate> offsets;
  std::string unrouted;
  Route(request, unrouted);
  std::unique_ptr<client::Client> phasord = AcquireClient();
  if (request.candidates.empty()) {
    status = absl::FailedPreconditionError(absl::StrCat("cannot route the job: ", unrouted));
  } else if (phasord == nullptr) {
    status = absl::UnavailableError("phasord: cannot connect");
  } else if (absl::StatusOr<client::RankResult> ranked = phasord->Rank(request, v1::RankRequest::ORDER); !ranked.ok()) {
    status = absl::Status(ranked.status().code(), absl::StrCat("phasord: ", ranked.status().message()));
  } else if (ranked->ranking.ranked.empty()) {
    status = absl::FailedPreconditionError(absl::StrCat(
        "phasord: ", ranked->ranking.rejected.empty() ? "no ranking" : ranked->ranking.rejected[0].reason));
  } else if (absl::StatusOr<v1::CommitReply> committed = phasord->Commit(ranked->ranking_id, c.id); !committed.ok()) {
    status = absl::Status(committed.status().code(), absl::StrCat("phasord: ", committed.status().message()));
  } else {
    offsets.assign(committed->offsets().begin(), committed->offsets().end());
    const placer::RankedCandidate& best = ranked->ranking.ranked[0];
    if (auto order = best.rank_order.find(job_id); order != best.rank_order.end() && order->second.size() == where.size()) {
      where = order->second;
    }
  }
  ReturnClient(std::move(phasord));

  lock.lock();
  starting_.erase(job_id);
  started_cv_.notify_all();
  if (!status.ok()) return status;
  for (const v1::OffsetUpdate& o : offsets) shifts_us_[o.job()] = o.shift_us();
  placed_[job_id] = {own, where, profile};
  if (ring != nullptr) *ring = where;
  unreleased_.erase(job_id);
  ++counters_.starts;
  if (on_pin) ++counters_.starts_on_pin;
  spdlog::info("phasor slurm: job {} started on {} ({}): committed", job_id, absl::StrJoin(where, ","),
               on_pin ? "phasor's pin" : "Slurm's choice");
  Save();
  return absl::OkStatus();
}

absl::Status SlurmController::End(const std::string& job_id, const std::string& node) {
  if (job_id.empty()) return absl::InvalidArgumentError("job: must not be empty");
  bool release = false;
  bool waiting = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (placed_.contains(job_id)) {
      placed_.erase(job_id);
      shifts_us_.erase(job_id);
      observed_profiles_.erase(job_id);
      unreleased_.insert(job_id);
      release = true;
      Save();
    }
    // Opted-in jobs that wait: bound and pending, or submitted unpinned since the last poll.
    for (const auto& [token, p] : proposals_) {
      auto job = jobs_.find(p.job_id);
      if (p.job_id.empty() ? p.pin.empty() : job != jobs_.end() && job->second.state == "PENDING") waiting = true;
    }
  }
  absl::Status status = release ? ReleaseUnreleased() : absl::OkStatus();
  if (!waiting) return status;
  // The gate: the node stays held until this returns, so the pins are set
  // before Slurm can start anything on it.
  std::lock_guard<std::mutex> one(replan_mu_);
  const int64_t now = options_.clock();
  for (auto it = gated_.begin(); it != gated_.end();) {
    it = now - it->second > kGateMemoryUs ? gated_.erase(it) : std::next(it);
  }
  if (gated_.contains(job_id)) return status;  // another node of the job already counted all its nodes
  absl::StatusOr<ClusterState> state = options_.slurm->Poll();
  if (!state.ok()) return state.status();
  if (absl::Status s = RefreshImpl(*state, now, /*snapshot=*/false); !s.ok() && status.ok()) status = s;
  std::set<std::string> freeing = {node};
  for (const SlurmJob& j : state->jobs) {
    if (j.id == job_id) freeing.insert(j.nodes.begin(), j.nodes.end());
  }
  gated_[job_id] = now;
  if (absl::Status s = ReplanLocked(freeing); !s.ok() && status.ok()) status = s;
  return status;
}

std::map<std::string, std::vector<std::string>> SlurmController::Placed() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [job, p] : placed_) out[job] = p.nodes;
  return out;
}

std::map<std::string, std::vector<std::string>> SlurmController::Pins() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [token, p] : proposals_) {
    if (!p.pin.empty()) out[p.job_id.empty() ? "submit-" + token : p.job_id] = p.pin;
  }
  return out;
}

bool SlurmController::HasState() const {
  std::lock_guard<std::mutex> lock(mu_);
  return have_state_;
}

ControllerCounters SlurmController::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace phasor::slurm
