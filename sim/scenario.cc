#include "sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "placer/ranker.h"

namespace phasor::sim {
namespace {

using Json = nlohmann::json;

absl::Status Bad(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

absl::StatusOr<double> NumberField(const Json& obj, const std::string& key,
                                   const std::string& field, bool positive) {
  const Json& v = obj.at(key);
  if (!v.is_number()) return Bad(field + "." + key, "must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || (positive ? !(x > 0) : !(x >= 0))) {
    return Bad(field + "." + key, positive ? "must be > 0" : "must be >= 0");
  }
  return x;
}

// Uniform in [0, 1) from 53 random bits (the same on every platform).
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double CommUs(double comm_bytes, double nic_gbps) { return comm_bytes * 8 / (nic_gbps * 1e3); }

}  // namespace

absl::StatusOr<Scenario> ScenarioFromJson(const Json& doc, const ModelCatalog* models) {
  if (!doc.is_object()) return Bad("(document)", "must be a JSON object");
  Scenario scenario;
  static const std::set<std::string> kTop = {"links", "jobs", "seed", "mode", "quantum_us"};
  for (const auto& [key, unused] : doc.items()) {
    if (!kTop.contains(key)) return Bad(key, "unknown field");
  }
  if (doc.contains("links")) {
    if (!doc["links"].is_array()) return Bad("links", "must be an array");
    for (size_t i = 0; i < doc["links"].size(); ++i) {
      const Json& l = doc["links"][i];
      const std::string field = absl::StrCat("links[", i, "]");
      if (!l.is_object()) return Bad(field, "must be an object");
      if (!l.contains("id") || !l["id"].is_string()) return Bad(field + ".id", "must be a string");
      if (!l.contains("capacity_gbps")) return Bad(field + ".capacity_gbps", "missing");
      absl::StatusOr<double> cap = NumberField(l, "capacity_gbps", field, true);
      if (!cap.ok()) return cap.status();
      scenario.links.push_back({l["id"].get<std::string>(), *cap});
    }
  }
  absl::Status links_ok = FluidNetwork::ValidateLinks(scenario.links);
  if (!links_ok.ok()) return links_ok;
  std::set<std::string> link_ids;
  for (const SimLink& l : scenario.links) link_ids.insert(l.id);

  if (!doc.contains("jobs") || !doc["jobs"].is_array() || doc["jobs"].empty()) {
    return Bad("jobs", "must be a non-empty array");
  }
  std::set<std::string> job_ids;
  static const std::set<std::string> kJobKeys = {"id",    "compute_us", "comm_bytes", "nic_gbps",
                                                 "links", "servers",    "iterations", "model",
                                                 "placement", "local_bsz", "start_us"};
  for (size_t i = 0; i < doc["jobs"].size(); ++i) {
    const Json& j = doc["jobs"][i];
    const std::string field = absl::StrCat("jobs[", i, "]");
    if (!j.is_object()) return Bad(field, "must be an object");
    for (const auto& [key, unused] : j.items()) {
      if (!kJobKeys.contains(key)) return Bad(field + "." + key, "unknown field");
    }
    ScenarioJob job;
    if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty()) {
      return Bad(field + ".id", "must be a non-empty string");
    }
    job.id = j["id"].get<std::string>();
    if (!job_ids.insert(job.id).second) return Bad(field + ".id", "'" + job.id + "' is repeated");
    if (j.contains("servers")) {
      if (!j["servers"].is_array()) return Bad(field + ".servers", "must be an array of strings");
      for (const Json& s : j["servers"]) {
        if (!s.is_string()) return Bad(field + ".servers", "must be an array of strings");
        job.servers.push_back(s.get<std::string>());
      }
    }
    if (j.contains("links")) {
      if (!j["links"].is_object()) return Bad(field + ".links", "must be an object {link: share}");
      for (const auto& [link, share] : j["links"].items()) {
        const std::string f = absl::StrCat(field, ".links.", link);
        if (!link_ids.contains(link)) return Bad(f, "link '" + link + "' is not defined");
        if (!share.is_number()) return Bad(f, "must be a number");
        const double s = share.get<double>();
        if (!(s >= 0 && s <= placer::kMaxShare)) {
          return Bad(f, absl::StrCat("share ", s, " is outside 0..", placer::kMaxShare));
        }
        job.links[link] = s;
      }
    }
    if (j.contains("iterations")) {
      if (!j["iterations"].is_number_integer() || j["iterations"].get<int64_t>() < 1) {
        return Bad(field + ".iterations", "must be an integer >= 1");
      }
      job.iterations = j["iterations"].get<uint64_t>();
    }
    if (j.contains("start_us")) {
      absl::StatusOr<double> v = NumberField(j, "start_us", field, false);
      if (!v.ok()) return v.status();
      job.start_us = *v;
    }
    job.nic_gbps = kMeasuredNicGbps;
    if (j.contains("nic_gbps")) {
      absl::StatusOr<double> v = NumberField(j, "nic_gbps", field, true);
      if (!v.ok()) return v.status();
      job.nic_gbps = *v;
    }
    if (j.contains("model")) {
      if (!j["model"].is_string()) return Bad(field + ".model", "must be a string");
      if (models == nullptr) return Bad(field + ".model", "no model data loaded (--models DIR)");
      const std::string model = j["model"].get<std::string>();
      std::string placement;
      if (j.contains("placement")) {
        if (!j["placement"].is_string()) return Bad(field + ".placement", "must be a string");
        placement = j["placement"].get<std::string>();
      }
      absl::StatusOr<double> gradient = models->GradientBytes(model);
      if (gradient.ok()) {
        // A gradient-size model: ring all-reduce bytes on n servers, given compute.
        const size_t n = !placement.empty() ? placement.size() : job.servers.size();
        if (n == 0) return Bad(field + ".placement", "needed to size the all-reduce of " + model);
        if (!j.contains("compute_us")) return Bad(field + ".compute_us", "missing");
        absl::StatusOr<double> c = NumberField(j, "compute_us", field, false);
        if (!c.ok()) return c.status();
        job.compute_us = *c;
        job.comm_bytes = 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) * *gradient;
      } else {
        if (placement.empty()) return Bad(field + ".placement", "missing (needed with model)");
        std::optional<uint32_t> bsz;
        if (j.contains("local_bsz")) {
          if (!j["local_bsz"].is_number_integer()) return Bad(field + ".local_bsz", "must be an integer");
          bsz = j["local_bsz"].get<uint32_t>();
        }
        absl::StatusOr<ModelTiming> timing = models->Lookup(model, placement, bsz);
        if (!timing.ok()) return Bad(field + ".model", std::string(timing.status().message()));
        job.compute_us = timing->compute_us;
        // Bytes that take the measured sync time at the measured NIC rate.
        job.comm_bytes = timing->comm_bytes;
      }
    } else {
      for (const char* key : {"compute_us", "comm_bytes"}) {
        if (!j.contains(key)) return Bad(field + "." + key, "missing");
      }
      absl::StatusOr<double> c = NumberField(j, "compute_us", field, false);
      if (!c.ok()) return c.status();
      absl::StatusOr<double> b = NumberField(j, "comm_bytes", field, false);
      if (!b.ok()) return b.status();
      job.compute_us = *c;
      job.comm_bytes = *b;
    }
    if (job.compute_us == 0 && job.comm_bytes == 0) {
      return Bad(field, "compute_us and comm_bytes are both 0");
    }
    // One iteration (compute, then comm_bytes at nic_gbps) is a traffic
    // profile's period, so it has the placer's range: at most an hour.
    const double iteration_us = job.compute_us + CommUs(job.comm_bytes, job.nic_gbps);
    if (!(iteration_us <= placer::kMaxPeriodUs)) {
      return Bad(field, absl::StrCat("one iteration (compute_us + comm_bytes at nic_gbps) takes ", iteration_us,
                                     " us, over the ", placer::kMaxPeriodUs, " us (one hour) a period may last"));
    }
    if (job.iterations > kMaxScenarioIterations) {
      return Bad(field + ".iterations", absl::StrCat("must be at most ", kMaxScenarioIterations));
    }
    scenario.jobs.push_back(std::move(job));
  }
  if (doc.contains("seed")) {
    if (!doc["seed"].is_number_unsigned()) return Bad("seed", "must be an integer >= 0");
    scenario.seed = doc["seed"].get<uint64_t>();
  }
  if (doc.contains("mode")) {
    const std::string mode = doc["mode"].is_string() ? doc["mode"].get<std::string>() : "";
    if (mode == "once") {
      scenario.mode = ShiftMode::kOnce;
    } else if (mode == "pace") {
      scenario.mode = ShiftMode::kPace;
    } else {
      return Bad("mode", "must be \"once\" or \"pace\"");
    }
  }
  if (doc.contains("quantum_us")) {
    if (!doc["quantum_us"].is_number_unsigned() || doc["quantum_us"].get<uint64_t>() == 0 ||
        doc["quantum_us"].get<uint64_t>() > 1000000) {
      return Bad("quantum_us", "must be an integer in 1..1000000");
    }
    scenario.quantum_us = doc["quantum_us"].get<uint32_t>();
  }
  return scenario;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  const size_t n = values.size();
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
  rank = std::clamp<size_t>(rank, 1, n);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank - 1),
                   values.end());
  return values[rank - 1];
}

