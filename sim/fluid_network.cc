#include "sim/fluid_network.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace phasor::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Gbit/s to bits per microsecond.
constexpr double kBitsPerUsPerGbps = 1e3;
// Phase ends within this many microseconds of the clock are due now (float
// rounding of sums of event times).
constexpr double kTimeSlackUs = 1e-6;

// A grid anchor_us + n x period_us given for `what` (e.g. "shift of 'a'").
absl::Status CheckGrid(const std::string& what, double anchor_us, double period_us) {
  if (!(period_us > 0) || !std::isfinite(period_us)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": period_us must be > 0"));
  }
  if (!std::isfinite(anchor_us)) return absl::InvalidArgumentError(absl::StrCat(what, ": anchor_us must be finite"));
  return absl::OkStatus();
}

}  // namespace

FluidNetwork::FluidNetwork(std::vector<SimLink> links, FluidNetworkOptions options)
    : options_(std::move(options)) {
  links_.resize(links.size());
  fill_.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    links_[i].capacity_gbps = links[i].capacity_gbps;
    links_[i].stats.id = links[i].id;
    links_[i].stats.capacity_gbps = links[i].capacity_gbps;
    link_index_.emplace(links[i].id, static_cast<uint32_t>(i));
  }
  for (const std::string& id : options_.record_links) {
    auto it = link_index_.find(id);
    if (it != link_index_.end() && links_[it->second].record_index < 0) {
      links_[it->second].record_index = static_cast<int>(series_.size());
      series_.emplace_back();
    }
  }
  link_flows_.resize(links_.size());
  active_mark_.resize(links_.size());
  changed_mark_.resize(links_.size());
}

absl::Status FluidNetwork::ValidateLinks(const std::vector<SimLink>& links) {
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string field = absl::StrCat("links[", i, "]");
    if (links[i].id.empty()) return absl::InvalidArgumentError(field + ".id: must not be empty");
    if (!seen.emplace(links[i].id, i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".id: '", links[i].id, "' is already links[", seen[links[i].id], "]"));
    }
    if (!(links[i].capacity_gbps > 0) || !std::isfinite(links[i].capacity_gbps)) {
      return absl::InvalidArgumentError(field + ".capacity_gbps: must be > 0");
    }
  }
  return absl::OkStatus();
}

absl::Status FluidNetwork::AddJob(const SimJob& job) {
  const std::string field = absl::StrCat("jobs['", job.id, "']");
  if (job.id.empty()) return absl::InvalidArgumentError("jobs[].id: must not be empty");
  if (job_ids_.contains(job.id)) {
    return absl::InvalidArgumentError(field + ".id: already used by another job");
  }
  if (!(job.compute_us >= 0) || !std::isfinite(job.compute_us)) {
    return absl::InvalidArgumentError(field + ".compute_us: must be >= 0");
  }
  if (!(job.comm_bytes >= 0) || !std::isfinite(job.comm_bytes)) {
    return absl::InvalidArgumentError(field + ".comm_bytes: must be >= 0");
  }
  if (!(job.nic_gbps > 0) || !std::isfinite(job.nic_gbps)) {
    return absl::InvalidArgumentError(field + ".nic_gbps: must be > 0");
  }
  if (job.iterations < 1) return absl::InvalidArgumentError(field + ".iterations: must be >= 1");
  if (job.compute_us == 0 && job.comm_bytes == 0) {
    return absl::InvalidArgumentError(field + ": compute_us and comm_bytes are both 0");
  }
  if (!(job.start_us >= now_us_) || !std::isfinite(job.start_us)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".start_us: ", job.start_us, " is before the clock (", now_us_, ")"));
  }
  if (!(job.pace_period_us >= 0) || !std::isfinite(job.pace_period_us)) {
    return absl::InvalidArgumentError(field + ".pace_period_us: must be >= 0");
  }
  if (!(job.realign_period_us >= 0) || !std::isfinite(job.realign_period_us)) {
    return absl::InvalidArgumentError(field + ".realign_period_us: must be >= 0");
  }
  if (!std::isfinite(job.realign_anchor_us)) {
    return absl::InvalidArgumentError(field + ".realign_anchor_us: must be finite");
  }
  if (!(job.realign_threshold_us >= 0) || !std::isfinite(job.realign_threshold_us)) {
    return absl::InvalidArgumentError(field + ".realign_threshold_us: must be >= 0");
  }
  if (!(job.realign_min_interval_us >= 0) || !std::isfinite(job.realign_min_interval_us)) {
    return absl::InvalidArgumentError(field + ".realign_min_interval_us: must be >= 0");
  }
  if (!(job.realign_max_wait_fraction >= 0 && job.realign_max_wait_fraction <= 1)) {
    return absl::InvalidArgumentError(field + ".realign_max_wait_fraction: must be in [0, 1]");
  }
  JobState state;
  state.spec = job;
  for (const auto& [link, share] : job.links) {
    auto it = link_index_.find(link);
    if (it == link_index_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".links: link '", link, "' is not defined"));
    }
    // A share above 1 is legal here: a link crossed by k hops of a ring
    // carries k times the job's NIC-level traffic.
    if (!(share >= 0) || !std::isfinite(share)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".links['", link, "']: share ", share, " must be >= 0"));
    }
    if (share > 0) state.links.emplace_back(it->second, share);
  }
  state.phase = Phase::kWaiting;
  state.phase_end_us = job.start_us;
  state.last_end_us = job.start_us;
  state.pace_anchor_us = job.start_us;
  state.stats_index = job_stats_.size();
  JobStats stats;
  stats.id = job.id;
  stats.start_us = job.start_us;
  stats.last_end_us = job.start_us;
  if (options_.keep_iteration_times) stats.iteration_us.reserve(std::min<uint64_t>(job.iterations, 1u << 20));
  job_stats_.push_back(std::move(stats));
  job_ids_.emplace(job.id, state.stats_index);
  jobs_.push_back(std::move(state));
  ++running_;
  return absl::OkStatus();
}

