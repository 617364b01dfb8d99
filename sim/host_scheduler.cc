#include "sim/host_scheduler.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

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

}  // namespace

absl::StatusOr<std::unique_ptr<HostSchedulerAdapter>> MakeReferenceScheduler(
    std::string_view name, const ModelCatalog* models) {
  if (name == "consolidate") {
    return std::make_unique<ReferenceScheduler>(Policy::kConsolidate, models);
  }
  if (name == "themis") return std::make_unique<ReferenceScheduler>(Policy::kThemis, models);
  if (name == "pollux") return std::make_unique<ReferenceScheduler>(Policy::kPollux, models);
  return absl::InvalidArgumentError(
      absl::StrCat("scheduler '", std::string(name), "': must be themis, pollux or consolidate"));
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
