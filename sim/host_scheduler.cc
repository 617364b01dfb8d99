#include "sim/host_scheduler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "placer/candidates.h"

namespace phasor::sim {
namespace {

enum class Policy { kConsolidate, kThemis, kPollux };

// GPUs per server for `gpus` GPUs, at most `limit` on any one server.
std::vector<uint32_t> Shape(uint32_t gpus, uint32_t limit) {
  std::vector<uint32_t> shape;
  limit = std::max<uint32_t>(1, limit);
  while (gpus > 0) {
    const uint32_t take = std::min(gpus, limit);
    shape.push_back(take);
    gpus -= take;
  }
  return shape;
}

class ReferenceScheduler final : public HostSchedulerAdapter {
 public:
  ReferenceScheduler(Policy policy, const ModelCatalog* models) : policy_(policy), models_(models) {}

  std::string_view name() const override {
    switch (policy_) {
      case Policy::kConsolidate:
        return "consolidate";
      case Policy::kThemis:
        return "themis";
      case Policy::kPollux:
        return "pollux";
    }
    return "";
  }

  absl::StatusOr<std::vector<CandidateAllocation>> Propose(const SchedulingRound& round,
                                                           uint32_t k) override {
    std::vector<const PendingJob*> order;
    for (const PendingJob& job : round.pending) order.push_back(&job);
    if (policy_ == Policy::kThemis) {
      // Finish-time fairness: the job furthest behind its fair share first.
      auto rho = [&](const PendingJob* j) {
        const double size = std::max(1.0, j->isolated_run_us);
        return (round.now_us - j->arrival_us + size) / size;
      };
      std::stable_sort(order.begin(), order.end(),
                       [&](const PendingJob* a, const PendingJob* b) { return rho(a) > rho(b); });
    }
    std::vector<std::string> racks;
    uint32_t per_server = 1;
    for (const ServerView& s : round.servers) {
      if (std::find(racks.begin(), racks.end(), s.rack) == racks.end()) racks.push_back(s.rack);
      per_server = std::max(per_server, s.gpus);
    }
    std::sort(racks.begin(), racks.end());
    std::vector<CandidateAllocation> out;
    std::set<std::map<std::string, std::vector<std::string>>> seen;
    for (uint32_t c = 0; c < std::max<uint32_t>(1, k) * 2 && out.size() < k; ++c) {
      std::map<std::string, uint32_t> free;
      for (const ServerView& s : round.servers) free[s.id] = s.free_gpus;
      CandidateAllocation candidate;
      const size_t rack_start = racks.empty() ? 0 : c / 2 % racks.size();
      const bool spread = c % 2 == 1;
      for (const PendingJob* job : order) {
        std::vector<uint32_t> shape = ShapeFor(*job, per_server, round.servers.size(), spread);
        std::vector<std::string> servers = Place(round, racks, rack_start, free, shape);
        if (servers.empty()) continue;  // backfill: later jobs may still fit
        for (const std::string& s : servers) --free[s];
        candidate.servers[job->id] = std::move(servers);
      }
      if (candidate.servers.empty()) continue;
      if (!seen.insert(candidate.servers).second) continue;
      candidate.id = absl::StrCat(std::string(name()), "-", out.size());
      out.push_back(std::move(candidate));
    }
    return out;
  }

