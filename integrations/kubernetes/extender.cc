#include "integrations/kubernetes/extender.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "integrations/kubernetes/k8s_names.h"
#include "models/model_catalog.h"
#include "placer/rank_json.h"
#include "placer/traffic_profile.h"
#include "protocol/convert.h"
#include "spdlog/spdlog.h"
#include "topology/topology_yaml.h"

namespace phasor::kubernetes {
namespace {

std::string PodKey(const std::string& uid, const std::string& ns, const std::string& name) {
  return uid.empty() ? absl::StrCat(ns, "/", name) : uid;
}

absl::Status BadOption(absl::string_view option, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(option, ": ", what));
}

absl::Status ValidateOptions(const ExtenderOptions& o) {
  if (o.phasord_endpoint.empty()) return BadOption("phasord_endpoint", "required");
  if (o.topology_path.empty()) return BadOption("topology_path", "required");
  if (o.http_timeout_ms < 2 + kTimeoutMarginMs) {
    return BadOption("http_timeout_ms", absl::StrCat("must be at least ", 2 + kTimeoutMarginMs));
  }
  if (o.phasord_timeout_ms < 1 || o.phasord_timeout_ms > 2000) {
    return BadOption("phasord_timeout_ms", "must be in 1..2000");
  }
  if (2 * o.phasord_timeout_ms + kTimeoutMarginMs > o.http_timeout_ms) {
    return BadOption("phasord_timeout_ms",
                     absl::StrCat("2 x ", o.phasord_timeout_ms, " ms (a plan's snapshot and rank) + ", kTimeoutMarginMs,
                                  " ms must fit http_timeout_ms (", o.http_timeout_ms,
                                  " ms, the scheduler's httpTimeout)"));
  }
  if (o.lifecycle_timeout_ms < 1) return BadOption("lifecycle_timeout_ms", "must be > 0");
  if (o.retry_after_ms < 0) return BadOption("retry_after_ms", "must be >= 0");
  if (o.max_candidates < 1 || o.max_candidates > 256) return BadOption("max_candidates", "must be in 1..256");
  if (o.plan_ttl_ms < 1) return BadOption("plan_ttl_ms", "must be > 0");
  if (o.max_plans < 1) return BadOption("max_plans", "must be >= 1");
  if (o.max_tracked_pods < 1) return BadOption("max_tracked_pods", "must be >= 1");
  if (o.groups.max_job_pods < 1) return BadOption("max_job_pods", "must be >= 1");
  return absl::OkStatus();
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The plan's nodes not yet taken by one of its pods.
std::set<std::string> OpenNodes(const JobPlan& plan) {
  std::set<std::string> open(plan.nodes.begin(), plan.nodes.end());
  for (const auto& [pod, node] : plan.bound) open.erase(node);
  return open;
}

// The servers of the chosen candidate of a plan.
const std::vector<std::string>* ChosenServers(const JobPlan& plan) {
  for (const placer::Candidate& c : plan.request.candidates) {
    if (c.id != plan.candidate) continue;
    auto it = c.servers.find(plan.job);
    if (it != c.servers.end()) return &it->second;
  }
  return nullptr;
}

// A job phasord holds that the extender placed: "<namespace>/<group>" (the
// ids of no other integration have that form: Slurm's are numbers).
bool IsExtenderJobId(const std::string& id) {
  const size_t slash = id.find('/');
  if (slash == std::string::npos || slash + 1 >= id.size()) return false;
  if (id.find('/', slash + 1) != std::string::npos) return false;
  return IsDns1123Label(absl::string_view(id).substr(0, slash));
}

bool PhasordUnreachable(const absl::Status& s) { return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s); }

}  // namespace

absl::StatusOr<std::unique_ptr<Extender>> Extender::Create(ExtenderOptions options, BindFunction bind,
                                                           ClockMs clock) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (options.bind_verb && !bind) return BadOption("bind", "a bind function is required with bind_verb");
  absl::StatusOr<topology::Topology> fabric = topology::LoadTopologyYaml(options.topology_path);
  if (!fabric.ok()) {
    return absl::Status(fabric.status().code(), absl::StrCat("topology_path: ", fabric.status().message()));
  }
  std::optional<models::ModelCatalog> models;
  if (!options.models_dir.empty()) {
    absl::StatusOr<models::ModelCatalog> m = models::ModelCatalog::Load(options.models_dir);
    if (!m.ok()) return absl::Status(m.status().code(), absl::StrCat("models_dir: ", m.status().message()));
    models = *std::move(m);
  }
  if (!clock) clock = SteadyMs;
  return std::unique_ptr<Extender>(
      new Extender(std::move(options), std::move(bind), std::move(clock), *std::move(fabric), std::move(models)));
}

