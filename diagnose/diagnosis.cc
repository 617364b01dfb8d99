#include "diagnose/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "placer/link_score.h"

namespace phasor::diagnose {
namespace {

// t (us) -> bins of a pattern of `bins` bins of `quantum_us`, as the ranker
// converts shifts: round(t / q) mod B.
uint32_t ShiftBins(int64_t t_us, uint32_t quantum_us, uint32_t bins) {
  const int64_t b = bins;
  const int64_t s = std::llround(static_cast<double>(t_us) / quantum_us);
  return static_cast<uint32_t>(((s % b) + b) % b);
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

const char* PhaseSourceName(PhaseSource source) {
  switch (source) {
    case PhaseSource::kT0:
      return "t0_epoch_us";
    case PhaseSource::kCommitted:
      return "phasord offset";
    case PhaseSource::kAssumedZero:
      break;
  }
  return "assumed 0";
}

std::vector<Arc> UpArcs(const JobOnLink& job, uint64_t circle_bins, uint32_t shift_bins,
                        double up_threshold) {
  std::vector<Arc> arcs;
  const uint32_t b = job.bins();
  if (b == 0 || circle_bins == 0) return arcs;
  const auto [lo, hi] = std::minmax_element(job.gbps.begin(), job.gbps.end());
  // A flat pattern is Up everywhere when it carries traffic at all.
  const bool flat = *hi - *lo <= 1e-9 * std::max(1.0, *hi);
  const double level = *lo + up_threshold * (*hi - *lo);
  auto up = [&](uint64_t k) {
    const double d = job.gbps[(k + b - shift_bins % b) % b];
    return flat ? d > 0 : d > level && d > 0;
  };
  for (uint64_t k = 0; k < circle_bins;) {
    if (!up(k)) {
      ++k;
      continue;
    }
    const uint64_t begin = k;
    while (k < circle_bins && up(k)) ++k;
    arcs.push_back({begin, k});
  }
  return arcs;
}

double Diagnosis::excess_bytes_per_hour_before() const {
  double sum = 0;
  for (const LinkDiagnosis& l : links) sum += l.excess_bytes_per_hour_before;
  return sum;
}

double Diagnosis::excess_bytes_per_hour_after() const {
  double sum = 0;
  for (const LinkDiagnosis& l : links) sum += l.excess_bytes_per_hour_after;
  return sum;
}

absl::StatusOr<Diagnosis> Diagnose(const placer::RankRequest& request, const std::string& candidate,
                                   const DiagnoseOptions& options) {
  if (absl::Status s = placer::ValidateRankRequest(request); !s.ok()) return s;
  return DiagnoseValidated(request, candidate, options);
}

absl::StatusOr<Diagnosis> DiagnoseValidated(const placer::RankRequest& request,
                                            const std::string& candidate,
                                            const DiagnoseOptions& options) {
  if (!(options.up_threshold >= 0 && options.up_threshold < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("up_threshold: must be in [0, 1), got ", options.up_threshold));
  }
  // The one candidate to diagnose, ranked alone.
  placer::RankRequest one;
  one.links = request.links;
  one.jobs = request.jobs;
  one.options = request.options;
  if (candidate.empty()) {
    if (request.candidates.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("candidates: exactly one placement is diagnosed, got ",
                       request.candidates.size(), " (name one)"));
    }
    one.candidates = request.candidates;
  } else {
    for (const placer::Candidate& c : request.candidates) {
      if (c.id == candidate) one.candidates.push_back(c);
    }
    if (one.candidates.empty()) {
      return absl::NotFoundError(absl::StrCat("candidate '", candidate, "' is not in the input"));
    }
  }
  // The running part, if any, in the candidate (the long form): the
  // diagnosis reads every job's links from it.
  one.running = request.running;
  placer::MoveRunningIntoCandidates(one);
  const placer::Candidate& placement = one.candidates.front();
  const placer::Ranking ranking = placer::Rank(one);
  if (!ranking.rejected.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("candidate '", placement.id, "': ", ranking.rejected.front().reason));
  }
  const placer::RankedCandidate& ranked = ranking.ranked.front();

  std::map<std::string, const placer::Job*> jobs;
  for (const placer::Job& j : one.jobs) jobs[j.id] = &j;
  std::map<std::string, uint32_t> recommended_us(ranked.shifts_us.begin(), ranked.shifts_us.end());

  Diagnosis out;
  out.candidate = placement.id;
  out.up_threshold = options.up_threshold;
  out.achievable_score = ranked.score;
  out.min_link_score = ranked.min_link_score;
  out.cycle = ranked.cycle;
  out.exact = ranked.exact;

  // Each job's phase reference, and the common epoch: the earliest of them.
  auto reference = [&](const placer::Job& job) -> std::optional<std::pair<PhaseSource, int64_t>> {
    if (job.profile.t0_epoch_us) return std::pair{PhaseSource::kT0, *job.profile.t0_epoch_us};
    auto it = options.committed_start_epoch_us.find(job.id);
    if (it != options.committed_start_epoch_us.end())
      return std::pair{PhaseSource::kCommitted, it->second};
    return std::nullopt;
  };
  for (const auto& [job, unused] : placement.links) {
    if (auto r = reference(*jobs.at(job))) {
      out.epoch_us = out.epoch_us ? std::min(*out.epoch_us, r->second) : r->second;
    }
  }
  auto current_us = [&](const placer::Job& job) -> std::pair<PhaseSource, uint32_t> {
    const auto r = reference(job);
    if (!r || !out.epoch_us) return {PhaseSource::kAssumedZero, 0};
    const int64_t t = r->second - *out.epoch_us;
    const int64_t period = job.profile.period_us;
    return {r->first, static_cast<uint32_t>(((t % period) + period) % period)};
  };