IterationSummary Summarize(const std::vector<double>& values) {
  IterationSummary s;
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  s.p50 = Percentile(values, 50);
  s.p99 = Percentile(values, 99);
  return s;
}

namespace {

struct PlannedJob {
  SimJob sim;
  uint32_t shift_us = 0;
};

RunResult Run(const Scenario& scenario, const std::vector<PlannedJob>& jobs,
              const SimulateOptions& options, double record_from_us, double record_to_us) {
  FluidNetworkOptions net_options;
  net_options.record_links = options.record_links;
  net_options.record_from_us = record_from_us;
  net_options.record_to_us = record_to_us;
  FluidNetwork net(scenario.links, net_options);
  for (const PlannedJob& job : jobs) {
    // Validated by the caller; a failure here is a programming error.
    absl::Status added = net.AddJob(job.sim);
    if (!added.ok()) std::abort();
  }
  net.RunToCompletion();
  RunResult result;
  result.length_us = net.now_us();
  std::vector<double> all;
  double sum_of_means = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobStats& stats = net.job_stats()[i];
    JobRun run;
    run.id = stats.id;
    run.iteration_us = Summarize(stats.iteration_us);
    run.start_us = stats.start_us;
    run.finish_us = stats.finish_us;
    run.shift_us = jobs[i].shift_us;
    run.iterations = stats.iteration_us;
    all.insert(all.end(), stats.iteration_us.begin(), stats.iteration_us.end());
    sum_of_means += run.iteration_us.mean;
    result.jobs.push_back(std::move(run));
  }
  result.mean_iteration_us = sum_of_means / static_cast<double>(jobs.size());
  result.p99_iteration_us = Percentile(all, 99);
  const double length = std::max(result.length_us, 1e-9);
  for (const LinkStats& stats : net.link_stats()) {
    if (!scenario.report_idle_links && stats.bytes == 0) continue;
    LinkRun link;
    link.id = stats.id;
    link.utilisation = stats.bytes * 8 / (stats.capacity_gbps * 1e3 * length);
    link.overload_fraction = stats.overload_us / length;
    link.excess_bytes = stats.excess_bytes;
    result.excess_bytes += stats.excess_bytes;
    result.links.push_back(link);
  }
  for (const std::string& id : options.record_links) result.load[id] = net.load_series(id);
  return result;
}

}  // namespace