Extender::Extender(ExtenderOptions options, BindFunction bind, ClockMs clock, topology::Topology fabric,
                   std::optional<models::ModelCatalog> models)
    : options_(std::move(options)),
      bind_(std::move(bind)),
      clock_(std::move(clock)),
      fabric_(std::move(fabric)),
      models_(std::move(models)) {
  std::unordered_map<std::string, size_t> leaf_index;
  for (topology::NodeIndex s : fabric_.Servers()) {
    const topology::Node& server = fabric_.node(s);
    server_order_.emplace(server.id, server_order_.size());
    const std::optional<topology::NodeIndex> leaf_node = fabric_.LeafOf(s);
    const std::string leaf = leaf_node ? fabric_.node(*leaf_node).id : "";
    auto [it, added] = leaf_index.emplace(leaf, leaf_ids_.size());
    if (added) leaf_ids_.push_back(leaf);
    leaf_of_server_.push_back(it->second);
  }
  lifecycle_ = std::thread([this] { LifecycleLoop(); });
}

Extender::~Extender() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  lifecycle_.join();
}

absl::StatusOr<std::unique_ptr<client::Client>> Extender::Connect(int timeout_ms) {
  client::ClientOptions o;
  o.endpoint = options_.phasord_endpoint;
  o.timeout_ms = timeout_ms;
  o.curve = options_.curve;
  return client::Client::Connect(o, &context_);
}

absl::StatusOr<std::unique_ptr<client::Client>> Extender::TakeClientLocked(int timeout_ms) {
  if (!idle_clients_.empty()) {
    std::unique_ptr<client::Client> c = std::move(idle_clients_.back());
    idle_clients_.pop_back();
    return c;
  }
  return Connect(timeout_ms);
}

std::vector<Extender::Offered> Extender::OfferedNodes(const ExtenderArgs& args) const {
  std::vector<Offered> out;
  auto server_of = [&](const std::string& name, const std::map<std::string, std::string>* labels) -> std::string {
    if (labels != nullptr && !options_.node_server_label.empty()) {
      auto it = labels->find(options_.node_server_label);
      if (it != labels->end()) return it->second;
    }
    auto it = options_.node_servers.find(name);
    return it != options_.node_servers.end() ? it->second : name;
  };
  if (args.node_names) {
    for (const std::string& n : *args.node_names) out.push_back({n, server_of(n, nullptr)});
  } else if (args.nodes) {
    for (const Node& n : args.nodes->items) out.push_back({n.name, server_of(n.name, &n.labels)});
  }
  return out;
}

void Extender::TrackLocked(const Pod& pod, const PodJob& job) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  const int64_t now = clock_();
  absl::StatusOr<std::optional<uint32_t>> rank = RankIndexOfPod(pod, options_.groups, job.pods);
  if (!rank.ok()) {
    spdlog::warn("phasor-k8s-extender: pod {}/{}: {} (steered as a pod without a rank)", pod.namespace_, pod.name,
                 std::string(rank.status().message()));
  }
  const std::optional<uint32_t> r = rank.ok() ? *rank : std::nullopt;
  auto it = pods_.find(key);
  if (it != pods_.end()) {
    it->second = {job.key, job.pods, now, r};
    return;
  }
  if (pods_.size() >= options_.max_tracked_pods) {
    auto oldest = std::min_element(pods_.begin(), pods_.end(),
                                   [](const auto& a, const auto& b) { return a.second.seen_ms < b.second.seen_ms; });
    pods_.erase(oldest);
  }
  pods_[key] = {job.key, job.pods, now, r};
}

Extender::Steer Extender::SteerOfPlanLocked(const JobPlan& plan, const std::string& pod_key) const {
  Steer steer{plan.job, OpenNodes(plan), std::nullopt};
  auto pod = pods_.find(pod_key);
  if (pod != pods_.end() && pod->second.rank && *pod->second.rank < plan.nodes.size() &&
      steer.open.contains(plan.nodes[*pod->second.rank])) {
    steer.node = plan.nodes[*pod->second.rank];
  }
  return steer;
}

