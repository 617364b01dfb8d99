#include "sim/trace_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include <zlib.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "placer/packing.h"
#include "placer/traffic_profile.h"
#include "placer/ring_order.h"
#include "placer/candidates.h"
#include "placer/ranker.h"
#include "sim/host_scheduler.h"
#include "models/model_catalog.h"
#include "topology/generators.h"
#include "topology/router.h"
#include "topology/topology_file.h"
#include "topology/topology_yaml.h"
#include "topology/traffic.h"

namespace phasor::sim {
namespace {

constexpr double kNoMoreArrivals = std::numeric_limits<double>::infinity();
// Range checks of trace rows: a job of more than a year or more GPUs than any
// cluster of the public traces is a bad row, not a job.

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double Unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

std::vector<std::string> Cells(absl::string_view line) {
  std::vector<std::string> out;
  for (absl::string_view c : absl::StrSplit(line, ',')) out.emplace_back(absl::StripAsciiWhitespace(c));
  return out;
}

// "YYYY-MM-DD HH:MM:SS" -> seconds since 1970-01-01 (UTC), or -1.
double ParseTimestamp(const std::string& text) {
  int y, mo, d, h, mi, s;
  if (std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d", &y, &mo, &d, &h, &mi, &s) != 6) return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 ||
      s > 60) {
    return -1;
  }
  // Days from civil (H. Hinnant's algorithm).
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = era * 146097.0 + static_cast<double>(doe) - 719468;
  return days * 86400 + h * 3600 + mi * 60 + s;
}

// A trace's seconds field: a finite number in 0..max.
absl::StatusOr<double> TraceSeconds(const std::string& cell, const char* field, double max) {
  double v = 0;
  if (!absl::SimpleAtod(cell, &v) || !(v >= 0 && v <= max)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": '", cell, "' is not a number of seconds in 0..", max));
  }
  return v;
}

// A trace's GPU count: an integer in 1..kMaxTraceGpus.
absl::StatusOr<uint32_t> TraceGpus(const std::string& cell, const char* field) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(cell, &v) || v == 0 || v > kMaxTraceGpus) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": '", cell, "' is not a GPU count in 1..", kMaxTraceGpus));
  }
  return static_cast<uint32_t>(v);
}

// The lines of a plain or gzip-compressed file (zlib reads plain files
// unchanged).
absl::StatusOr<std::vector<std::string>> ReadLines(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(absl::StrCat("trace: cannot read '", path, "'"));
  std::string text;
  char buf[1 << 16];
  while (true) {
    const int n = gzread(file, buf, sizeof(buf));
    int errnum = Z_OK;
    const std::string message = n <= 0 ? gzerror(file, &errnum) : "";
    if (n < 0 || (n == 0 && errnum != Z_OK && errnum != Z_STREAM_END)) {
      gzclose(file);
      return absl::InvalidArgumentError(
          absl::StrCat("trace: '", path, "': corrupt gzip data (", message, ")"));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (size_t{1} << 30)) {
      gzclose(file);
      return absl::InvalidArgumentError(absl::StrCat("trace: '", path, "': larger than 1 GiB"));
    }
  }
  gzclose(file);
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (std::string& line : lines) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
  }
  return lines;
}

}  // namespace

absl::StatusOr<std::vector<TraceJob>> LoadTrace(const std::string& path,
                                                const TraceLoadOptions& options) {
  if (!(options.arrival_scale > 0) || !std::isfinite(options.arrival_scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("arrival_scale: ", options.arrival_scale, " must be > 0"));
  }
  if (!(options.duration_scale > 0) || !std::isfinite(options.duration_scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration_scale: ", options.duration_scale, " must be > 0"));
  }
  absl::StatusOr<std::vector<std::string>> lines = ReadLines(path);
  if (!lines.ok()) return lines.status();
  if (lines->empty()) return absl::InvalidArgumentError(path + ":1: empty file");
  const std::vector<std::string> header = Cells(lines->front());
  auto col = [&](const char* name) {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  const bool philly = col("timestamp") >= 0 && col("duration") >= 0 && col("num_gpus") >= 0;
  const bool pollux = col("name") >= 0 && col("time") >= 0 && col("application") >= 0 &&
                      col("num_replicas") >= 0;
  const bool itp = col("job_id") >= 0 && col("submission_time") >= 0 && col("duration") >= 0 &&
                   col("num_gpu") >= 0;
  if (!philly && !pollux && !itp) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ":1: unknown trace header (want Philly: timestamp,duration,num_gpus, Pollux: "
              "name,time,application,num_replicas or ITP-2021: "
              "job_id,submission_time,duration,num_gpu)"));
  }
  if ((philly || itp) && options.models.empty()) {
    return absl::InvalidArgumentError("trace: no models to assign to Philly or ITP jobs");
  }
  std::vector<TraceJob> jobs;
  std::mt19937_64 rng(options.seed);
  int number = 1;
  for (size_t i = 1; i < lines->size(); ++i) {
    const std::string& line = (*lines)[i];
    ++number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::vector<std::string> c = Cells(line);
    const std::string where = absl::StrCat(path, ":", number, ": ");
    TraceJob job;
    if (itp) {
      // ITP-2021 (ElasticFlow's traces): submission_time and duration in s.
      const int id = col("job_id"), t = col("submission_time"), du = col("duration"),
                g = col("num_gpu");
      const size_t need = static_cast<size_t>(std::max({id, t, du, g}));
      if (c.size() <= need) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "expected ", header.size(), " fields, found ", c.size()));
      }
      if (c[id].empty()) return absl::InvalidArgumentError(where + "job_id: empty");
      absl::StatusOr<double> at = TraceSeconds(c[t], "submission_time", kMaxTraceTimeS);
      if (!at.ok()) return absl::InvalidArgumentError(where + std::string(at.status().message()));
      absl::StatusOr<double> duration = TraceSeconds(c[du], "duration", kMaxTraceDurationS);
      if (duration.ok() && *duration == 0) duration = absl::InvalidArgumentError("duration: '0': a job runs for some time");
      if (!duration.ok()) return absl::InvalidArgumentError(where + std::string(duration.status().message()));
      absl::StatusOr<uint32_t> gpus = TraceGpus(c[g], "num_gpu");
      if (!gpus.ok()) return absl::InvalidArgumentError(where + std::string(gpus.status().message()));
      job.gpus = *gpus;
      job.id = absl::StrCat("itp-", c[id]);
      job.arrival_us = *at * 1e6;
      job.duration_s = std::max(1.0, *duration);
      job.model = options.models[SplitMix(options.seed ^ static_cast<uint64_t>(number)) %
                                 options.models.size()];
    } else if (philly) {
      const int t = col("timestamp"), du = col("duration"), g = col("num_gpus");
      const size_t need = static_cast<size_t>(std::max({t, du, g}));
      if (c.size() <= need) return absl::InvalidArgumentError(where + "malformed row");
      absl::StatusOr<double> duration = TraceSeconds(c[du], "duration", kMaxTraceDurationS);
      if (!duration.ok()) return absl::InvalidArgumentError(where + std::string(duration.status().message()));
      absl::StatusOr<uint32_t> gpus = TraceGpus(c[g], "num_gpus");
      if (!gpus.ok()) return absl::InvalidArgumentError(where + std::string(gpus.status().message()));
      job.gpus = *gpus;
      const double at = ParseTimestamp(c[t]);
      if (at < 0) return absl::InvalidArgumentError(where + "timestamp: '" + c[t] + "'");
      job.id = absl::StrCat("philly-", number - 1);
      job.arrival_us = at * 1e6;
      job.duration_s = std::max(1.0, *duration);
      job.model = options.models[SplitMix(options.seed ^ static_cast<uint64_t>(number)) %
                                 options.models.size()];
    } else {
      const int n = col("name"), t = col("time"), a = col("application"), r = col("num_replicas");
      const size_t need = static_cast<size_t>(std::max({n, t, a, r}));
      if (c.size() <= need || c[n].empty()) return absl::InvalidArgumentError(where + "malformed row");
      absl::StatusOr<double> at = TraceSeconds(c[t], "time", kMaxTraceTimeS);
      if (!at.ok()) return absl::InvalidArgumentError(where + std::string(at.status().message()));
      absl::StatusOr<uint32_t> gpus = TraceGpus(c[r], "num_replicas");
      if (!gpus.ok()) return absl::InvalidArgumentError(where + std::string(gpus.status().message()));
      job.gpus = *gpus;
      job.id = c[n];
      job.arrival_us = *at * 1e6;
      job.model = c[a];
      // Log-normal (sigma 0.8) around the median, by Box-Muller.
      const double u1 = std::max(1e-12, Unit(rng())), u2 = Unit(rng());
      const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      job.duration_s = options.workload_median_duration_s * std::clamp(std::exp(0.8 * z), 0.2, 5.0);
    }
    jobs.push_back(std::move(job));
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.arrival_us < b.arrival_us; });
  if (!jobs.empty()) {
    const double first = jobs.front().arrival_us;
    for (TraceJob& job : jobs) {
      job.arrival_us = (job.arrival_us - first) / options.arrival_scale;
      job.duration_s = std::max(1.0, job.duration_s * options.duration_scale);
    }
  }
  std::vector<TraceJob> kept;
  for (TraceJob& job : jobs) {
    if (options.hours > 0 && job.arrival_us >= options.hours * 3600e6) break;
    if (options.max_jobs > 0 && kept.size() >= options.max_jobs) break;
    if (options.max_gpus > 0 && job.gpus > options.max_gpus) continue;
    if (job.gpus < options.min_gpus) continue;
    kept.push_back(std::move(job));
  }
  return kept;
}