 private:
  std::vector<uint32_t> ShapeFor(const PendingJob& job, uint32_t per_server, size_t servers,
                                 bool spread) const {
    if (policy_ != Policy::kPollux || models_ == nullptr) {
      return Shape(job.gpus, spread ? std::max<uint32_t>(1, per_server / 2) : per_server);
    }
    // Goodput: the shape whose measured step is shortest (same local batch).
    std::vector<std::pair<double, std::vector<uint32_t>>> options;
    for (uint32_t limit = per_server; limit >= 1; limit /= 2) {
      std::vector<uint32_t> shape = Shape(job.gpus, limit);
      if (shape.size() > servers && limit != per_server) break;  // more servers than exist
      std::string placement;
      for (uint32_t g : shape) placement += static_cast<char>('0' + std::min<uint32_t>(g, 9));
      absl::StatusOr<ModelTiming> t = models_->Lookup(job.model, placement);
      const double step = t.ok() ? t->compute_us + t->sync_us : 1e18 + limit;
      options.emplace_back(step, std::move(shape));
      if (limit == 1) break;
    }
    std::stable_sort(options.begin(), options.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    return options[spread && options.size() > 1 ? 1 : 0].second;
  }

  // Servers for `shape` (GPUs per server): inside one rack when possible
  // (racks tried from `rack_start`, best fit within a rack), else across
  // racks in that order. Empty when the free GPUs cannot hold it.
  static std::vector<std::string> Place(const SchedulingRound& round,
                                        const std::vector<std::string>& racks, size_t rack_start,
                                        const std::map<std::string, uint32_t>& free,
                                        const std::vector<uint32_t>& shape) {
    auto fits_in = [&](const std::vector<const ServerView*>& pool) {
      std::vector<std::string> servers;
      std::vector<const ServerView*> sorted = pool;
      std::stable_sort(sorted.begin(), sorted.end(), [&](const ServerView* a, const ServerView* b) {
        return free.at(a->id) < free.at(b->id);
      });
      std::set<std::string> used;
      for (uint32_t g : shape) {
        const ServerView* pick = nullptr;
        for (const ServerView* s : sorted) {
          if (!used.contains(s->id) && free.at(s->id) >= g) {
            pick = s;
            break;
          }
        }
        if (pick == nullptr) return std::vector<std::string>{};
        used.insert(pick->id);
        for (uint32_t i = 0; i < g; ++i) servers.push_back(pick->id);
      }
      return servers;
    };
    std::vector<const ServerView*> all;
    for (size_t r = 0; r < std::max<size_t>(1, racks.size()); ++r) {
      const std::string& rack = racks.empty() ? "" : racks[(rack_start + r) % racks.size()];
      std::vector<const ServerView*> pool;
      for (const ServerView& s : round.servers) {
        if (s.rack == rack && free.at(s.id) > 0) pool.push_back(&s);
      }
      std::vector<std::string> servers = fits_in(pool);
      if (!servers.empty()) return servers;
      all.insert(all.end(), pool.begin(), pool.end());
    }
    // Across racks: keep the rack order, best fit inside each rack.
    std::vector<std::string> servers;
    std::set<std::string> used;
    for (uint32_t g : shape) {
      const ServerView* pick = nullptr;
      for (const ServerView* s : all) {
        if (!used.contains(s->id) && free.at(s->id) >= g) {
          pick = s;
          break;
        }
      }
      if (pick == nullptr) return {};
      used.insert(pick->id);
      for (uint32_t i = 0; i < g; ++i) servers.push_back(pick->id);
    }
    return servers;
  }

  Policy policy_;
  const ModelCatalog* models_;
};

// The cluster managers' own placement, one job at a time in arrival order
// (each skipped while it does not fit: kube-scheduler's backoff queue,
// Slurm's and Volcano's backfill), whole jobs only (gang scheduling), one
// decision per round (k ignored): these hosts propose no alternatives.
class ClusterManager : public HostSchedulerAdapter {
 public:
  absl::StatusOr<std::vector<CandidateAllocation>> Propose(const SchedulingRound& round, uint32_t) override {
    std::map<std::string, uint32_t> free;
    for (const ServerView& s : round.servers) free[s.id] = s.free_gpus;
    CandidateAllocation candidate;
    for (const PendingJob& job : round.pending) {
      std::vector<std::string> entries = PlaceJob(round, free, job);
      if (entries.empty()) continue;
      for (const std::string& s : entries) --free[s];
      candidate.servers[job.id] = std::move(entries);
    }
    if (candidate.servers.empty()) return std::vector<CandidateAllocation>{};
    candidate.id = std::string(name());
    return std::vector<CandidateAllocation>{std::move(candidate)};
  }

 protected:
  // One entry per GPU in rank order, or empty when the job does not fit.
  virtual std::vector<std::string> PlaceJob(const SchedulingRound& round, const std::map<std::string, uint32_t>& free,
                                            const PendingJob& job) = 0;