void Extender::ExpireLocked() {
  const int64_t now = clock_();
  for (auto it = plans_.begin(); it != plans_.end();) {
    if (now - it->second.created_ms >= options_.plan_ttl_ms) {
      spdlog::info("phasor-k8s-extender: plan of job {} expired ({} of {} pods placed)", it->first,
                   it->second.bound.size(), it->second.pods);
      ++stats_.plans_expired;
      it = plans_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = failed_until_ms_.begin(); it != failed_until_ms_.end();) {
    it = it->second <= now ? failed_until_ms_.erase(it) : std::next(it);
  }
}

absl::StatusOr<std::optional<placer::TrafficProfile>> Extender::ProfileOf(const Pod& pod, const PodJob& job,
                                                                          uint32_t server_gpus) const {
  if (auto it = pod.annotations.find(options_.profile_annotation); it != pod.annotations.end()) {
    const std::string field = absl::StrCat("metadata.annotations[", options_.profile_annotation, "]");
    nlohmann::json doc = nlohmann::json::parse(it->second, nullptr, false);
    if (doc.is_discarded()) return absl::InvalidArgumentError(field + ": not valid JSON");
    absl::StatusOr<placer::TrafficProfile> p = placer::TrafficProfileFromJson(doc, field);
    if (!p.ok()) return p.status();
    if (absl::Status s = placer::ValidateProfile(*p); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", s.message()));
    }
    return std::optional<placer::TrafficProfile>(*std::move(p));
  }
  if (auto it = pod.annotations.find(options_.model_annotation); it != pod.annotations.end()) {
    const std::string field = absl::StrCat("metadata.annotations[", options_.model_annotation, "]");
    if (!models_) return absl::FailedPreconditionError(field + ": no model catalogue configured (models_dir)");
    uint32_t gpus = pod.gpus > 0 ? pod.gpus : server_gpus;
    if (auto g = pod.annotations.find(options_.gpus_annotation); g != pod.annotations.end()) {
      gpus = 0;
      for (char c : g->second) gpus = (c >= '0' && c <= '9' && gpus < 100) ? gpus * 10 + (c - '0') : 100;
    }
    if (gpus < 1 || gpus > 9) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata.annotations[", options_.gpus_annotation, "]: GPUs per pod must be in 1..9"));
    }
    const std::string placement(job.pods, static_cast<char>('0' + gpus));
    absl::StatusOr<models::ModelTiming> timing = models_->Lookup(it->second, placement);
    if (!timing.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", timing.status().message()));
    return std::optional<placer::TrafficProfile>(
        models::JobProfile(timing->compute_us, timing->comm_bytes, models::kMeasuredNicGbps));
  }
  return std::optional<placer::TrafficProfile>();
}

absl::StatusOr<Extender::PlanInputs> Extender::PlanInputsLocked(const Pod& pod, const PodJob& job,
                                                                const std::vector<Offered>& offered) {
  // Servers held by other jobs' plans are not offered again.
  std::set<std::string> reserved;
  for (const auto& [key, plan] : plans_) {
    if (const std::vector<std::string>* servers = ChosenServers(plan)) reserved.insert(servers->begin(), servers->end());
  }
  // The free offered servers in fabric order (by index: the offered list is
  // the scheduler's, 1,000 nodes and more).
  std::vector<std::pair<size_t, const Offered*>> free;
  free.reserve(offered.size());
  std::vector<bool> seen(server_order_.size());
  for (const Offered& o : offered) {
    auto index = server_order_.find(o.server);
    if (index == server_order_.end() || seen[index->second] || reserved.contains(o.server)) continue;
    seen[index->second] = true;
    free.emplace_back(index->second, &o);
    node_by_server_[o.server] = o.node;
  }
  if (free.size() < job.pods) {
    return absl::FailedPreconditionError(absl::StrCat("job ", job.key, ": ", job.pods, " pods but only ", free.size(),
                                                      " free nodes of the fabric offered"));
  }
  std::sort(free.begin(), free.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const uint32_t server_gpus = fabric_.node(*fabric_.FindNode(free[0].second->server)).gpus;
  absl::StatusOr<std::optional<placer::TrafficProfile>> profile = ProfileOf(pod, job, server_gpus);
  if (!profile.ok()) return profile.status();

  // Candidates: packed leaf by leaf starting at each leaf in turn, then one
  // spread round-robin over the leaves.
  std::vector<size_t> leaves;  // in the order of their first free server
  std::map<size_t, std::vector<std::string>> by_leaf;
  for (const auto& [index, o] : free) {
    const size_t leaf = leaf_of_server_[index];
    if (!by_leaf.contains(leaf)) leaves.push_back(leaf);
    by_leaf[leaf].push_back(o->server);
  }
  std::vector<std::vector<std::string>> proposals;
  std::set<std::vector<std::string>> distinct;
  auto propose = [&](std::vector<std::string> servers) {
    std::vector<std::string> key = servers;
    std::sort(key.begin(), key.end());
    if (proposals.size() < options_.max_candidates && distinct.insert(key).second) {
      proposals.push_back(std::move(servers));
    }
  };
  // The spread keeps the last slot when the leaves outnumber the slots (it
  // is the one candidate that is not a packing).
  const size_t packed_slots = std::max<size_t>(1, options_.max_candidates - 1);
  for (size_t start = 0; start < leaves.size() && proposals.size() < packed_slots; ++start) {
    std::vector<std::string> servers;
    for (size_t k = 0; k < leaves.size() && servers.size() < job.pods; ++k) {
      for (const std::string& s : by_leaf[leaves[(start + k) % leaves.size()]]) {
        if (servers.size() < job.pods) servers.push_back(s);
      }
    }
    propose(std::move(servers));
  }
  {
    std::vector<std::string> servers;
    for (size_t round = 0; servers.size() < job.pods; ++round) {
      for (size_t leaf : leaves) {
        if (round < by_leaf[leaf].size() && servers.size() < job.pods) servers.push_back(by_leaf[leaf][round]);
      }
    }
    propose(std::move(servers));
  }

  PlanInputs in;
  in.job = job;
  in.proposals = std::move(proposals);
  in.profile = *std::move(profile);
  in.free_servers.reserve(free.size());
  for (const auto& [index, o] : free) in.free_servers.push_back(o->server);
  return in;
}

absl::StatusOr<JobPlan> Extender::RankPlan(const PlanInputs& in, client::Client& phasord) {
  JobPlan plan;
  plan.job = in.job.key;
  plan.pods = in.job.pods;
  plan.created_ms = clock_();
  plan.request.options = options_.rank;
  plan.profile_from_phasord = !in.profile.has_value();
  // The running jobs are phasord's committed placement, pinned at their
  // shifts: phasord adds them itself (running_committed), so the request
  // carries the new job alone and no snapshot makes a round trip.
  plan.request.jobs.push_back({in.job.key, in.profile.value_or(placer::TrafficProfile{}), std::nullopt});
  for (size_t i = 0; i < in.proposals.size(); ++i) {
    placer::Candidate c;
    c.id = absl::StrCat("c", i);
    c.servers[in.job.key] = in.proposals[i];
    plan.request.candidates.push_back(std::move(c));
  }
  // phasord may propose its own candidates among the free servers.
  plan.request.free_servers = in.free_servers;
  v1::RankRequest wire = protocol::ToProto(plan.request);
  if (plan.profile_from_phasord) {
    for (v1::Job& j : *wire.mutable_jobs()) {
      if (j.id() == in.job.key) j.clear_profile();
    }
  }
  wire.set_running_committed(true);
  // The plan reads the order only (the links' scores stay in phasord for the commit).
  wire.set_reply_detail(v1::RankRequest::ORDER);
  plan.rank_request_bytes = wire.ByteSizeLong();
  absl::StatusOr<v1::RankReply> reply = phasord.Rank(std::move(wire));
  if (!reply.ok()) return reply.status();
  if (reply->ranked_size() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", in.job.key, ": phasord ranked no candidate",
                     reply->rejected_size() > 0 ? absl::StrCat(" (", reply->rejected(0).reason(), ")") : ""));
  }
  plan.ranking_id = reply->ranking_id();
  const v1::RankedCandidate& best = reply->ranked(0);
  plan.candidate = best.candidate();
  // The ring order phasord chose for the job (its own candidate's servers);
  // the plan's nodes follow it, and a pod with rank i is steered to the i-th.
  auto order = best.rank_order().find(in.job.key);
  std::vector<std::string> ring;
  if (order != best.rank_order().end()) ring.assign(order->second.servers().begin(), order->second.servers().end());
  auto chosen = std::find_if(plan.request.candidates.begin(), plan.request.candidates.end(),
                             [&](const placer::Candidate& c) { return c.id == plan.candidate; });
  if (chosen == plan.request.candidates.end()) {
    if (!best.proposed_by_phasor() || ring.size() != in.job.pods) {
      return absl::InternalError(absl::StrCat("job ", in.job.key, ": phasord ranked first a candidate '",
                                              plan.candidate, "' that was not proposed, without its servers"));
    }
    placer::Candidate own;
    own.id = plan.candidate;
    own.proposed_by_phasor = true;
    plan.request.candidates.push_back(std::move(own));
    chosen = std::prev(plan.request.candidates.end());
  }
  if (ring.size() == in.job.pods) {
    // The same servers in the ring's order (the long form ranks as phasord did).
    std::vector<std::string>& servers = chosen->servers[in.job.key];
    std::vector<std::string> a = servers, b = ring;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (servers.empty() || a == b) servers = ring;
  }
  // The plan is kept in the order phasord routed: re-ranked, it ranks the same.
  plan.request.options.ring_order = placer::RingOrderMode::kHost;
  plan.request.options.own_candidates = 0;
  plan.request.free_servers.clear();
  return plan;
}