namespace {

absl::StatusOr<topology::Topology> MakeFabric(const TraceReplayOptions& options) {
  if (!options.topology_path.empty()) return topology::LoadTopologyFile(options.topology_path);
  std::vector<std::string> parts = absl::StrSplit(options.fabric, ':');
  topology::LeafSpineOptions ls;
  uint32_t servers = 0, per_leaf = 8, gpus = 4;
  double oversub = 2;
  if (parts.size() < 2 || parts.size() > 5 || parts[0] != "leaf-spine" ||
      !absl::SimpleAtoi(parts[1], &servers) || servers == 0 ||
      (parts.size() > 2 && (!absl::SimpleAtod(parts[2], &oversub) || !(oversub > 0))) ||
      (parts.size() > 3 && (!absl::SimpleAtoi(parts[3], &per_leaf) || per_leaf == 0)) ||
      (parts.size() > 4 && (!absl::SimpleAtoi(parts[4], &gpus) || gpus == 0 || gpus > 9))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--fabric: '", options.fabric, "' is not leaf-spine:N[:OVERSUB[:PER_LEAF[:GPUS 1..9]]]"));
  }
  ls.servers_per_leaf = std::min(per_leaf, servers);
  ls.leaves = (servers + ls.servers_per_leaf - 1) / ls.servers_per_leaf;
  ls.spines = 2;
  ls.servers = servers;
  ls.gpus_per_server = gpus;
  ls.nic_gbps = kMeasuredNicGbps;
  ls.oversubscription = oversub;
  return topology::MakeLeafSpine(ls);
}

struct Running {
  std::string id;
  size_t stats_index = 0;
  bool networked = false;
  std::vector<std::string> gpu_servers;  // one entry per GPU
  std::map<std::string, double> links;
  placer::TrafficProfile profile;
  double isolated_iteration_us = 0;
  std::string placement;
};

// What a job would run as on `gpu_servers`.
struct Plan {
  SimJob sim;
  Running running;
  bool reordered = false;  // phasor's ring order differs from the host's
};

class Replayer {
 public:
  Replayer(const TraceReplayOptions& options, const ModelCatalog& models,
           const topology::Topology& topo)
      : options_(options), models_(models), topo_(topo), router_(topo) {}