  // The job's pods: one per server's worth of GPUs (a training operator's
  // worker per node), the last one with the rest.
  static std::vector<uint32_t> Pods(const SchedulingRound& round, const PendingJob& job) {
    uint32_t per_server = 1;
    for (const ServerView& s : round.servers) per_server = std::max(per_server, s.gpus);
    return Shape(job.gpus, per_server);
  }
};

// kube-scheduler's default profile, pod by pod in pod-index order:
// NodeResourcesFit filters the nodes with the pod's GPUs free and scores them
// LeastAllocated (the free share of the node's GPUs after the pod, 0-100,
// integer as the framework's scores are), so pods spread over the emptiest
// nodes; BalancedAllocation scores how evenly a node's resources are used,
// and with CPU and memory requested in proportion to GPUs it is the same on
// every node, so it decides nothing here. No topology plugin. Among the best
// scores kube-scheduler picks one at random (seeded here by the job and pod).
// Rank i is pod index i (Indexed Job, JobSet, Kubeflow), on wherever pod i
// landed: the ring follows the pods' order, racks interleaved.
class KubeScheduler final : public ClusterManager {
 public:
  explicit KubeScheduler(uint64_t seed) : seed_(seed) {}
  std::string_view name() const override { return "kube"; }

 private:
  std::vector<std::string> PlaceJob(const SchedulingRound& round, const std::map<std::string, uint32_t>& free_in,
                                    const PendingJob& job) override {
    std::map<std::string, uint32_t> free = free_in;
    std::vector<std::string> entries;
    const std::vector<uint32_t> pods = Pods(round, job);
    for (size_t pod = 0; pod < pods.size(); ++pod) {
      int64_t best_score = -1;
      std::vector<const ServerView*> best;
      for (const ServerView& s : round.servers) {
        const uint32_t f = free.at(s.id);
        if (f < pods[pod] || s.gpus == 0) continue;
        const int64_t score = static_cast<int64_t>((f - pods[pod]) * 100 / s.gpus);
        if (score > best_score) {
          best_score = score;
          best.clear();
        }
        if (score == best_score) best.push_back(&s);
      }
      if (best.empty()) return {};
      uint64_t h = seed_ ^ (std::hash<std::string>{}(job.id) + 0x9e3779b97f4a7c15ULL * (pod + 1));
      h ^= h >> 33;
      h *= 0xff51afd7ed558ccdULL;
      h ^= h >> 33;
      const ServerView* pick = best[h % best.size()];
      free[pick->id] -= pods[pod];
      entries.insert(entries.end(), pods[pod], pick->id);
    }
    return entries;
  }

  uint64_t seed_;
};

// Slurm with the topology/tree plugin (select/cons_tres, whole nodes for
// multi-node jobs): the lowest switch that holds the job, best fit, from
// placer::LeafCandidates (the enumeration the Slurm controller uses too);
// ranks in node order (Slurm numbers a job's tasks along its sorted node
// list, the fabric's order here). A job of fewer GPUs than a server takes
// the fullest server that fits.
class SlurmTreeScheduler final : public ClusterManager {
 public:
  std::string_view name() const override { return "slurm-tree"; }

 private:
  std::vector<std::string> PlaceJob(const SchedulingRound& round, const std::map<std::string, uint32_t>& free,
                                    const PendingJob& job) override {
    const std::vector<uint32_t> pods = Pods(round, job);
    if (pods.size() == 1) {
      const ServerView* pick = nullptr;
      for (const ServerView& s : round.servers) {
        if (free.at(s.id) >= pods[0] && (pick == nullptr || free.at(s.id) < free.at(pick->id))) pick = &s;
      }
      return pick == nullptr ? std::vector<std::string>{} : std::vector<std::string>(pods[0], pick->id);
    }
    std::vector<placer::RackedServer> servers;
    std::set<std::string> whole;  // multi-node jobs get whole nodes
    for (const ServerView& s : round.servers) {
      servers.push_back({s.id, s.rack});
      if (free.at(s.id) == s.gpus && s.gpus >= pods[0]) whole.insert(s.id);
    }
    absl::StatusOr<std::vector<placer::ServerSet>> sets =
        placer::LeafCandidates(servers, whole, static_cast<uint32_t>(pods.size()), 1);
    if (!sets.ok() || sets->empty()) return {};
    std::vector<std::string> entries;
    for (size_t i = 0; i < pods.size(); ++i) entries.insert(entries.end(), pods[i], (*sets)[0].servers[i]);
    return entries;
  }
};

// Volcano with the binpack plugin and network-topology-aware scheduling in
// hard mode: every pod of a job inside one HyperNode of the lowest tier that
// can hold the job at all (a leaf switch when the job fits a rack's GPUs,
// else the whole fabric), the job pending while no such HyperNode has room;
// among the HyperNodes that fit, the most used one (its hypernode binpack),
// and inside it the most used nodes first (binpack), pod by pod; ranks by
// pod index in that order. The strongest topology-aware peer: it never
// splits a job over racks it could keep in one.
class VolcanoScheduler final : public ClusterManager {
 public:
  std::string_view name() const override { return "volcano"; }

