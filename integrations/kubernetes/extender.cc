#include "integrations/kubernetes/extender.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "placer/rank_json.h"
#include "placer/traffic_profile.h"
#include "protocol/convert.h"
#include "models/model_catalog.h"
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
  if (o.phasord_timeout_ms < 1 || o.phasord_timeout_ms > 2000) {
    return BadOption("phasord_timeout_ms", "must be in 1..2000 (two calls must fit the scheduler's 5 s)");
  }
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

}  // namespace

absl::StatusOr<std::unique_ptr<Extender>> Extender::Create(ExtenderOptions options, BindFunction bind,
                                                           ClockMs clock) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (!bind) return BadOption("bind", "a bind function is required");
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
}

absl::Status Extender::EnsureClient() {
  if (client_) return absl::OkStatus();
  client::ClientOptions o;
  o.endpoint = options_.phasord_endpoint;
  o.timeout_ms = options_.phasord_timeout_ms;
  o.curve = options_.curve;
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
  if (!c.ok()) return c.status();
  client_ = *std::move(c);
  return absl::OkStatus();
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

void Extender::Track(const Pod& pod, const PodJob& job) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  const int64_t now = clock_();
  auto it = pods_.find(key);
  if (it != pods_.end()) {
    it->second = {job.key, job.pods, now};
    return;
  }
  if (pods_.size() >= options_.max_tracked_pods) {
    auto oldest = std::min_element(pods_.begin(), pods_.end(),
                                   [](const auto& a, const auto& b) { return a.second.seen_ms < b.second.seen_ms; });
    pods_.erase(oldest);
  }
  pods_[key] = {job.key, job.pods, now};
}