std::optional<Extender::Steer> Extender::SteerFor(const Pod& pod, const std::vector<Offered>& offered) {
  std::unique_lock<std::mutex> lock(mu_);
  ExpireLocked();
  absl::StatusOr<std::optional<PodJob>> job = JobOfPod(pod, options_.groups);
  if (!job.ok()) {
    spdlog::warn("phasor-k8s-extender: pod {}/{}: {}", pod.namespace_, pod.name, std::string(job.status().message()));
    return std::nullopt;
  }
  if (!job->has_value()) return std::nullopt;
  TrackLocked(pod, **job);
  const std::string key = (*job)->key;
  // Another call plans this job now: wait for it (the lock is let go
  // meanwhile), within what this call may spend on a plan itself.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(2 * options_.phasord_timeout_ms);
  while (planning_.contains(key)) {
    if (planned_.wait_until(lock, give_up) == std::cv_status::timeout && planning_.contains(key)) return std::nullopt;
  }
  const std::string pod_key = PodKey(pod.uid, pod.namespace_, pod.name);
  if (auto it = plans_.find(key); it != plans_.end()) return SteerOfPlanLocked(it->second, pod_key);
  if (failed_until_ms_.contains(key) || committed_.contains(key)) return std::nullopt;
  if (plans_.size() >= options_.max_plans) {
    ++stats_.plans_refused;
    return std::nullopt;
  }
  absl::StatusOr<PlanInputs> inputs = PlanInputsLocked(pod, **job, offered);
  absl::StatusOr<std::unique_ptr<client::Client>> phasord =
      inputs.ok() ? TakeClientLocked(options_.phasord_timeout_ms) : inputs.status();
  absl::StatusOr<JobPlan> plan = phasord.ok() ? absl::StatusOr<JobPlan>(absl::UnknownError("")) : phasord.status();
  if (phasord.ok()) {
    planning_.insert(key);
    lock.unlock();
    plan = RankPlan(*inputs, **phasord);  // phasord's two calls, without the lock
    lock.lock();
    planning_.erase(key);
    planned_.notify_all();
    // A socket that timed out may hold a late reply: a fresh one next time.
    if (!PhasordUnreachable(plan.status())) idle_clients_.push_back(*std::move(phasord));
  }
  if (!plan.ok()) {
    const bool unreachable = PhasordUnreachable(plan.status());
    ++(unreachable ? stats_.plan_failures : stats_.plans_refused);
    spdlog::warn("phasor-k8s-extender: no plan for job {}: {}", key, std::string(plan.status().message()));
    failed_until_ms_[key] = clock_() + options_.retry_after_ms;
    return std::nullopt;
  }
  // Another job's plan may have taken one of these servers while the lock
  // was let go: this plan is dropped and the job planned again next call.
  const std::vector<std::string>* chosen = ChosenServers(*plan);
  if (chosen != nullptr) {
    for (const auto& [other, other_plan] : plans_) {
      const std::vector<std::string>* taken = ChosenServers(other_plan);
      if (taken == nullptr) continue;
      for (const std::string& s : *chosen) {
        if (std::find(taken->begin(), taken->end(), s) == taken->end()) continue;
        ++stats_.plans_conflicted;
        spdlog::info("phasor-k8s-extender: plan of job {} dropped: server {} went to job {} meanwhile", key, s, other);
        return std::nullopt;
      }
    }
    for (const std::string& s : *chosen) plan->nodes.push_back(node_by_server_[s]);
  }
  if (plans_.size() >= options_.max_plans || committed_.contains(key)) return std::nullopt;
  ++stats_.plans;
  spdlog::info("phasor-k8s-extender: job {} planned on {} (ranking {}, {})", key, absl::StrJoin(plan->nodes, ","),
               plan->ranking_id, plan->candidate);
  JobPlan& stored = plans_[key] = *std::move(plan);
  return SteerOfPlanLocked(stored, pod_key);
}