absl::StatusOr<Comparison> SimulateScenario(const Scenario& scenario,
                                            const SimulateOptions& options) {
  absl::Status links_ok = FluidNetwork::ValidateLinks(scenario.links);
  if (!links_ok.ok()) return links_ok;
  // Both plans share everything but the start phases.
  std::vector<PlannedJob> baseline, phasor;
  std::mt19937_64 rng(scenario.seed);
  const bool pace = scenario.mode == ShiftMode::kPace;

  placer::RankRequest request;
  request.options.circle.quantum_us = scenario.quantum_us;
  for (const SimLink& l : scenario.links) request.links.push_back({l.id, l.capacity_gbps});
  placer::Candidate candidate;
  candidate.id = "placement";
  for (size_t i = 0; i < scenario.jobs.size(); ++i) {
    const ScenarioJob& job = scenario.jobs[i];
    if (!job.servers.empty() && job.links.empty()) {
      return Bad(absl::StrCat("jobs[", i, "].servers"), "needs a topology (--topology FILE)");
    }
    PlannedJob planned;
    planned.sim.id = job.id;
    planned.sim.compute_us = job.compute_us;
    planned.sim.comm_bytes = job.comm_bytes;
    planned.sim.nic_gbps = job.nic_gbps;
    planned.sim.links = job.links;
    planned.sim.iterations = job.iterations;
    const double period_us = job.compute_us + CommUs(job.comm_bytes, job.nic_gbps);
    PlannedJob base = planned;
    const double random_start_us = Uniform(rng) * period_us;  // drawn always: other jobs keep theirs
    base.sim.start_us = job.start_us.value_or(random_start_us);
    baseline.push_back(base);
    phasor.push_back(planned);
    bool has_traffic = job.comm_bytes > 0;
    std::map<std::string, double> shares;
    for (const auto& [link, share] : job.links) {
      if (share > 0) shares[link] = std::min(share, 1.0);
    }
    if (has_traffic && !shares.empty()) {
      placer::Job pj;
      pj.id = job.id;
      pj.profile = JobProfile(job.compute_us, job.comm_bytes, job.nic_gbps,
                              pace ? scenario.quantum_us : 0);
      request.jobs.push_back(pj);
      candidate.links[job.id] = shares;
    }
  }
  request.candidates.push_back(candidate);
  double score = 1;
  if (!request.jobs.empty()) {
    absl::Status valid = placer::ValidateRankRequest(request);
    if (!valid.ok()) return valid;
    placer::Ranking ranking = placer::Rank(request);
    if (ranking.ranked.empty()) {
      const std::string reason =
          ranking.rejected.empty() ? "no result" : ranking.rejected.front().reason;
      return absl::InvalidArgumentError("the placer rejected the placement: " + reason);
    }
    const placer::RankedCandidate& best = ranking.ranked.front();
    score = best.score;
    std::map<std::string, uint32_t> shifts(best.shifts_us.begin(), best.shifts_us.end());
    std::map<std::string, uint32_t> periods;
    for (const placer::Job& pj : request.jobs) periods[pj.id] = pj.profile.period_us;
    for (PlannedJob& job : phasor) {
      auto it = shifts.find(job.sim.id);
      if (it == shifts.end()) continue;
      job.shift_us = it->second;
      job.sim.start_us = it->second;
      if (pace) job.sim.pace_period_us = periods[job.sim.id];
    }
  }
  // The recording window: one period of the longest job, after a warm-up.
  double window = 0;
  for (const ScenarioJob& job : scenario.jobs) {
    window = std::max(window, job.compute_us + CommUs(job.comm_bytes, job.nic_gbps));
  }
  const double from = options.record_after_periods * window;
  Comparison comparison;
  comparison.baseline = Run(scenario, baseline, options, from, from + window);
  comparison.phasor = Run(scenario, phasor, options, from, from + window);
  comparison.phasor.score = score;
  if (comparison.phasor.mean_iteration_us > 0) {
    comparison.speedup_mean =
        comparison.baseline.mean_iteration_us / comparison.phasor.mean_iteration_us;
  }
  if (comparison.phasor.p99_iteration_us > 0) {
    comparison.speedup_p99 =
        comparison.baseline.p99_iteration_us / comparison.phasor.p99_iteration_us;
  }
  return comparison;
}