  absl::StatusOr<TraceReport> Run(std::vector<TraceJob> jobs) {
    const auto wall_start = std::chrono::steady_clock::now();
    if (options_.host != nullptr) {
      scheduler_ = options_.host;
    } else {
      absl::StatusOr<std::unique_ptr<HostSchedulerAdapter>> adapter =
          MakeReferenceScheduler(options_.scheduler, &models_, options_.seed);
      if (!adapter.ok()) return adapter.status();
      owned_scheduler_ = std::move(*adapter);
      scheduler_ = owned_scheduler_.get();
    }
    report_.scheduler = std::string(scheduler_->name());
    report_.plugin = options_.plugin;
    report_.random_start = !options_.plugin && options_.random_start;
    report_.plugin_label = !options_.plugin ? (report_.random_start ? "random" : "off")
                           : options_.ranking_policy.discard_loops ? "cassini"
                                                                   : "on";
    report_.pace = options_.pace;
    if (options_.plugin) {
      report_.ring_order = placer::RingOrderModeName(options_.ring_order);
      report_.own_candidates = options_.own_candidates;
      report_.shifts = options_.shifts;
    }
    report_.duration_jitter = options_.duration_jitter;
    if (options_.duration_jitter > 0) {
      report_.duration_jitter_seed =
          options_.duration_jitter_seed != 0 ? options_.duration_jitter_seed : options_.seed;
    }

    std::vector<SimLink> links;
    for (const topology::Link& l : topo_.links()) {
      links.push_back({l.id, l.capacity_gbps});
      report_.capacity_gbps[l.id] = l.capacity_gbps;
    }
    for (topology::NodeIndex s : topo_.Servers()) {
      const topology::Node& node = topo_.node(s);
      ServerView view;
      view.id = node.id;
      view.gpus = node.gpus;
      view.free_gpus = node.gpus;
      const std::optional<topology::NodeIndex> leaf = topo_.LeafOf(s);
      view.rack = leaf ? topo_.node(*leaf).id : "";
      servers_.push_back(view);
      report_.gpus += node.gpus;
    }
    report_.servers = servers_.size();
    report_.links = links.size();
    // Jobs the whole cluster cannot hold never start.
    std::vector<TraceJob> fitting;
    for (TraceJob& job : jobs) {
      if (job.gpus > report_.gpus) {
        ++report_.unfinished;
      } else {
        fitting.push_back(std::move(job));
      }
    }
    jobs = std::move(fitting);
    for (const TraceJob& job : jobs) trace_[job.id] = job;

    FluidNetworkOptions net_options;
    if (!jobs.empty()) {
      double at = options_.record_at_s;
      if (at < 0) at = jobs[jobs.size() / 2].arrival_us / 1e6;
      report_.record_from_us = at * 1e6;
      report_.record_to_us = report_.record_from_us + options_.record_window_s * 1e6;
      for (const SimLink& l : links) net_options.record_links.push_back(l.id);
      net_options.record_from_us = report_.record_from_us;
      net_options.record_to_us = report_.record_to_us;
    }
    net_ = std::make_unique<FluidNetwork>(links, net_options);

    const double horizon = jobs.empty() ? 0 : jobs.back().arrival_us;
    size_t next = 0;
    auto last_progress = wall_start;
    bool progress_shown = false;
    while (next < jobs.size() || !pending_.empty() || net_->running_jobs() > 0) {
      const double until = next < jobs.size() ? jobs[next].arrival_us : kNoMoreArrivals;
      if (until == kNoMoreArrivals && net_->running_jobs() == 0) {
        // Nothing runs and nothing arrives: what is pending can never start.
        report_.unfinished += pending_.size();
        break;
      }
      for (const std::string& id : net_->AdvanceUntil(until)) Complete(id);
      while (next < jobs.size() && jobs[next].arrival_us <= net_->now_us()) {
        const TraceJob& job = jobs[next++];
        pending_.push_back({job.id, job.model, job.gpus, job.arrival_us, job.duration_s * 1e6});
      }
      absl::Status round = Round();
      if (!round.ok()) return round;
      if (options_.progress != nullptr) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last_progress > std::chrono::milliseconds(250) &&
            now - wall_start > std::chrono::seconds(1)) {
          last_progress = now;
          progress_shown = true;
          ShowProgress(std::min(1.0, horizon > 0 ? net_->now_us() / horizon : 1.0), jobs.size());
        }
      }
    }
    if (progress_shown) {
      ShowProgress(1.0, jobs.size());
      *options_.progress << "\n";
    }
    Finish();
    report_.events = net_->events();
    report_.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return std::move(report_);
  }

 private:
  void ShowProgress(double fraction, size_t total) {
    const int width = 30;
    const int filled = static_cast<int>(fraction * width);
    *options_.progress << absl::StrFormat(
        "\r[%s%s] %3.0f%%  sim %.2f h  jobs done %zu/%zu  running %zu  pending %zu ",
        std::string(filled, '#'), std::string(width - filled, '.'), fraction * 100,
        net_->now_us() / 3600e6, report_.jobs.size(), total, net_->running_jobs(),
        pending_.size());
    options_.progress->flush();
  }

  absl::StatusOr<Plan> MakePlan(const std::string& id, const std::vector<std::string>& gpu_servers) {
    const TraceJob& job = trace_.at(id);
    Plan plan;
    Running& r = plan.running;
    r.id = id;
    r.gpu_servers = gpu_servers;
    r.placement = PlacementString(gpu_servers);
    std::vector<std::string> distinct;
    for (const std::string& s : gpu_servers) {
      if (std::find(distinct.begin(), distinct.end(), s) == distinct.end()) distinct.push_back(s);
    }
    absl::StatusOr<ModelTiming> timing;
    if (job.gradient_bytes > 0) {
      // A gradient-size job: ring all-reduce over its servers (SPEC 6).
      const double n = static_cast<double>(distinct.size());
      timing = ModelTiming{.placement = r.placement,
                           .local_bsz = 0,
                           .compute_us = job.compute_us,
                           .sync_us = 0,
                           .comm_bytes = n > 1 ? 2 * (n - 1) / n * job.gradient_bytes : 0};
    } else {
      timing = models_.Lookup(job.model, r.placement);
    }
    if (!timing.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("trace job '", id, "': ", timing.status().message()));
    }
    r.networked = distinct.size() > 1 && timing->comm_bytes > 0;
    const double comm_us = timing->comm_bytes * 8 / (kMeasuredNicGbps * 1e3);
    r.isolated_iteration_us = timing->compute_us + comm_us;
    plan.sim.id = id;
    plan.sim.nic_gbps = kMeasuredNicGbps;
    if (r.networked) {
      absl::StatusOr<topology::LinkShareMap> shares = topology::JobLinkShares(router_, id, distinct);
      if (!shares.ok()) return shares.status();
      r.links = std::map<std::string, double>(shares->begin(), shares->end());
      r.profile = JobProfile(timing->compute_us, timing->comm_bytes, kMeasuredNicGbps,
                             options_.pace ? options_.quantum_us : 0);
      plan.sim.compute_us = timing->compute_us;
      plan.sim.comm_bytes = timing->comm_bytes;
      plan.sim.links = r.links;
      plan.sim.iterations = static_cast<uint64_t>(
          std::max(1.0, std::round(job.duration_s * 1e6 / r.isolated_iteration_us)));
    } else {
      // One server: no link carries it; its run is one compute phase.
      plan.sim.compute_us = job.duration_s * 1e6;
      plan.sim.comm_bytes = 0;
      plan.sim.iterations = 1;
    }
    return plan;
  }

  placer::Job RankJob(const std::string& rank_id, const placer::TrafficProfile& profile) {
    placer::Job j;
    j.id = rank_id;
    j.profile = profile;
    return j;
  }

  absl::Status Round() {
    if (pending_.empty()) return absl::OkStatus();
    SchedulingRound round;
    round.now_us = net_->now_us();
    round.servers = servers_;
    round.pending = pending_;
    const uint32_t k = options_.plugin ? std::max<uint32_t>(1, options_.top_k) : 1;
    absl::StatusOr<std::vector<CandidateAllocation>> candidates = scheduler_->Propose(round, k);
    if (!candidates.ok()) return candidates.status();
    if (candidates->empty()) return absl::OkStatus();
    ++report_.rounds;
    // The running jobs' mean load per link: what phasor's candidates and
    // ring orders keep off (by link index of the fabric).
    std::vector<double> running_load;
    if (options_.plugin && (options_.own_candidates > 0 || options_.ring_order == placer::RingOrderMode::kPhasor)) {
      running_load.assign(topo_.links().size(), 0.0);
      for (const auto& [id, r] : running_) {
        if (!r.networked) continue;
        const double mean = placer::MeanGbps(r.profile);
        for (const auto& [link, share] : r.links) running_load[*topo_.FindLink(link)] += share * mean;
      }
    }
    if (options_.plugin && options_.own_candidates > 0) {
      // phasor's own candidates beside the host's, from the wholly free
      // servers (placer/candidates.h), as phasord adds them for a request
      // with free_servers.
      std::vector<std::string> free_servers;
      for (const ServerView& v : servers_) {
        if (v.free_gpus == v.gpus) free_servers.push_back(v.id);
      }
      placer::OwnCandidateOptions own_options;
      own_options.count = options_.own_candidates;
      std::vector<placer::Candidate> own =
          placer::OwnCandidates(topo_, candidates->front(), free_servers, running_load, own_options);
      // None that repeats a placement the host proposed.
      std::set<std::map<std::string, std::vector<std::string>>> proposed;
      for (const CandidateAllocation& c : *candidates) proposed.insert(placer::PlacementKey(c.servers));
      for (placer::Candidate& c : own) {
        if (!proposed.insert(placer::PlacementKey(c.servers)).second) continue;
        ++report_.own_proposed;
        candidates->push_back(std::move(c));
      }
    }
    if (options_.plugin && options_.ranking_policy.keep_packing && candidates->size() > 1) {
      // No candidate may leave fewer whole free servers or racks than the
      // host's first (placer/packing.h, as phasord applies it).
      placer::PackingView view;
      for (const ServerView& v : servers_) {
        view.rack_of[v.id] = v.rack;
        if (v.free_gpus == v.gpus) view.free.insert(v.id);
      }
      const placer::PackingCounts counts(view);
      const placer::WholeFree host_free = counts.After(candidates->front().servers);
      const size_t before = candidates->size();
      std::erase_if(*candidates, [&, first = &candidates->front()](const CandidateAllocation& c) {
        return &c != first && placer::LeavesLessPacked(counts.After(c.servers), host_free);
      });
      report_.packing_dropped += before - candidates->size();
    }
    // Plans of every candidate (a job's plan depends on its servers, in the
    // rank order it would run with: phasor's ring order, or the host's).
    std::vector<std::map<std::string, Plan>> plans(candidates->size());
    for (size_t c = 0; c < candidates->size(); ++c) {
      for (const auto& [id, gpu_servers] : (*candidates)[c].servers) {
        std::vector<std::string> order = gpu_servers;
        if (options_.plugin && options_.ring_order == placer::RingOrderMode::kPhasor) {
          absl::StatusOr<std::vector<std::string>> ring = placer::RingOrder(router_, id, gpu_servers, running_load);
          if (!ring.ok()) return ring.status();
          order = *std::move(ring);
        }
        absl::StatusOr<Plan> plan = MakePlan(id, order);
        if (!plan.ok()) return plan.status();
        plan->reordered = order != gpu_servers;
        plans[c].emplace(id, std::move(*plan));
      }
    }
    size_t chosen = 0;
    std::map<std::string, uint32_t> shifts;
    if (options_.plugin) {
      placer::RankRequest request;
      request.options.circle.quantum_us = options_.quantum_us;
      for (const topology::Link& l : topo_.links()) request.links.push_back({l.id, l.capacity_gbps});
      std::map<std::string, std::map<std::string, double>> running_links;
      for (const auto& [id, r] : running_) {
        if (!r.networked) continue;
        const JobStats& stats = net_->job_stats()[r.stats_index];
        const placer::TrafficProfile profile = RankedProfile(r);
        placer::Job j = RankJob(id, profile);
        if (options_.pin_running) {
          const double reference = options_.pace ? stats.start_us : stats.last_end_us;
          j.pinned_shift_us = static_cast<uint32_t>(std::fmod(reference, profile.period_us));
          if (*j.pinned_shift_us >= profile.period_us) j.pinned_shift_us = 0;
        }
        request.jobs.push_back(j);
        running_links[id] = r.links;
      }
      bool any_new_networked = false;
      // The policy judges footprints on every link a candidate's new jobs cross.
      std::vector<placer::Candidate> full;
      for (size_t c = 0; c < plans.size(); ++c) {
        placer::Candidate candidate;
        candidate.id = std::to_string(c);
        candidate.links = running_links;
        for (const auto& [id, plan] : plans[c]) {
          const std::string rank_id = absl::StrCat(id, "@", c);
          // Where the job runs (a server per GPU), by its own id in every
          // candidate, as phasord's routing reports it: the policy keeps
          // the host's first's jobs and shapes (placer/ranking_policy.h).
          candidate.rank_order[id] = (*candidates)[c].servers.at(id);
          if (!plan.running.networked) continue;
          request.jobs.push_back(RankJob(rank_id, plan.running.profile));
          candidate.links[rank_id] = plan.running.links;
          any_new_networked = true;
        }
        full.push_back(candidate);
        request.candidates.push_back(Contended(std::move(candidate)));
      }
      if (any_new_networked) {
        absl::Status valid = placer::ValidateRankRequest(request);
        if (!valid.ok()) return valid;
        placer::Ranking ranking;
        if (options_.rank) {
          absl::StatusOr<placer::Ranking> ranked = options_.rank(request);
          if (!ranked.ok()) return ranked.status();
          ranking = *std::move(ranked);
        } else {
          ranking = placer::Rank(request);
        }
        ++report_.ranked_rounds;
        // A ranking must name the round's candidates (checked before the
        // policy, which could hide a bad first entry).
        uint64_t named = 0;
        if (!ranking.ranked.empty() &&
            (!absl::SimpleAtoi(ranking.ranked.front().candidate, &named) || named >= plans.size())) {
          return absl::InternalError(absl::StrCat("ranking: best candidate '", ranking.ranked.front().candidate,
                                                  "' is not one of the round's ", plans.size(), " candidates"));
        }
        std::swap(request.candidates, full);
        const placer::PolicyDecision decision =
            placer::ApplyRankingPolicy(request, options_.ranking_policy, ranking);
        report_.discarded_loops += decision.discarded_loops;
        if (!decision.score_best.empty() && decision.score_best != decision.host_first) {
          ContestedRound contested{.time_s = net_->now_us() / 1e6,
                                   .jobs = {},
                                   .host_first = decision.host_first,
                                   .score_best = decision.score_best,
                                   .chosen = decision.chosen,
                                   .host_first_score = decision.host_first_score,
                                   .score_best_score = decision.score_best_score,
                                   .host_first_effective = decision.host_first_effective,
                                   .score_best_effective = decision.score_best_effective,
                                   .blocked = decision.blocked};
          for (const auto& [id, plan] : plans.front()) contested.jobs.push_back(id);
          report_.contested.push_back(std::move(contested));
        }
        if (decision.reason == "overtaken" ||
            (decision.reason == "off" && decision.chosen != decision.host_first)) {
          ++report_.overtaken_rounds;
        }
        if (!ranking.ranked.empty()) {
          const placer::RankedCandidate& best = ranking.ranked.front();
          uint64_t best_index = 0;
          if (!absl::SimpleAtoi(best.candidate, &best_index) || best_index >= plans.size()) {
            return absl::InternalError(absl::StrCat("ranking: best candidate '", best.candidate,
                                                    "' is not one of the round's ", plans.size(), " candidates"));
          }
          chosen = static_cast<size_t>(best_index);
          const std::string suffix = absl::StrCat("@", chosen);
          // The new jobs whose shifts buy something over random phases.
          std::set<std::string> worth_waiting;
          if (options_.shifts && options_.start_delay_min_gain >= 0) {
            const placer::Candidate& spec = request.candidates[chosen];
            for (const placer::LinkResult& l : best.links) {
              if (l.score - placer::RandomPhaseScore(request, spec, l) <= options_.start_delay_min_gain + 1e-12) {
                continue;
              }
              worth_waiting.insert(l.jobs.begin(), l.jobs.end());
            }
          }
          for (const auto& [rank_id, shift] : best.shifts_us) {
            if (rank_id.size() > suffix.size() &&
                rank_id.compare(rank_id.size() - suffix.size(), suffix.size(), suffix) == 0) {
              if (!options_.shifts || (options_.start_delay_min_gain >= 0 && !worth_waiting.contains(rank_id))) {
                ++report_.undelayed_starts;
                continue;
              }
              shifts[rank_id.substr(0, rank_id.size() - suffix.size())] = shift;
            } else if (!options_.pin_running) {
              absl::Status shifted = ShiftRunning(rank_id, shift);
              if (!shifted.ok()) return shifted;
            }
          }
          if (options_.realign && options_.realign_regrid && !options_.pace && options_.pin_running) {
            // The commit re-records every running job at the phase it holds,
            // with the period ranked (its measured one): the closed loop
            // corrects drift from there, not from its first slot grid.
            for (const auto& [id, r] : running_) {
              if (!r.networked) continue;
              const JobStats& stats = net_->job_stats()[r.stats_index];
              absl::Status regrid = net_->SetRealignGrid(id, stats.last_end_us, RankedProfile(r).period_us);
              if (!regrid.ok()) return regrid;
            }
          }
        }
      }
    }
    if (options_.plugin && (*candidates)[chosen].proposed_by_phasor) ++report_.own_chosen;
    for (auto& [id, plan] : plans[chosen]) {
      if (plan.reordered) ++report_.ring_reordered;
      const double now = net_->now_us();
      plan.sim.start_us = now;
      if (!options_.plugin && options_.random_start && plan.running.networked) {
        const uint64_t draw = options_.random_start_seed != 0 ? options_.random_start_seed : options_.seed;
        const uint64_t h = SplitMix(draw ^ std::hash<std::string>{}(id));
        plan.sim.start_us = now + Unit(h) * plan.running.profile.period_us;
      }
      auto shift = shifts.find(id);
      if (shift != shifts.end() && plan.running.networked) {
        const double period = plan.running.profile.period_us;
        const double n = std::ceil((now - shift->second) / period);
        plan.sim.start_us = std::max(now, shift->second + n * period);
        if (options_.pace) {
          plan.sim.pace_period_us = period;
          plan.sim.pace_reslot = options_.pace_reslot;
        } else if (options_.realign) {
          plan.sim.realign_period_us = period;
          plan.sim.realign_anchor_us = plan.sim.start_us;
          plan.sim.realign_threshold_us = options_.realign_threshold_us;
          plan.sim.realign_min_interval_us = options_.realign_min_interval_s * 1e6;
        }
      }
      plan.running.stats_index = net_->job_stats().size();
      absl::Status added = net_->AddJob(plan.sim);
      if (!added.ok()) return added;
      for (const std::string& s : plan.running.gpu_servers) {
        for (ServerView& v : servers_) {
          if (v.id == s) --v.free_gpus;
        }
      }
      std::erase_if(pending_, [&, &job = id](const PendingJob& p) { return p.id == job; });
      running_.emplace(id, std::move(plan.running));
    }
    return absl::OkStatus();
  }

  // No pins (Cassini): a running job the solver gave a new shift moves to it
  // once, unless its current phase is within a quantum of it.
  // The profile a running job is ranked with: measured on its links (once
  // mode) or its catalogue one.
  placer::TrafficProfile RankedProfile(const Running& r) const {
    if (!options_.measured_running_profiles || options_.pace) return r.profile;
    return MeasuredProfile(r.profile, net_->job_stats()[r.stats_index].iteration_us);
  }

  absl::Status ShiftRunning(const std::string& id, uint32_t shift_us) {
    auto it = running_.find(id);
    if (it == running_.end() || !it->second.networked) return absl::OkStatus();
    const Running& r = it->second;
    const double period = r.profile.period_us;
    const JobStats& stats = net_->job_stats()[r.stats_index];
    double error = std::fmod(stats.last_end_us - shift_us, period);
    if (error < 0) error += period;
    if (std::min(error, period - error) <= options_.quantum_us) return absl::OkStatus();
    ++report_.running_shifts;
    return net_->ShiftNextIteration(id, shift_us, period);
  }

  // The candidate restricted to its contended links, one link per group of
  // links that carry the same jobs with the same shares at the same capacity:
  // such links get the same score from the placer, and a ring on a
  // leaf-spine fabric crosses many of them (one per spine), which multiplies
  // the loops of the affinity graph the placer explores.
  placer::Candidate Contended(placer::Candidate candidate) const {
    std::map<std::string, std::vector<std::pair<std::string, double>>> jobs_of_link;
    for (const auto& [job, links] : candidate.links) {
      for (const auto& [link, share] : links) jobs_of_link[link].emplace_back(job, share);
    }
    std::map<std::pair<double, std::vector<std::pair<std::string, double>>>, std::string> first;
    std::set<std::string> keep;
    for (const auto& [link, jobs] : jobs_of_link) {
      if (jobs.size() < 2) continue;
      const double capacity = report_.capacity_gbps.at(link);
      if (first.emplace(std::make_pair(capacity, jobs), link).second) keep.insert(link);
    }
    for (auto& [job, links] : candidate.links) {
      std::erase_if(links, [&](const auto& l) { return !keep.contains(l.first); });
    }
    std::erase_if(candidate.links, [](const auto& j) { return j.second.empty(); });
    return candidate;
  }

  void Complete(const std::string& id) {
    auto it = running_.find(id);
    if (it == running_.end()) return;
    const Running& r = it->second;
    const JobStats& stats = net_->job_stats()[r.stats_index];
    const TraceJob& job = trace_.at(id);
    TraceJobResult result;
    result.id = id;
    result.model = job.model;
    result.gpus = job.gpus;
    result.placement = r.placement;
    result.networked = r.networked;
    result.arrival_us = job.arrival_us;
    result.start_us = stats.start_us;
    result.finish_us = stats.finish_us;
    result.isolated_iteration_us = r.isolated_iteration_us;
    report_.reslots += stats.reslots;
    report_.realignments += stats.realignments;
    if (r.networked) {
      result.iteration_us = Summarize(stats.iteration_us);
      result.slowdown = result.iteration_us.mean / r.isolated_iteration_us;
      for (double t : stats.iteration_us) slowdowns_.push_back(t / r.isolated_iteration_us);
    } else {
      result.iteration_us = {r.isolated_iteration_us, r.isolated_iteration_us,
                             r.isolated_iteration_us};
    }
    report_.jobs.push_back(std::move(result));
    for (const std::string& s : r.gpu_servers) {
      for (ServerView& v : servers_) {
        if (v.id == s) ++v.free_gpus;
      }
    }
    running_.erase(it);
  }

  void Finish() {
    std::vector<double> jct, queue;
    for (const TraceJobResult& j : report_.jobs) {
      jct.push_back((j.finish_us - j.arrival_us) / 1e6);
      queue.push_back((j.start_us - j.arrival_us) / 1e6);
      report_.makespan_s = std::max(report_.makespan_s, j.finish_us / 1e6);
    }
    report_.jct_s = Summarize(jct);
    report_.queueing_s = Summarize(queue);
    report_.iteration_slowdown = Summarize(slowdowns_);
    for (const LinkStats& l : net_->link_stats()) report_.excess_bytes += l.excess_bytes;
    for (const topology::Link& l : topo_.links()) {
      const std::vector<LoadPoint>& series = net_->load_series(l.id);
      bool loaded = false;
      for (const LoadPoint& p : series) loaded = loaded || p.gbps > 0;
      if (loaded) report_.load[l.id] = series;
    }
    const size_t stride = std::max<size_t>(1, slowdowns_.size() / 20000);
    for (size_t i = 0; i < slowdowns_.size(); i += stride) {
      report_.slowdown_samples.push_back(slowdowns_[i]);
    }
  }

  const TraceReplayOptions& options_;
  const ModelCatalog& models_;
  const topology::Topology& topo_;
  topology::Router router_;
  std::unique_ptr<HostSchedulerAdapter> owned_scheduler_;
  HostSchedulerAdapter* scheduler_ = nullptr;
  std::unique_ptr<FluidNetwork> net_;
  std::vector<ServerView> servers_;
  std::map<std::string, TraceJob> trace_;
  std::vector<PendingJob> pending_;
  std::map<std::string, Running> running_;
  std::vector<double> slowdowns_;
  TraceReport report_;
};

}  // namespace