ExtenderFilterResult Extender::Filter(const ExtenderArgs& args) {
  ExtenderFilterResult result;
  const std::optional<Steer> steer = SteerFor(args.pod, OfferedNodes(args));
  if (!steer) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.neutral_answers;
  }
  std::set<std::string> keep;
  if (steer && options_.filter_to_plan) {
    // The node of the pod's rank when it is offered, else the plan's open ones.
    auto ranked = [&](const std::string& n) { return steer->node && n == *steer->node; };
    auto offered = [&](const std::string& n) { return steer->open.contains(n); };
    for (auto test : {std::function<bool(const std::string&)>(ranked), std::function<bool(const std::string&)>(offered)}) {
      if (args.node_names) {
        for (const std::string& n : *args.node_names) if (test(n)) keep.insert(n);
      } else {
        for (const Node& n : args.nodes->items) if (test(n.name)) keep.insert(n.name);
      }
      if (!keep.empty()) break;
    }
  }
  // Without a plan to honour (or none of its nodes offered), every node passes.
  const bool all = keep.empty();
  const std::string reason = steer ? absl::StrCat("phasor: not in the plan of job ", steer->job) : "";
  if (args.node_names) {
    result.node_names.emplace();
    for (const std::string& n : *args.node_names) {
      if (all || keep.contains(n)) {
        result.node_names->push_back(n);
      } else {
        result.failed_nodes[n] = reason;
      }
    }
  } else {
    result.nodes.emplace();
    result.nodes->metadata = args.nodes->metadata;
    for (const Node& n : args.nodes->items) {
      if (all || keep.contains(n.name)) {
        result.nodes->items.push_back(n);
      } else {
        result.failed_nodes[n.name] = reason;
      }
    }
  }
  return result;
}

HostPriorityList Extender::Prioritize(const ExtenderArgs& args) {
  const std::vector<Offered> offered = OfferedNodes(args);
  const std::optional<Steer> steer = SteerFor(args.pod, offered);
  if (!steer) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.neutral_answers;
  }
  HostPriorityList out;
  out.reserve(offered.size());
  for (const Offered& o : offered) {
    // The node of the pod's rank first, the plan's other open nodes next.
    int64_t score = kMinExtenderPriority;
    if (steer && steer->node == o.node) {
      score = kMaxExtenderPriority;
    } else if (steer && steer->open.contains(o.node)) {
      score = steer->node ? kMaxExtenderPriority / 2 : kMaxExtenderPriority;
    }
    out.push_back({o.node, score});
  }
  return out;
}