 private:
  std::vector<std::string> PlaceJob(const SchedulingRound& round, const std::map<std::string, uint32_t>& free,
                                    const PendingJob& job) override {
    const std::vector<uint32_t> pods = Pods(round, job);
    std::map<std::string, std::vector<const ServerView*>> racks;
    std::map<std::string, uint32_t> rack_gpus, rack_used;
    for (const ServerView& s : round.servers) {
      racks[s.rack].push_back(&s);
      rack_gpus[s.rack] += s.gpus;
      rack_used[s.rack] += s.gpus - free.at(s.id);
    }
    uint32_t largest_rack = 0;
    for (const auto& [rack, gpus] : rack_gpus) largest_rack = std::max(largest_rack, gpus);
    // Pods binpacked onto `pool`: the most used nodes that fit first.
    auto binpack = [&](const std::vector<const ServerView*>& pool) {
      std::map<std::string, uint32_t> left = free;
      std::vector<std::string> entries;
      for (uint32_t pod : pods) {
        const ServerView* pick = nullptr;
        for (const ServerView* s : pool) {
          if (left.at(s->id) < pod) continue;
          if (pick == nullptr || left.at(s->id) < left.at(pick->id)) pick = s;
        }
        if (pick == nullptr) return std::vector<std::string>{};
        left[pick->id] -= pod;
        entries.insert(entries.end(), pod, pick->id);
      }
      return entries;
    };
    if (job.gpus <= largest_rack) {
      std::vector<std::string> order;
      for (const auto& [rack, pool] : racks) order.push_back(rack);
      std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
        return rack_used[a] * rack_gpus[b] > rack_used[b] * rack_gpus[a];  // the most used share first
      });
      for (const std::string& rack : order) {
        std::vector<std::string> entries = binpack(racks[rack]);
        if (!entries.empty()) return entries;
      }
      return {};  // hard mode: the job waits for a rack
    }
    std::vector<const ServerView*> all;
    for (const ServerView& s : round.servers) all.push_back(&s);
    return binpack(all);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<HostSchedulerAdapter>> MakeReferenceScheduler(
    std::string_view name, const ModelCatalog* models, uint64_t seed) {
  if (name == "consolidate") {
    return std::make_unique<ReferenceScheduler>(Policy::kConsolidate, models);
  }
  if (name == "themis") return std::make_unique<ReferenceScheduler>(Policy::kThemis, models);
  if (name == "pollux") return std::make_unique<ReferenceScheduler>(Policy::kPollux, models);
  if (name == "kube") return std::make_unique<KubeScheduler>(seed);
  if (name == "slurm-tree") return std::make_unique<SlurmTreeScheduler>();
  if (name == "volcano") return std::make_unique<VolcanoScheduler>();
  return absl::InvalidArgumentError(absl::StrCat(
      "scheduler '", std::string(name), "': must be themis, pollux, consolidate, kube, slurm-tree or volcano"));
}

std::string PlacementString(const std::vector<std::string>& servers) {
  std::vector<std::pair<std::string, uint32_t>> counts;
  for (const std::string& s : servers) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == s; });
    if (it == counts.end()) {
      counts.emplace_back(s, 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [server, n] : counts) out += static_cast<char>('0' + std::min<uint32_t>(n, 9));
  return out;
}

}  // namespace phasor::sim