namespace {

nlohmann::ordered_json RunToJson(const RunResult& run, bool with_shifts) {
  nlohmann::ordered_json out;
  out["jobs"] = nlohmann::ordered_json::array();
  for (const JobRun& job : run.jobs) {
    nlohmann::ordered_json j;
    j["id"] = job.id;
    j["iteration_us"] = {{"mean", job.iteration_us.mean},
                         {"p50", job.iteration_us.p50},
                         {"p99", job.iteration_us.p99}};
    j["start_us"] = job.start_us;
    j["finish_us"] = job.finish_us;
    if (with_shifts) j["shift_us"] = job.shift_us;
    out["jobs"].push_back(j);
  }
  out["links"] = nlohmann::ordered_json::array();
  for (const LinkRun& link : run.links) {
    out["links"].push_back({{"id", link.id},
                            {"utilisation", link.utilisation},
                            {"overload_fraction", link.overload_fraction},
                            {"excess_bytes", link.excess_bytes}});
  }
  out["summary"] = {{"mean_iteration_us", run.mean_iteration_us},
                    {"p99_iteration_us", run.p99_iteration_us},
                    {"excess_bytes", run.excess_bytes}};
  if (with_shifts) out["summary"]["score"] = run.score;
  return out;
}

}  // namespace

nlohmann::ordered_json ComparisonToJson(const Comparison& comparison) {
  nlohmann::ordered_json out;
  out["runs"]["baseline"] = RunToJson(comparison.baseline, false);
  out["runs"]["phasor"] = RunToJson(comparison.phasor, true);
  out["speedup"] = {{"mean", comparison.speedup_mean}, {"p99", comparison.speedup_p99}};
  return out;
}