ExtenderBindingResult Extender::Bind(const ExtenderBindingArgs& args) {
  auto refuse = [this](std::string why) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.bind_failures;
    return ExtenderBindingResult{std::move(why)};
  };
  if (!options_.bind_verb) {
    return refuse("bind: the bind verb is off (bind_verb: false): the scheduler's own binder binds pods");
  }
  // Nothing that is not a Kubernetes name goes into the API server's URL.
  for (const absl::Status& s :
       {CheckNamespace("PodNamespace", args.pod_namespace), CheckObjectName("PodName", args.pod_name),
        CheckObjectName("Node", args.node)}) {
    if (!s.ok()) return refuse(absl::StrCat("bind: ", s.message()));
  }
  // The API server call is made outside the lock (it may be slow).
  if (absl::Status s = bind_(args); !s.ok()) {
    return refuse(absl::StrCat("bind ", args.pod_namespace, "/", args.pod_name, " to ", args.node, ": ", s.message()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.binds;
  auto tracked = pods_.find(args.pod_uid);
  if (tracked == pods_.end()) tracked = pods_.find(absl::StrCat(args.pod_namespace, "/", args.pod_name));
  if (tracked != pods_.end()) RecordPlacedLocked(tracked->second.job, tracked->first, args.node);
  return {};
}

void Extender::RecordPlacedLocked(const std::string& job, const std::string& pod_key, const std::string& node) {
  auto plan = plans_.find(job);
  if (plan == plans_.end()) return;
  plan->second.bound[pod_key] = node;
  if (auto pod = pods_.find(pod_key); pod != pods_.end() && pod->second.rank) {
    plan->second.bound_rank[pod_key] = *pod->second.rank;
  }
  if (plan->second.bound.size() < plan->second.pods) return;
  Task commit;
  commit.kind = Task::kCommit;
  commit.plan = std::move(plan->second);
  plans_.erase(plan);
  CommittedJob& placed = committed_[job];
  for (const auto& [pod, on] : commit.plan.bound) placed.pods.insert(pod);
  QueueLocked(std::move(commit));
}

void Extender::PodGoneLocked(const std::string& job, const std::string& pod_key, const std::string& why) {
  if (auto c = committed_.find(job); c != committed_.end()) {
    if (!c->second.pods.contains(pod_key)) return;  // not one of the pods placed
    committed_.erase(c);
    for (auto it = pods_.begin(); it != pods_.end();) it = it->second.job == job ? pods_.erase(it) : std::next(it);
    spdlog::info("phasor-k8s-extender: job {} ended (pod {}: {}): releasing it in phasord", job, pod_key, why);
    Task release;
    release.kind = Task::kRelease;
    release.jobs = {job};
    QueueLocked(std::move(release));
    return;
  }
  if (plans_.erase(job) > 0) {
    ++stats_.plans_forgotten;
    spdlog::info("phasor-k8s-extender: plan of job {} forgotten (pod {}: {})", job, pod_key, why);
  }
}

void Extender::OnPodUpdate(const PodState& state) {
  const std::optional<std::string> job = JobKeyOfPod(state.pod, options_.groups);
  if (!job) return;
  const std::string pod_key = PodKey(state.pod.uid, state.pod.namespace_, state.pod.name);
  std::lock_guard<std::mutex> lock(mu_);
  if (state.finished) {
    PodGoneLocked(*job, pod_key, "finished");
  } else if (!state.node.empty()) {
    RecordPlacedLocked(*job, pod_key, state.node);
  }
}

void Extender::OnPodDeleted(const Pod& pod) {
  const std::optional<std::string> job = JobKeyOfPod(pod, options_.groups);
  if (!job) return;
  std::lock_guard<std::mutex> lock(mu_);
  PodGoneLocked(*job, PodKey(pod.uid, pod.namespace_, pod.name), "deleted");
}

void Extender::OnPodList(const std::vector<PodState>& pods) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::set<std::string>> live;  // job -> its pods not finished
  for (const PodState& p : pods) {
    const std::optional<std::string> job = JobKeyOfPod(p.pod, options_.groups);
    if (!job || p.finished) continue;
    const std::string pod_key = PodKey(p.pod.uid, p.pod.namespace_, p.pod.name);
    live[*job].insert(pod_key);
    if (!p.node.empty()) RecordPlacedLocked(*job, pod_key, p.node);  // placed while not watched
  }
  // A pod not in the list is gone.
  std::vector<std::pair<std::string, std::string>> gone;
  for (const auto& [job, c] : committed_) {
    for (const std::string& pod : c.pods) {
      if (!live[job].contains(pod)) gone.emplace_back(job, pod);
    }
  }
  for (const auto& [job, plan] : plans_) {
    for (const auto& [pod, node] : plan.bound) {
      if (!live[job].contains(pod)) gone.emplace_back(job, pod);
    }
  }
  for (const auto& [job, pod] : gone) PodGoneLocked(job, pod, "not listed");
  Task reconcile;
  reconcile.kind = Task::kReconcile;
  for (auto& [job, p] : live) {
    if (!p.empty()) reconcile.live[job] = std::move(p);
  }
  QueueLocked(std::move(reconcile));
}

void Extender::QueueLocked(Task task) {
  tasks_.push_back(std::move(task));
  work_.notify_one();
}

bool Extender::WaitIdle(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return tasks_.empty() && !busy_; });
}