absl::Status ApplyDurationJitter(double fraction, uint64_t seed, std::vector<TraceJob>& jobs) {
  if (!(fraction >= 0 && fraction <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration_jitter: ", fraction, " is not a fraction in [0, 0.5]"));
  }
  if (fraction == 0) return absl::OkStatus();
  for (TraceJob& job : jobs) {
    // FNV-1a of the id: the same factor on every platform and build.
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char ch : job.id) h = (h ^ ch) * 0x100000001b3ULL;
    const double u = Unit(SplitMix(SplitMix(seed) ^ h));
    job.duration_s = std::max(1.0, job.duration_s * (1 + fraction * (2 * u - 1)));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> FabricGpus(const TraceReplayOptions& options) {
  absl::StatusOr<topology::Topology> topo = MakeFabric(options);
  if (!topo.ok()) return topo.status();
  uint32_t gpus = 0;
  for (topology::NodeIndex s : topo->Servers()) gpus += topo->node(s).gpus;
  return gpus;
}

placer::TrafficProfile MeasuredProfile(const placer::TrafficProfile& isolated, const std::vector<double>& iteration_us) {
  if (iteration_us.empty() || !isolated.square) return isolated;
  const size_t n = std::min<size_t>(8, iteration_us.size());
  double sum = 0;
  for (size_t i = iteration_us.size() - n; i < iteration_us.size(); ++i) sum += iteration_us[i];
  const placer::SquareWave& wave = *isolated.square;
  const double compute = wave.start_us;
  const double up = sum / static_cast<double>(n) - compute;
  if (up <= wave.up_us * 1.001) return isolated;
  const double bytes = wave.up_us * wave.up_gbps * 1e3 / 8;
  return JobProfile(compute, bytes, bytes * 8 / (up * 1e3), 0);
}

TraceReplayOptions CassiniMode(TraceReplayOptions base) {
  base.plugin = true;
  base.random_start = false;
  base.pace = false;
  base.realign = false;
  base.pin_running = false;
  base.ranking_policy.min_gain = -1;
  base.ranking_policy.discard_loops = true;
  base.start_delay_min_gain = -1;
  base.ranking_policy.keep_packing = false;
  base.ranking_policy.prefer_less_at_risk = false;
  base.measured_running_profiles = false;
  base.ring_order = placer::RingOrderMode::kHost;
  base.own_candidates = 0;
  base.shifts = true;
  return base;
}

absl::StatusOr<TraceReport> ReplayTrace(const TraceReplayOptions& options) {
  if (options.top_k == 0) return absl::InvalidArgumentError("--top-k: must be >= 1");
  if (absl::Status policy = placer::ValidateRankingPolicyOptions(options.ranking_policy); !policy.ok()) {
    return policy;
  }
  if (!(options.realign_threshold_us >= 0) || !(options.realign_min_interval_s >= 0)) {
    return absl::InvalidArgumentError("realign_threshold_us, realign_min_interval_s: must be >= 0");
  }
  if (options.quantum_us == 0) return absl::InvalidArgumentError("quantum_us: must be >= 1");
  absl::StatusOr<ModelCatalog> models = ModelCatalog::Load(options.models_dir);
  if (!models.ok()) return models.status();
  absl::StatusOr<topology::Topology> topo = MakeFabric(options);
  if (!topo.ok()) return topo.status();
  TraceLoadOptions load;
  load.seed = options.seed;
  load.hours = options.hours;
  load.max_jobs = options.max_jobs;
  load.workload_median_duration_s = options.workload_median_duration_s;
  load.models = models->MeasuredModels();
  load.min_gpus = options.min_gpus;
  load.max_gpus = options.max_gpus;
  load.arrival_scale = options.arrival_scale;
  load.duration_scale = options.duration_scale;
  absl::StatusOr<std::vector<TraceJob>> jobs = options.jobs;
  if (!options.trace_path.empty()) {
    jobs = LoadTrace(options.trace_path, load);
  } else if (options.jobs.empty()) {
    return absl::InvalidArgumentError("trace_path: no trace file and no generated jobs");
  }
  if (!jobs.ok()) return jobs.status();
  const uint64_t jitter_seed = options.duration_jitter_seed != 0 ? options.duration_jitter_seed : options.seed;
  if (absl::Status jitter = ApplyDurationJitter(options.duration_jitter, jitter_seed, *jobs); !jitter.ok()) {
    return jitter;
  }
  for (const auto& [id, factor] : options.duration_factors) {
    if (!(factor > 0 && factor <= 10)) {
      return absl::InvalidArgumentError(
          absl::StrCat("duration_factors[", id, "]: ", factor, " is not a factor in (0, 10]"));
    }
    auto job = std::find_if(jobs->begin(), jobs->end(), [&, &want = id](const TraceJob& j) { return j.id == want; });
    if (job == jobs->end()) {
      return absl::InvalidArgumentError(absl::StrCat("duration_factors[", id, "]: no job of that id"));
    }
    job->duration_s = std::max(1.0, job->duration_s * factor);
  }
  for (size_t i = 0; i < jobs->size(); ++i) {
    const TraceJob& job = (*jobs)[i];
    if (i > 0 && job.arrival_us < (*jobs)[i - 1].arrival_us) {
      return absl::InvalidArgumentError(
          absl::StrCat("jobs[", i, "].arrival_us: before the previous job's (jobs must be in order)"));
    }
    if (job.gradient_bytes > 0) {
      if (!(job.compute_us >= 0) || !std::isfinite(job.compute_us) || !std::isfinite(job.gradient_bytes)) {
        return absl::InvalidArgumentError(
            absl::StrCat("jobs[", i, "].compute_us: must be a finite number >= 0"));
      }
      continue;
    }
    if (!models->Lookup(job.model, "1").ok()) {
      return absl::InvalidArgumentError(absl::StrCat("trace job '", job.id, "': model '",
                                                     job.model, "' is not in the model data"));
    }
  }
  Replayer replayer(options, *models, *topo);
  return replayer.Run(std::move(*jobs));
}

namespace {

nlohmann::ordered_json SummaryJson(const IterationSummary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p99", s.p99}};
}

}  // namespace

nlohmann::ordered_json TraceReportToJson(const TraceReport& r) {
  nlohmann::ordered_json out;
  out["scheduler"] = r.scheduler;
  out["plugin"] = r.plugin_label;
  out["mode"] = r.pace ? "pace" : "once";
  // Only when set: a run without the control prints what it printed before.
  if (r.duration_jitter > 0) {
    out["duration_jitter"] = {{"fraction", r.duration_jitter}, {"seed", r.duration_jitter_seed}};
  }
  out["cluster"] = {{"servers", r.servers}, {"gpus", r.gpus}, {"links", r.links}};
  out["jobs_completed"] = r.jobs.size();
  out["jobs_unfinished"] = r.unfinished;
  out["jct_s"] = SummaryJson(r.jct_s);
  out["queueing_s"] = SummaryJson(r.queueing_s);
  out["iteration_slowdown"] = SummaryJson(r.iteration_slowdown);
  out["excess_bytes"] = r.excess_bytes;
  out["makespan_s"] = r.makespan_s;
  out["rounds"] = r.rounds;
  out["ranked_rounds"] = r.ranked_rounds;
  out["overtaken_rounds"] = r.overtaken_rounds;
  out["reslots"] = r.reslots;
  out["realignments"] = r.realignments;
  out["running_shifts"] = r.running_shifts;
  out["discarded_loops"] = r.discarded_loops;
  out["undelayed_starts"] = r.undelayed_starts;
  out["packing_dropped"] = r.packing_dropped;
  if (r.plugin) {
    out["ring_order"] = r.ring_order;
    out["own_candidates"] = r.own_candidates;
    out["shifts"] = r.shifts;
    out["own_proposed"] = r.own_proposed;
    out["own_chosen"] = r.own_chosen;
    out["ring_reordered"] = r.ring_reordered;
  }
  out["contested_rounds"] = nlohmann::ordered_json::array();
  for (const ContestedRound& c : r.contested) {
    out["contested_rounds"].push_back({{"time_s", c.time_s},
                                       {"jobs", c.jobs},
                                       {"host_first", c.host_first},
                                       {"score_best", c.score_best},
                                       {"chosen", c.chosen},
                                       {"host_first_score", c.host_first_score},
                                       {"score_best_score", c.score_best_score},
                                       {"host_first_effective", c.host_first_effective},
                                       {"score_best_effective", c.score_best_effective},
                                       {"blocked", c.blocked}});
  }
  out["events"] = r.events;
  out["wall_s"] = r.wall_s;
  out["jobs"] = nlohmann::ordered_json::array();
  for (const TraceJobResult& j : r.jobs) {
    out["jobs"].push_back({{"id", j.id},
                           {"model", j.model},
                           {"gpus", j.gpus},
                           {"placement", j.placement},
                           {"networked", j.networked},
                           {"arrival_s", j.arrival_us / 1e6},
                           {"start_s", j.start_us / 1e6},
                           {"finish_s", j.finish_us / 1e6},
                           {"isolated_iteration_us", j.isolated_iteration_us},
                           {"iteration_us", SummaryJson(j.iteration_us)},
                           {"slowdown", j.slowdown}});
  }
  return out;
}

absl::StatusOr<ModeComparison> CompareModes(const TraceReplayOptions& options) {
  TraceReplayOptions off = options;
  off.plugin = false;
  off.random_start = false;
  TraceReplayOptions phasor = options;
  phasor.plugin = true;
  phasor.random_start = false;
  ModeComparison out;
  absl::StatusOr<TraceReport> r = ReplayTrace(off);
  if (!r.ok()) return r.status();
  out.off = *std::move(r);
  r = ReplayTrace(CassiniMode(options));
  if (!r.ok()) return r.status();
  out.cassini = *std::move(r);
  r = ReplayTrace(phasor);
  if (!r.ok()) return r.status();
  out.phasor = *std::move(r);
  return out;
}

namespace {

double Gain(double off, double mode) {
  if (mode > 0) return off / mode;
  return off > 0 ? std::numeric_limits<double>::infinity() : 1.0;
}

}  // namespace

nlohmann::ordered_json ModeComparisonToJson(const ModeComparison& c) {
  nlohmann::ordered_json out;
  out["modes"] = {"off", "cassini", "phasor"};
  out["runs"] = {{"off", TraceReportToJson(c.off)},
                 {"cassini", TraceReportToJson(c.cassini)},
                 {"phasor", TraceReportToJson(c.phasor)}};
  out["gain_over_off"] = nlohmann::ordered_json::object();
  for (const auto& [name, r] : {std::pair<const char*, const TraceReport*>{"cassini", &c.cassini},
                                {"phasor", &c.phasor}}) {
    const double excess = Gain(c.off.excess_bytes, r->excess_bytes);
    out["gain_over_off"][name] = {
        {"jct_mean", Gain(c.off.jct_s.mean, r->jct_s.mean)},
        {"jct_p99", Gain(c.off.jct_s.p99, r->jct_s.p99)},
        {"slowdown_p99", Gain(c.off.iteration_slowdown.p99, r->iteration_slowdown.p99)},
        // JSON has no infinity: a mode that removes all excess bytes says so.
        {"excess_bytes", std::isfinite(excess) ? nlohmann::ordered_json(excess)
                                               : nlohmann::ordered_json("all removed")}};
  }
  return out;
}

std::string ModeComparisonTable(const ModeComparison& c) {
  std::string out = absl::StrFormat("%s, %zu jobs on %zu servers / %zu GPUs\n", c.off.scheduler,
                                    c.off.jobs.size(), c.off.servers, c.off.gpus);
  absl::StrAppendFormat(&out, "  %-26s %12s %12s %12s %9s %9s\n", "", "off", "cassini", "phasor",
                        "cassini", "phasor");
  auto row = [&](const char* name, double off, double cassini, double phasor) {
    absl::StrAppendFormat(&out, "  %-26s %12.4g %12.4g %12.4g %8.3fx %8.3fx\n", name, off, cassini,
                          phasor, Gain(off, cassini), Gain(off, phasor));
  };
  row("JCT mean (s)", c.off.jct_s.mean, c.cassini.jct_s.mean, c.phasor.jct_s.mean);
  row("JCT p99 (s)", c.off.jct_s.p99, c.cassini.jct_s.p99, c.phasor.jct_s.p99);
  row("iteration slowdown p99", c.off.iteration_slowdown.p99, c.cassini.iteration_slowdown.p99,
      c.phasor.iteration_slowdown.p99);
  row("excess bytes (ECN proxy)", c.off.excess_bytes, c.cassini.excess_bytes, c.phasor.excess_bytes);
  absl::StrAppendFormat(&out,
                        "  (gains: off / mode, > 1 is better; cassini: %llu loop candidates "
                        "discarded, %llu running jobs shifted)\n",
                        static_cast<unsigned long long>(c.cassini.discarded_loops),
                        static_cast<unsigned long long>(c.cassini.running_shifts));
  return out;
}

nlohmann::ordered_json TraceSeriesToJson(const TraceReport& r) {
  nlohmann::ordered_json out;
  out["window_us"] = {r.record_from_us, r.record_to_us};
  out["links"] = nlohmann::ordered_json::object();
  for (const auto& [id, series] : r.load) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const LoadPoint& p : series) points.push_back({p.time_us, p.gbps, p.demand_gbps});
    out["links"][id] = {{"capacity_gbps", r.capacity_gbps.at(id)}, {"load", points}};
  }
  out["slowdown_samples"] = r.slowdown_samples;
  return out;
}