void Extender::Expire() {
  const int64_t now = clock_();
  for (auto it = plans_.begin(); it != plans_.end();) {
    if (now - it->second.created_ms >= options_.plan_ttl_ms) {
      spdlog::info("phasor-k8s-extender: plan of job {} expired ({} of {} pods bound)", it->first,
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

absl::StatusOr<std::map<std::string, std::map<std::string, double>>> Extender::AddRunningJobs(
    placer::RankRequest& request, const std::string& new_job) {
  absl::StatusOr<v1::Snapshot> snapshot = client_->GetSnapshot();
  if (!snapshot.ok()) return snapshot.status();
  absl::StatusOr<placer::RankRequest> placement = protocol::FromProto(snapshot->placement());
  if (!placement.ok()) return placement.status();
  std::map<std::string, uint32_t> shifts;
  for (const v1::OffsetUpdate& o : snapshot->offsets()) shifts[o.job()] = o.shift_us();
  std::map<std::string, std::map<std::string, double>> shares;
  const placer::Candidate* committed = placement->candidates.empty() ? nullptr : &placement->candidates[0];
  for (placer::Job& j : placement->jobs) {
    if (j.id == new_job || committed == nullptr) continue;
    auto links = committed->links.find(j.id);
    if (links == committed->links.end()) continue;
    if (auto s = shifts.find(j.id); s != shifts.end() && j.profile.period_us > 0) {
      j.pinned_shift_us = s->second % j.profile.period_us;
    }
    shares[j.id] = links->second;
    request.jobs.push_back(std::move(j));
  }
  request.links = std::move(placement->links);
  return shares;
}

absl::StatusOr<JobPlan> Extender::MakePlan(const Pod& pod, const PodJob& job, const std::vector<Offered>& offered) {
  // Servers held by other jobs' plans are not offered again.
  std::set<std::string> reserved;
  for (const auto& [key, plan] : plans_) {
    for (const placer::Candidate& c : plan.request.candidates) {
      if (c.id != plan.candidate) continue;
      for (const std::string& s : c.servers.at(plan.job)) reserved.insert(s);
    }
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

  if (absl::Status s = EnsureClient(); !s.ok()) return s;
  JobPlan plan;
  plan.job = job.key;
  plan.pods = job.pods;
  plan.created_ms = clock_();
  plan.request.options = options_.rank;
  absl::StatusOr<std::map<std::string, std::map<std::string, double>>> running =
      AddRunningJobs(plan.request, job.key);
  if (!running.ok()) return running.status();
  placer::Job new_job{job.key, profile->value_or(placer::TrafficProfile{}), std::nullopt};
  plan.request.jobs.push_back(new_job);
  // The running jobs' shares go once, in the request's running part; each
  // candidate names the new job's servers only.
  plan.request.running.links = *std::move(running);
  for (size_t i = 0; i < proposals.size(); ++i) {
    placer::Candidate c;
    c.id = absl::StrCat("c", i);
    c.servers[job.key] = proposals[i];
    plan.request.candidates.push_back(std::move(c));
  }
  v1::RankRequest wire = protocol::ToProto(plan.request);
  if (!profile->has_value()) {
    for (v1::Job& j : *wire.mutable_jobs()) {
      if (j.id() == job.key) j.clear_profile();
    }
  }
  // The plan reads the order only (the links' scores stay in phasord for the commit).
  wire.set_reply_detail(v1::RankRequest::ORDER);
  const uint64_t rank_request_bytes = wire.ByteSizeLong();
  absl::StatusOr<v1::RankReply> reply = client_->Rank(std::move(wire));
  if (!reply.ok()) return reply.status();
  if (reply->ranked_size() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job.key, ": phasord ranked no candidate",
                     reply->rejected_size() > 0 ? absl::StrCat(" (", reply->rejected(0).reason(), ")") : ""));
  }
  plan.ranking_id = reply->ranking_id();
  plan.candidate = reply->ranked(0).candidate();
  // The plan keeps the long form (`phasor rank` input, the re-rank of a
  // commit): every candidate with the running jobs' shares, as ranked.
  plan.rank_request_bytes = rank_request_bytes;
  placer::MoveRunningIntoCandidates(plan.request);
  for (const placer::Candidate& c : plan.request.candidates) {
    if (c.id != plan.candidate) continue;
    for (const std::string& s : c.servers.at(job.key)) plan.nodes.push_back(node_by_server_[s]);
  }
  return plan;
}

const JobPlan* Extender::PlanFor(const Pod& pod, const std::vector<Offered>& offered) {
  Expire();
  absl::StatusOr<std::optional<PodJob>> job = JobOfPod(pod, options_.groups);
  if (!job.ok()) {
    spdlog::warn("phasor-k8s-extender: pod {}/{}: {}", pod.namespace_, pod.name, std::string(job.status().message()));
    return nullptr;
  }
  if (!job->has_value()) return nullptr;
  Track(pod, **job);
  const std::string& key = (*job)->key;
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  if (failed_until_ms_.contains(key)) return nullptr;
  if (plans_.size() >= options_.max_plans) {
    ++stats_.plans_refused;
    return nullptr;
  }
  absl::StatusOr<JobPlan> plan = MakePlan(pod, **job, offered);
  if (!plan.ok()) {
    const bool phasord = absl::IsUnavailable(plan.status()) || absl::IsDeadlineExceeded(plan.status());
    ++(phasord ? stats_.plan_failures : stats_.plans_refused);
    if (phasord) client_.reset();  // a fresh socket next time: no queue of stale requests
    spdlog::warn("phasor-k8s-extender: no plan for job {}: {}", key, std::string(plan.status().message()));
    failed_until_ms_[key] = clock_() + options_.retry_after_ms;
    return nullptr;
  }
  ++stats_.plans;
  spdlog::info("phasor-k8s-extender: job {} planned on {} (ranking {}, {})", key, absl::StrJoin(plan->nodes, ","),
               plan->ranking_id, plan->candidate);
  return &(plans_[key] = *std::move(plan));
}

namespace {
// The plan's nodes not yet taken by one of its pods.
std::set<std::string> OpenNodes(const JobPlan& plan) {
  std::set<std::string> open(plan.nodes.begin(), plan.nodes.end());
  for (const auto& [pod, node] : plan.bound) open.erase(node);
  return open;
}
}  // namespace

ExtenderFilterResult Extender::Filter(const ExtenderArgs& args) {
  std::lock_guard<std::mutex> lock(mu_);
  ExtenderFilterResult result;
  const JobPlan* plan = PlanFor(args.pod, OfferedNodes(args));
  if (plan == nullptr) ++stats_.neutral_answers;
  std::set<std::string> keep;
  if (plan != nullptr && options_.filter_to_plan) {
    std::set<std::string> open = OpenNodes(*plan);
    auto offered = [&](const std::string& n) { return open.contains(n); };
    if (args.node_names) {
      for (const std::string& n : *args.node_names) if (offered(n)) keep.insert(n);
    } else {
      for (const Node& n : args.nodes->items) if (offered(n.name)) keep.insert(n.name);
    }
  }
  // Without a plan to honour (or none of its nodes offered), every node passes.
  const bool all = keep.empty();
  const std::string reason = plan ? absl::StrCat("phasor: not in the plan of job ", plan->job) : "";
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
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<Offered> offered = OfferedNodes(args);
  const JobPlan* plan = PlanFor(args.pod, offered);
  if (plan == nullptr) ++stats_.neutral_answers;
  const std::set<std::string> open = plan ? OpenNodes(*plan) : std::set<std::string>();
  HostPriorityList out;
  out.reserve(offered.size());
  for (const Offered& o : offered) {
    out.push_back({o.node, open.contains(o.node) ? kMaxExtenderPriority : kMinExtenderPriority});
  }
  return out;
}

ExtenderBindingResult Extender::Bind(const ExtenderBindingArgs& args) {
  // The API server call is made outside the lock (it may be slow).
  if (absl::Status s = bind_(args); !s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.bind_failures;
    return {absl::StrCat("bind ", args.pod_namespace, "/", args.pod_name, " to ", args.node, ": ", s.message())};
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.binds;
  auto tracked = pods_.find(args.pod_uid);
  if (tracked == pods_.end()) tracked = pods_.find(absl::StrCat(args.pod_namespace, "/", args.pod_name));
  if (tracked == pods_.end()) return {};
  auto plan = plans_.find(tracked->second.job);
  if (plan == plans_.end()) return {};
  plan->second.bound[tracked->first] = args.node;
  if (plan->second.bound.size() >= plan->second.pods) {
    Commit(plan->second);
    plans_.erase(plan);
  }
  return {};
}

void Extender::Commit(JobPlan& plan) {
  std::set<std::string> bound_nodes;
  for (const auto& [pod, node] : plan.bound) bound_nodes.insert(node);
  const std::set<std::string> planned(plan.nodes.begin(), plan.nodes.end());
  absl::Status status = EnsureClient();
  uint64_t ranking_id = plan.ranking_id;
  std::string candidate = plan.candidate;
  if (status.ok() && bound_nodes != planned) {
    // The pods landed elsewhere: rank exactly what happened, so the offsets
    // phasord publishes belong to the real placement.
    ++stats_.commits_replanned;
    std::map<std::string, std::string> server_by_node;
    for (const auto& [server, node] : node_by_server_) server_by_node[node] = server;
    placer::RankRequest request = plan.request;
    placer::Candidate real = request.candidates.front();
    real.id = "bound";
    real.servers[plan.job].clear();
    // Plan order first for the nodes that were planned, then the others.
    for (const std::string& n : plan.nodes) {
      if (bound_nodes.contains(n)) real.servers[plan.job].push_back(server_by_node[n]);
    }
    for (const std::string& n : bound_nodes) {
      if (planned.contains(n)) continue;
      auto s = server_by_node.find(n);
      real.servers[plan.job].push_back(s != server_by_node.end() ? s->second : n);
    }
    request.candidates = {real};
    v1::RankRequest wire = protocol::ToProto(request);
    wire.set_reply_detail(v1::RankRequest::ORDER);
    absl::StatusOr<v1::RankReply> reply = client_->Rank(std::move(wire));
    if (!reply.ok()) {
      status = reply.status();
    } else if (reply->ranked_size() == 0) {
      status = absl::FailedPreconditionError(absl::StrCat(
          "the bound placement was rejected", reply->rejected_size() ? ": " + reply->rejected(0).reason() : ""));
    } else {
      ranking_id = reply->ranking_id();
      candidate = "bound";
    }
  }
  if (status.ok()) status = client_->Commit(ranking_id, candidate).status();
  if (!status.ok()) {
    ++stats_.commit_failures;
    if (absl::IsUnavailable(status)) client_.reset();
    spdlog::warn("phasor-k8s-extender: job {} bound but not committed (no offsets): {}", plan.job, std::string(status.message()));
    return;
  }
  ++stats_.commits;
  spdlog::info("phasor-k8s-extender: job {} committed (ranking {}, {})", plan.job, ranking_id, candidate);
}

std::optional<JobPlan> Extender::PlanOf(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(job);
  if (it == plans_.end()) return std::nullopt;
  return it->second;
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
  counter("phasor_k8s_plans_expired_total", "Plans whose pods did not all bind within the TTL.", s.plans_expired);
  counter("phasor_k8s_plans_refused_total", "Jobs not planned (limit, too few nodes, bad profile).", s.plans_refused);
  counter("phasor_k8s_neutral_answers_total", "Filter/prioritize answers without a plan.", s.neutral_answers);
  counter("phasor_k8s_binds_total", "Pods bound.", s.binds);
  counter("phasor_k8s_bind_failures_total", "Binds the API server refused.", s.bind_failures);
  counter("phasor_k8s_commits_total", "Jobs committed to phasord.", s.commits);
  counter("phasor_k8s_commits_replanned_total", "Commits of placements other than the plan.", s.commits_replanned);
  counter("phasor_k8s_commit_failures_total", "Bound jobs phasord did not accept.", s.commit_failures);
  return out;
}

}  // namespace phasor::kubernetes