void Extender::LifecycleLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // Woken by work, and once a second to retry releases phasord did not take.
    work_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_ || !tasks_.empty(); });
    if (stopping_) break;
    Task task;
    if (!tasks_.empty()) {
      task = std::move(tasks_.front());
      tasks_.pop_front();
    } else if (!unreleased_.empty()) {
      task.kind = Task::kRelease;
    } else {
      continue;
    }
    busy_ = true;
    lock.unlock();
    switch (task.kind) {
      case Task::kCommit:
        CommitTask(std::move(task.plan));
        break;
      case Task::kRelease:
        ReleaseTask(std::move(task.jobs));
        break;
      case Task::kReconcile:
        ReconcileTask(task.live);
        break;
    }
    lock.lock();
    busy_ = false;
    if (tasks_.empty()) idle_.notify_all();
  }
  busy_ = false;
  idle_.notify_all();
}

absl::Status Extender::CommitAsPlaced(const JobPlan& plan, uint64_t& ranking_id, std::string& candidate) {
  // A socket of the lifecycle thread's own: its calls may take lifecycle_timeout_ms.
  absl::StatusOr<std::unique_ptr<client::Client>> phasord = Connect(options_.lifecycle_timeout_ms);
  if (!phasord.ok()) return phasord.status();
  placer::RankRequest request;
  request.options = plan.request.options;
  request.options.own_candidates = 0;
  for (const placer::Job& j : plan.request.jobs) {
    if (j.id == plan.job) request.jobs.push_back({j.id, j.profile, std::nullopt});
  }
  std::map<std::string, std::string> server_by_node;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [server, node] : node_by_server_) server_by_node[node] = server;
  }
  std::set<std::string> bound_nodes;
  for (const auto& [pod, node] : plan.bound) bound_nodes.insert(node);
  placer::Candidate real;
  real.id = "bound";
  std::vector<std::string>& servers = real.servers[plan.job];
  auto server_of = [&](const std::string& n) {
    auto s = server_by_node.find(n);
    return s != server_by_node.end() ? s->second : n;
  };
  std::map<uint32_t, std::string> by_rank;  // when every pod carries its rank
  for (const auto& [pod, rank] : plan.bound_rank) by_rank[rank] = plan.bound.at(pod);
  if (!plan.bound.empty() && by_rank.size() == plan.bound.size()) {
    // The ring is the pods' ranks, as the job runs it.
    for (const auto& [rank, node] : by_rank) servers.push_back(server_of(node));
    request.options.ring_order = placer::RingOrderMode::kHost;
  } else {
    // Plan order first for the nodes that were planned, then the others;
    // phasor orders the ring (the agents learn it from the placement).
    for (const std::string& n : plan.nodes) {
      if (bound_nodes.contains(n)) servers.push_back(server_of(n));
    }
    for (const std::string& n : bound_nodes) {
      if (std::find(plan.nodes.begin(), plan.nodes.end(), n) == plan.nodes.end()) servers.push_back(server_of(n));
    }
    request.options.ring_order = options_.rank.ring_order;
  }
  request.candidates = {real};
  v1::RankRequest wire = protocol::ToProto(request);
  if (plan.profile_from_phasord) {
    for (v1::Job& j : *wire.mutable_jobs()) {
      if (j.id() == plan.job) j.clear_profile();
    }
  }
  wire.set_running_committed(true);  // among the running jobs, as the plan was ranked
  wire.set_reply_detail(v1::RankRequest::ORDER);
  absl::StatusOr<v1::RankReply> reply = (*phasord)->Rank(std::move(wire));
  if (!reply.ok()) return reply.status();
  if (reply->ranked_size() == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the placed nodes were rejected", reply->rejected_size() ? ": " + reply->rejected(0).reason() : ""));
  }
  ranking_id = reply->ranking_id();
  candidate = "bound";
  return (*phasord)->Commit(ranking_id, candidate).status();
}

void Extender::CommitTask(JobPlan plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!committed_.contains(plan.job)) return;  // it ended before its commit: nothing to commit
  }
  std::set<std::string> bound_nodes;
  for (const auto& [pod, node] : plan.bound) bound_nodes.insert(node);
  const std::set<std::string> planned(plan.nodes.begin(), plan.nodes.end());
  uint64_t ranking_id = plan.ranking_id;
  std::string candidate = plan.candidate;
  absl::Status status = absl::FailedPreconditionError("not on the plan");
  bool replanned = false;
  // Pods that carry a rank must sit at their place in the ring as well.
  bool in_ring_order = true;
  for (const auto& [pod, rank] : plan.bound_rank) {
    in_ring_order = in_ring_order && rank < plan.nodes.size() && plan.bound.at(pod) == plan.nodes[rank];
  }
  if (bound_nodes == planned && in_ring_order) {
    absl::StatusOr<std::unique_ptr<client::Client>> phasord = Connect(options_.lifecycle_timeout_ms);
    status = phasord.ok() ? (*phasord)->Commit(ranking_id, candidate).status() : phasord.status();
  }
  // The pods landed elsewhere, or the ranking is stale (a job it pins was
  // released since: phasord refuses it): rank what happened now and commit
  // that, so the offsets phasord publishes belong to the real placement.
  if (absl::IsFailedPrecondition(status)) {
    replanned = true;
    status = CommitAsPlaced(plan, ranking_id, candidate);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (replanned) ++stats_.commits_replanned;
  if (!status.ok()) {
    ++stats_.commit_failures;
    spdlog::warn("phasor-k8s-extender: job {} placed but not committed (no offsets): {}", plan.job,
                 std::string(status.message()));
    return;
  }
  ++stats_.commits;
  spdlog::info("phasor-k8s-extender: job {} committed (ranking {}, {})", plan.job, ranking_id, candidate);
}