  double current_sum = 0;
  for (const placer::LinkResult& r : ranked.links) {
    LinkDiagnosis link;
    link.id = r.id;
    link.capacity_gbps = r.capacity_gbps;
    link.optimal_score = r.optimal_score;
    link.achievable_score = r.score;
    link.exact = r.exact;
    std::vector<placer::LinkDemand> demands;
    for (const std::string& job : r.jobs) {
      demands.push_back({&jobs.at(job)->profile, placement.links.at(job).at(r.id)});
    }
    absl::StatusOr<placer::UnifiedCircle> circle =
        placer::BuildUnifiedCircle(demands, one.options.circle);
    if (!circle.ok()) return circle.status();
    if (circle->quantum_us != r.quantum_us || circle->bins != r.circle_bins) {
      return absl::InternalError(
          absl::StrCat("link '", r.id, "': circle differs from the ranker's"));
    }
    link.quantum_us = circle->quantum_us;
    link.bins = circle->bins;
    std::vector<uint32_t> before, after;
    for (size_t p = 0; p < r.jobs.size(); ++p) {
      const placer::Job& job = *jobs.at(r.jobs[p]);
      JobOnLink on;
      on.job = job.id;
      on.share = demands[p].share;
      on.period_us = job.profile.period_us;
      on.quantized_period_us = circle->jobs[p].period_us;
      on.gbps = circle->jobs[p].gbps;
      on.mean_gbps = Mean(on.gbps);
      on.peak_gbps = on.gbps.empty() ? 0 : *std::max_element(on.gbps.begin(), on.gbps.end());
      std::tie(on.phase_source, on.current_shift_us) = current_us(job);
      on.current_shift_bins = ShiftBins(on.current_shift_us, link.quantum_us, on.bins());
      on.recommended_shift_us = recommended_us.at(job.id);
      on.recommended_shift_bins = ShiftBins(on.recommended_shift_us, link.quantum_us, on.bins());
      before.push_back(on.current_shift_bins);
      after.push_back(on.recommended_shift_bins);
      link.jobs.push_back(std::move(on));
    }
    link.load_before = placer::LoadOnCircle(*circle, before);
    link.load_after = placer::LoadOnCircle(*circle, after);
    link.current_score = placer::LinkScore(*circle, link.capacity_gbps, before);
    link.excess_bytes_per_hour_before = BytesPerHour((1 - link.current_score) * link.capacity_gbps);
    link.excess_bytes_per_hour_after =
        BytesPerHour((1 - link.achievable_score) * link.capacity_gbps);
    current_sum += link.current_score;
    out.links.push_back(std::move(link));
  }
  out.current_score = out.links.empty() ? 1.0 : current_sum / static_cast<double>(out.links.size());

  // Jobs and quiet links, before --link narrows the view.
  std::map<std::string, std::vector<std::string>> job_links;
  for (const LinkDiagnosis& l : out.links) {
    for (const JobOnLink& j : l.jobs) job_links[j.job].push_back(l.id);
  }
  for (const placer::Job& job : one.jobs) {
    if (!placement.links.contains(job.id)) continue;
    JobSummary s;
    s.id = job.id;
    s.period_us = job.profile.period_us;
    s.mean_gbps = placer::MeanGbps(job.profile);
    std::tie(s.phase_source, s.current_shift_us) = current_us(job);
    s.recommended_shift_us = recommended_us.at(job.id);
    s.links = job_links[job.id];
    out.jobs.push_back(std::move(s));
  }
  for (const placer::Link& link : one.links) {
    if (std::any_of(out.links.begin(), out.links.end(),
                    [&](const LinkDiagnosis& l) { return l.id == link.id; })) {
      continue;
    }
    QuietLink q{link.id, link.capacity_gbps, {}};
    for (const placer::Job& job : one.jobs) {
      auto it = placement.links.find(job.id);
      if (it == placement.links.end()) continue;
      auto share = it->second.find(link.id);
      if (share != it->second.end() && share->second > 0) q.jobs.push_back(job.id);
    }
    out.quiet_links.push_back(std::move(q));
  }

  // Largest gain first; ties keep the request's link order.
  std::stable_sort(out.links.begin(), out.links.end(),
                   [](const LinkDiagnosis& a, const LinkDiagnosis& b) {
                     return std::llround(a.gain() * 1e9) > std::llround(b.gain() * 1e9);
                   });
  if (!options.only_link.empty()) {
    std::erase_if(out.links, [&](const LinkDiagnosis& l) { return l.id != options.only_link; });
    if (out.links.empty()) {
      return absl::NotFoundError(absl::StrCat("link '", options.only_link,
                                              "' is not a contended link of candidate '",
                                              placement.id, "'"));
    }
  }
  return out;
}

}  // namespace phasor::diagnose