std::string ComparisonTable(const Comparison& comparison) {
  std::string out;
  absl::StrAppendFormat(&out, "%-16s %12s %12s %12s %12s %9s\n", "job", "base mean ms",
                        "base p99 ms", "phasor mean", "phasor p99", "shift ms");
  for (size_t i = 0; i < comparison.baseline.jobs.size(); ++i) {
    const JobRun& b = comparison.baseline.jobs[i];
    const JobRun& p = comparison.phasor.jobs[i];
    absl::StrAppendFormat(&out, "%-16s %12.2f %12.2f %12.2f %12.2f %9.1f\n", b.id,
                          b.iteration_us.mean / 1e3, b.iteration_us.p99 / 1e3,
                          p.iteration_us.mean / 1e3, p.iteration_us.p99 / 1e3, p.shift_us / 1e3);
  }
  absl::StrAppendFormat(&out, "\n%-16s %10s %10s %10s %10s %12s %12s\n", "link", "base util",
                        "phasor", "base over", "phasor", "base excess", "phasor");
  for (size_t i = 0; i < comparison.baseline.links.size(); ++i) {
    const LinkRun& b = comparison.baseline.links[i];
    const LinkRun& p = comparison.phasor.links[i];
    if (b.utilisation == 0 && p.utilisation == 0) continue;
    absl::StrAppendFormat(&out, "%-16s %9.1f%% %9.1f%% %9.1f%% %9.1f%% %10.1fMB %10.1fMB\n", b.id,
                          100 * b.utilisation, 100 * p.utilisation, 100 * b.overload_fraction,
                          100 * p.overload_fraction, b.excess_bytes / 1e6, p.excess_bytes / 1e6);
  }
  absl::StrAppendFormat(&out,
                        "\nmean iteration %.2f ms -> %.2f ms (speedup %.3fx); p99 %.2f ms -> %.2f "
                        "ms (speedup %.3fx); excess %.1f MB -> %.1f MB; placement score %.3f\n",
                        comparison.baseline.mean_iteration_us / 1e3,
                        comparison.phasor.mean_iteration_us / 1e3, comparison.speedup_mean,
                        comparison.baseline.p99_iteration_us / 1e3,
                        comparison.phasor.p99_iteration_us / 1e3, comparison.speedup_p99,
                        comparison.baseline.excess_bytes / 1e6,
                        comparison.phasor.excess_bytes / 1e6, comparison.phasor.score);
  return out;
}

}  // namespace phasor::sim