absl::Status FluidNetwork::RemoveJob(const std::string& id) {
  for (size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i].spec.id != id) continue;
    if (jobs_[i].phase == Phase::kComm) rates_dirty_ = true;
    job_stats_[jobs_[i].stats_index].finish_us = now_us_;
    jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(i));
    link_flows_valid_ = false;
    --running_;
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("job '", id, "' is not running"));
}

absl::Status FluidNetwork::SetRealignGrid(const std::string& id, double anchor_us, double period_us) {
  if (absl::Status s = CheckGrid(absl::StrCat("realign grid of '", id, "'"), anchor_us, period_us); !s.ok()) return s;
  for (JobState& job : jobs_) {
    if (job.spec.id != id) continue;
    if (job.spec.realign_period_us > 0) {
      job.spec.realign_period_us = period_us;
      job.spec.realign_anchor_us = anchor_us;
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("job '", id, "' is not running"));
}

absl::Status FluidNetwork::ShiftNextIteration(const std::string& id, double anchor_us,
                                              double period_us) {
  if (absl::Status s = CheckGrid(absl::StrCat("shift of '", id, "'"), anchor_us, period_us); !s.ok()) return s;
  for (JobState& job : jobs_) {
    if (job.spec.id != id) continue;
    if (job.phase == Phase::kWaiting && job.done == 0) {
      // Not started yet: its first iteration moves to the slot.
      const double n = std::ceil((job.phase_end_us - anchor_us - kTimeSlackUs) / period_us);
      job.phase_end_us = std::max(job.phase_end_us, anchor_us + n * period_us);
      job.last_end_us = job.phase_end_us;
      JobStats& stats = job_stats_[job.stats_index];
      stats.start_us = stats.last_end_us = job.phase_end_us;
      ++stats.shifts;
      job.shift_period_us = 0;
      return absl::OkStatus();
    }
    job.shift_anchor_us = anchor_us;
    job.shift_period_us = period_us;
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("job '", id, "' is not running"));
}

void FluidNetwork::StartIteration(JobState& job, double at_us) {
  job.iteration_start_us = at_us;
  if (job.spec.compute_us > 0) {
    job.phase = Phase::kCompute;
    job.phase_end_us = at_us + job.spec.compute_us;
    return;
  }
  job.phase = Phase::kComm;
  job.remaining_bits = job.spec.comm_bytes * 8;
  job.rate_gbps = 0;
  rates_dirty_ = true;
}

void FluidNetwork::FinishIteration(JobState& job, std::vector<std::string>& completed) {
  JobStats& stats = job_stats_[job.stats_index];
  const double iteration = now_us_ - job.last_end_us;
  stats.iteration_sum_us += iteration;
  if (options_.keep_iteration_times) stats.iteration_us.push_back(iteration);
  ++stats.iterations_done;
  job.last_end_us = now_us_;
  stats.last_end_us = now_us_;
  ++job.done;
  if (job.done >= job.spec.iterations) {
    job.phase = Phase::kDone;
    stats.finish_us = now_us_;
    stats.finished = true;
    completed.push_back(job.spec.id);
    return;
  }
  if (job.shift_period_us > 0) {
    const double period = job.shift_period_us;
    const double n = std::ceil((now_us_ - job.shift_anchor_us - kTimeSlackUs) / period);
    const double slot = job.shift_anchor_us + n * period;
    job.shift_period_us = 0;
    ++stats.shifts;
    if (slot > now_us_ + kTimeSlackUs) {
      job.phase = Phase::kWaiting;
      job.phase_end_us = slot;
      return;
    }
    StartIteration(job, now_us_);
    return;
  }
  if (job.spec.pace_period_us > 0) {
    // The next slot at or after now (a slot within the float slack counts as now).
    const double period = job.spec.pace_period_us;
    if (job.spec.pace_reslot && now_us_ - job.iteration_start_us > period + kTimeSlackUs) {
      // Overran its slot: start now, the grid moves here.
      job.pace_anchor_us = now_us_;
      ++stats.reslots;
      StartIteration(job, now_us_);
      return;
    }
    const double n = std::ceil((now_us_ - job.pace_anchor_us - kTimeSlackUs) / period);
    const double slot = job.pace_anchor_us + std::max(0.0, n) * period;
    if (slot > now_us_ + kTimeSlackUs) {
      job.phase = Phase::kWaiting;
      job.phase_end_us = slot;
      return;
    }
  } else if (job.spec.realign_period_us > 0 &&
             now_us_ - job.last_realign_us >= job.spec.realign_min_interval_us) {
    const double period = job.spec.realign_period_us;
    double error = std::fmod(now_us_ - job.spec.realign_anchor_us, period);
    if (error < 0) error += period;
    if (error > period / 2) error -= period;  // wrapped to +-period/2; < 0: early
    const double wait = error > 0 ? period - error : -error;
    if (std::abs(error) > job.spec.realign_threshold_us &&
        wait <= job.spec.realign_max_wait_fraction * period + kTimeSlackUs) {
      job.last_realign_us = now_us_;
      ++stats.realignments;
      job.phase = Phase::kWaiting;
      job.phase_end_us = now_us_ + wait;
      return;
    }
  }
  StartIteration(job, now_us_);
}

void FluidNetwork::Accumulate(double dt_us) {
  if (dt_us <= 0) return;
  for (JobState& job : jobs_) {
    if (job.phase != Phase::kComm || job.rate_gbps <= 0) continue;
    const double bits = std::min(job.remaining_bits, job.rate_gbps * kBitsPerUsPerGbps * dt_us);
    job.remaining_bits -= bits;
    job_stats_[job.stats_index].bytes_delivered += bits / 8;
  }
  for (uint32_t l : active_links_) {
    LinkState& link = links_[l];
    if (fill_[l].load_gbps <= 0) continue;
    const double bytes = fill_[l].load_gbps * kBitsPerUsPerGbps * dt_us / 8;
    link.stats.bytes += bytes;
    link.stats.busy_us += dt_us;
    if (link.demand_gbps > link.capacity_gbps * (1 + 1e-9)) {
      link.stats.overload_us += dt_us;
      link.stats.excess_bytes += bytes;
    }
  }
}

void FluidNetwork::RecomputeRates() {
  rates_dirty_ = false;
  for (uint32_t l : active_links_) {
    fill_[l].load_gbps = 0;
    links_[l].demand_gbps = 0;
  }
  active_links_.clear();
  if (!link_flows_valid_) {
    for (std::vector<LinkFlow>& flows : link_flows_) flows.clear();
    for (JobState& job : jobs_) job.in_link_flows = false;
    link_flows_valid_ = true;
  }
  // Progressive filling: every unfrozen flow runs at `level`; a link saturates
  // when frozen load + level * (its unfrozen weight) reaches its capacity.
  // Each round walks only the flows still unfrozen and the links some of them
  // still load (both kept in their first order, so every sum below is taken
  // in the order a walk over every job and link would take it).
  //
  // Between two fills usually one flow starts or ends, so link_flows_ and
  // its sums are updated only for the links of the flows that did; the sums
  // are taken afresh over the link's flows in job order, as a walk over
  // every job would take them, never by adding or subtracting the change.
  // (Keeping active_links_ in order across fills as well was 0.85x on
  // sim_bench's hour but 1.2x on trace replays over 24 servers, where each
  // change moves most of a few links: it is rebuilt by the walk below.)
  ++fill_count_;
  changed_links_.clear();
  unfrozen_.clear();
  for (uint32_t j = 0; j < jobs_.size(); ++j) {
    JobState& job = jobs_[j];
    const bool comm = job.phase == Phase::kComm;
    if (comm != job.in_link_flows) {
      job.in_link_flows = comm;
      for (const auto& [l, share] : job.links) {
        std::vector<LinkFlow>& flows = link_flows_[l];
        auto at = std::lower_bound(flows.begin(), flows.end(), j,
                                   [](const LinkFlow& f, uint32_t k) { return f.job < k; });
        if (comm) {
          flows.insert(at, {j, share});
        } else {
          flows.erase(at);
        }
        if (changed_mark_[l] != fill_count_) {
          changed_mark_[l] = fill_count_;
          changed_links_.push_back(l);
        }
      }
    }
    if (!comm) continue;
    job.frozen = false;
    job.rate_gbps = 0;
    unfrozen_.push_back(j);
    for (const auto& link : job.links) {
      if (active_mark_[link.first] != fill_count_) {
        active_mark_[link.first] = fill_count_;
        active_links_.push_back(link.first);
      }
    }
  }
  for (uint32_t l : changed_links_) {
    LinkState& link = links_[l];
    const std::vector<LinkFlow>& flows = link_flows_[l];
    link.flows_weight = 0;
    link.flows_demand_gbps = 0;
    fill_[l].saturation_margin_gbps =
        link.capacity_gbps * (2e-12 + 1e-15 * static_cast<double>(flows.size() + 2));
    for (const LinkFlow& flow : flows) {
      link.flows_weight += flow.share;
      link.flows_demand_gbps += flow.share * jobs_[flow.job].spec.nic_gbps;
    }
  }
  for (uint32_t l : active_links_) {
    LinkState& link = links_[l];
    fill_[l].residual_gbps = link.capacity_gbps;
    fill_[l].unfrozen_weight = link.flows_weight;
    fill_[l].load_gbps = 0;
    link.demand_gbps = link.flows_demand_gbps;
  }
  live_links_ = active_links_;
  auto freeze = [&](JobState& job, double rate) {
    job.frozen = true;
    job.rate_gbps = rate;
    for (const auto& [l, share] : job.links) {
      LinkFill& link = fill_[l];
      link.residual_gbps -= share * rate;
      link.unfrozen_weight -= share;
      link.load_gbps += share * rate;
    }
  };
  while (true) {
    // Drop the flows the last round froze; the lowest NIC cap of the rest.
    double min_nic = kInf;
    size_t kept = 0;
    for (uint32_t j : unfrozen_) {
      if (jobs_[j].frozen) continue;
      unfrozen_[kept++] = j;
      min_nic = std::min(min_nic, jobs_[j].spec.nic_gbps);
    }
    unfrozen_.resize(kept);
    if (kept == 0) break;
    // Drop the links no unfrozen flow loads any more; the level is the lowest
    // of the NIC caps and the links' fair shares. A link whose slack
    // residual - level x weight exceeds its saturation margin (header) at the
    // running level has a fair share above the final level, and it cannot
    // pass the saturation test below either, whatever the flows frozen
    // before its turn do to its sums: it is neither divided nor tested. The
    // others, usually a handful, are kept in order as candidates.
    double level = min_nic;
    kept = 0;
    candidates_.clear();
    for (uint32_t l : live_links_) {
      const LinkFill& link = fill_[l];
      if (!(link.unfrozen_weight > 1e-12)) continue;
      live_links_[kept++] = l;
      if (link.residual_gbps - level * link.unfrozen_weight > link.saturation_margin_gbps) continue;
      candidates_.push_back(l);
      level = std::min(level, std::max(0.0, link.residual_gbps) / link.unfrozen_weight);
    }
    live_links_.resize(kept);
    // Saturated links first (their flows freeze at `level`), then NIC caps.
    for (uint32_t l : candidates_) {
      const LinkFill& link = fill_[l];
      if (link.unfrozen_weight <= 1e-12) continue;
      const double tolerance = links_[l].capacity_gbps * 1e-12;
      if (link.residual_gbps - level * link.unfrozen_weight > tolerance) continue;
      for (const auto& flow : link_flows_[l]) {
        if (!jobs_[flow.job].frozen) freeze(jobs_[flow.job], level);
      }
    }
    // Most rounds end at a link below every NIC cap: no flow can freeze at its cap.
    if (min_nic <= level * (1 + 1e-12)) {
      for (uint32_t j : unfrozen_) {
        JobState& job = jobs_[j];
        if (!job.frozen && job.spec.nic_gbps <= level * (1 + 1e-12)) freeze(job, job.spec.nic_gbps);
      }
    }
  }
  Record();
}

void FluidNetwork::Record() {
  if (series_.empty() || now_us_ >= options_.record_to_us) return;
  for (size_t l = 0; l < links_.size(); ++l) {
    const LinkState& link = links_[l];
    if (link.record_index < 0) continue;
    std::vector<LoadPoint>& series = series_[link.record_index];
    const LoadPoint point{std::max(now_us_, options_.record_from_us), fill_[l].load_gbps,
                          link.demand_gbps};
    if (now_us_ < options_.record_from_us) {
      // Only the load in force when the window opens matters.
      series.assign(1, point);
    } else if (!series.empty() && series.back().time_us == now_us_) {
      series.back() = point;
    } else if (series.empty() || series.back().gbps != point.gbps ||
               series.back().demand_gbps != point.demand_gbps) {
      series.push_back(point);
    }
  }
}

std::vector<std::string> FluidNetwork::AdvanceUntil(double until_us) {
  std::vector<std::string> completed;
  while (true) {
    if (rates_dirty_) RecomputeRates();
    double next = until_us;
    for (const JobState& job : jobs_) {
      switch (job.phase) {
        case Phase::kWaiting:
        case Phase::kCompute:
          next = std::min(next, job.phase_end_us);
          break;
        case Phase::kComm:
          if (job.rate_gbps > 0) {
            next = std::min(next, now_us_ + job.remaining_bits / (job.rate_gbps * kBitsPerUsPerGbps));
          }
          break;
        case Phase::kDone:
          break;
      }
    }
    if (next == kInf) return completed;  // nothing left to happen
    next = std::max(next, now_us_);
    Accumulate(next - now_us_);
    now_us_ = next;
    ++events_;
    bool changed = false;
    for (JobState& job : jobs_) {
      // A job may move through several phases at one instant (zero compute).
      for (int guard = 0; guard < 3; ++guard) {
        if (job.phase == Phase::kWaiting && job.phase_end_us <= now_us_ + kTimeSlackUs) {
          StartIteration(job, now_us_);
          changed = true;
        } else if (job.phase == Phase::kCompute && job.phase_end_us <= now_us_ + kTimeSlackUs) {
          job.phase = Phase::kComm;
          job.remaining_bits = job.spec.comm_bytes * 8;
          job.rate_gbps = 0;
          rates_dirty_ = true;
          changed = true;
        } else if (job.phase == Phase::kComm &&
                   job.remaining_bits <= 1e-9 * job.spec.comm_bytes * 8 + 1e-6) {
          job_stats_[job.stats_index].bytes_delivered += job.remaining_bits / 8;
          job.remaining_bits = 0;
          job.rate_gbps = 0;
          rates_dirty_ = true;
          FinishIteration(job, completed);
          changed = true;
        } else {
          break;
        }
      }
    }
    if (changed) {
      const size_t before = jobs_.size();
      std::erase_if(jobs_, [](const JobState& job) { return job.phase == Phase::kDone; });
      running_ -= before - jobs_.size();
      if (before != jobs_.size()) {
        rates_dirty_ = true;
        link_flows_valid_ = false;
      }
    }
    if (!completed.empty()) {
      if (rates_dirty_) RecomputeRates();
      return completed;
    }
    if (now_us_ >= until_us) {
      if (rates_dirty_) RecomputeRates();
      return completed;
    }
  }
}

void FluidNetwork::RunToCompletion() {
  while (running_ > 0) {
    const double before = now_us_;
    const uint64_t events = events_;
    AdvanceUntil(kInf);
    if (now_us_ == before && events_ == events) break;  // nothing can progress
  }
}

double FluidNetwork::CurrentRateGbps(const std::string& id) const {
  for (const JobState& job : jobs_) {
    if (job.spec.id == id) return job.phase == Phase::kComm ? job.rate_gbps : 0;
  }
  return 0;
}

std::vector<LinkStats> FluidNetwork::link_stats() const {
  std::vector<LinkStats> out;
  out.reserve(links_.size());
  for (const LinkState& link : links_) out.push_back(link.stats);
  return out;
}

const std::vector<LoadPoint>& FluidNetwork::load_series(const std::string& link_id) const {
  static const std::vector<LoadPoint> kEmpty;
  auto it = link_index_.find(link_id);
  if (it == link_index_.end() || links_[it->second].record_index < 0) return kEmpty;
  return series_[links_[it->second].record_index];
}

}  // namespace phasor::sim