void Extender::ReleaseTask(std::vector<std::string> jobs) {
  std::vector<std::string> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unreleased_.insert(jobs.begin(), jobs.end());
    all.assign(unreleased_.begin(), unreleased_.end());
  }
  if (all.empty()) return;
  absl::StatusOr<std::unique_ptr<client::Client>> phasord = Connect(options_.lifecycle_timeout_ms);
  absl::StatusOr<v1::ReleaseReply> reply = phasord.ok() ? (*phasord)->Release(all) : phasord.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (!reply.ok()) {
    ++stats_.release_failures;
    spdlog::warn("phasor-k8s-extender: phasord did not take the release of {}: {} (retried)", absl::StrJoin(all, ","),
                 std::string(reply.status().message()));
    return;
  }
  for (const std::string& j : all) unreleased_.erase(j);
  stats_.releases += all.size();
  spdlog::info("phasor-k8s-extender: released {} in phasord", absl::StrJoin(all, ","));
}

void Extender::ReconcileTask(const std::map<std::string, std::set<std::string>>& live) {
  absl::StatusOr<std::unique_ptr<client::Client>> phasord = Connect(options_.lifecycle_timeout_ms);
  absl::StatusOr<v1::Snapshot> snapshot = phasord.ok() ? (*phasord)->GetSnapshot() : phasord.status();
  if (!snapshot.ok()) {
    spdlog::warn("phasor-k8s-extender: cannot compare phasord's placement with the pods listed: {}",
                 std::string(snapshot.status().message()));
    return;
  }
  std::set<std::string> held;  // the jobs phasord holds a placement or an offset of
  for (const v1::OffsetUpdate& off : snapshot->offsets()) held.insert(off.job());
  for (const v1::Job& j : snapshot->placement().jobs()) held.insert(j.id());
  for (const std::string& j : snapshot->jobs_without_profile()) held.insert(j);
  std::vector<std::string> ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& job : held) {
      if (!IsExtenderJobId(job) || committed_.contains(job) || plans_.contains(job) || planning_.contains(job)) {
        continue;
      }
      if (auto pods = live.find(job); pods != live.end()) {
        committed_[job].pods = pods->second;  // placed before this extender started watching
        ++stats_.jobs_adopted;
        spdlog::info("phasor-k8s-extender: job {} runs ({} pods): released when it ends", job, pods->second.size());
      } else {
        ended.push_back(job);
      }
    }
  }
  if (!ended.empty()) {
    spdlog::info("phasor-k8s-extender: phasord holds {} that no listed pod runs: releasing", absl::StrJoin(ended, ","));
    ReleaseTask(std::move(ended));
  }
}

std::optional<JobPlan> Extender::PlanOf(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(job);
  if (it == plans_.end()) return std::nullopt;
  return it->second;
}

std::set<std::string> Extender::CommittedJobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (const auto& [job, c] : committed_) out.insert(job);
  return out;
}

ExtenderStats Extender::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string Extender::MetricsText() const {
  const ExtenderStats s = stats();
  std::string out;
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n", name, " ", v, "\n");
  };
  counter("phasor_k8s_plans_total", "Jobs planned through phasord.", s.plans);
  counter("phasor_k8s_plan_failures_total", "Plan attempts that phasord did not answer in time.", s.plan_failures);
  counter("phasor_k8s_plans_expired_total", "Plans whose pods did not all land within the TTL.", s.plans_expired);
  counter("phasor_k8s_plans_refused_total", "Jobs not planned (limit, too few nodes, bad profile).", s.plans_refused);
  counter("phasor_k8s_plans_conflicted_total", "Plans dropped because another job's plan took a node meanwhile.",
          s.plans_conflicted);
  counter("phasor_k8s_plans_forgotten_total", "Plans forgotten because a pod of the job went first.",
          s.plans_forgotten);
  counter("phasor_k8s_neutral_answers_total", "Filter/prioritize answers without a plan.", s.neutral_answers);
  counter("phasor_k8s_binds_total", "Pods bound.", s.binds);
  counter("phasor_k8s_bind_failures_total", "Binds refused (verb off, not Kubernetes names, API server).",
          s.bind_failures);
  counter("phasor_k8s_commits_total", "Jobs committed to phasord.", s.commits);
  counter("phasor_k8s_commits_replanned_total", "Commits ranked again as the pods landed.", s.commits_replanned);
  counter("phasor_k8s_commit_failures_total", "Placed jobs phasord did not accept.", s.commit_failures);
  counter("phasor_k8s_releases_total", "Jobs released in phasord (ended, deleted, or gone while not watched).",
          s.releases);
  counter("phasor_k8s_release_failures_total", "Releases phasord did not take (retried).", s.release_failures);
  counter("phasor_k8s_jobs_adopted_total", "Committed jobs found running after a (re)list.", s.jobs_adopted);
  return out;
}

}  // namespace phasor::kubernetes