std::string TraceReportTable(const TraceReport& r) {
  return absl::StrFormat(
      "%s, plugin %s (%s): %zu jobs done, %zu unfinished, on %zu servers / %zu GPUs\n"
      "  JCT s          mean %10.1f  p50 %10.1f  p99 %10.1f\n"
      "  queueing s     mean %10.1f  p50 %10.1f  p99 %10.1f\n"
      "  iter slowdown  mean %10.3f  p50 %10.3f  p99 %10.3f\n"
      "  excess bytes   %.3g   makespan %.1f s   rounds %llu (ranked %llu)   %llu events in "
      "%.1f s\n",
      r.scheduler, r.plugin_label, r.pace ? "pace" : "once", r.jobs.size(),
      r.unfinished, r.servers, r.gpus, r.jct_s.mean, r.jct_s.p50, r.jct_s.p99, r.queueing_s.mean,
      r.queueing_s.p50, r.queueing_s.p99, r.iteration_slowdown.mean, r.iteration_slowdown.p50,
      r.iteration_slowdown.p99, r.excess_bytes, r.makespan_s,
      static_cast<unsigned long long>(r.rounds), static_cast<unsigned long long>(r.ranked_rounds),
      static_cast<unsigned long long>(r.events), r.wall_s);
}

}  // namespace phasor::sim
