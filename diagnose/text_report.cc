// The terminal table and the JSON form of a diagnosis.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "diagnose/report.h"

namespace phasor::diagnose {
namespace {

std::string Ms(double us) { return absl::StrFormat("%.1f ms", us / 1000.0); }

// Job j's own demand around the circle at `shift` bins.
std::vector<double> OwnLoad(const JobOnLink& job, uint64_t bins, uint32_t shift) {
  std::vector<double> own(bins);
  const uint32_t b = job.bins();
  for (uint64_t k = 0; k < bins; ++k) own[k] = job.gbps[(k + b - shift % b) % b];
  return own;
}

}  // namespace

std::string RenderTable(const Diagnosis& d, const TableOptions& options) {
  std::string out;
  absl::StrAppendFormat(&out,
                        "placement %s: score now %.4f, with phasor %.4f (mean of %d contended "
                        "links)%s%s\n",
                        d.candidate, d.current_score, d.achievable_score,
                        static_cast<int>(d.links.size()), d.cycle ? ", loop in affinity graph" : "",
                        d.exact ? ", proven optimal" : "");
  absl::StrAppendFormat(&out, "excess over capacity: %s/h now, %s/h with phasor\n\n",
                        FormatBytes(d.excess_bytes_per_hour_before()),
                        FormatBytes(d.excess_bytes_per_hour_after()));
  absl::StrAppendFormat(&out, "%-4s %-22s %8s %-20s %8s %8s %8s %12s %12s\n", "rank", "link",
                        "Gbit/s", "jobs", "now", "phasor", "gain", "excess/h now", "with phasor");
  int rank = 0;
  for (const LinkDiagnosis& l : d.links) {
    std::vector<std::string> jobs;
    for (const JobOnLink& j : l.jobs) jobs.push_back(j.job);
    absl::StrAppendFormat(&out, "%-4d %-22s %8.1f %-20s %8.4f %8.4f %+8.4f %12s %12s\n", ++rank,
                          l.id, l.capacity_gbps, absl::StrJoin(jobs, ","), l.current_score,
                          l.achievable_score, l.gain(), FormatBytes(l.excess_bytes_per_hour_before),
                          FormatBytes(l.excess_bytes_per_hour_after));
  }
  if (d.links.empty()) out += "(no contended link: no two jobs share a link)\n";
  out += "\nshifts (start iterations at epoch + shift + n x period):\n";
  absl::StrAppendFormat(&out, "  %-16s %10s %12s %-12s %12s  %s\n", "job", "period", "now",
                        "(from)", "recommended", "contended links");
  for (const JobSummary& j : d.jobs) {
    absl::StrAppendFormat(
        &out, "  %-16s %10s %12s %-12s %12s  %s\n", j.id, Ms(j.period_us), Ms(j.current_shift_us),
        absl::StrCat("(", PhaseSourceName(j.phase_source), ")"), Ms(j.recommended_shift_us),
        j.links.empty() ? "-" : absl::StrJoin(j.links, ","));
  }
  if (!options.detail) return out;
  const int width = std::clamp(options.width, 16, 400);
  for (const LinkDiagnosis& l : d.links) {
    absl::StrAppendFormat(&out,
                          "\nlink %s (%.1f Gbit/s): one unified period = %s (%d bins of %u us); "
                          "'!' = over capacity\n",
                          l.id, l.capacity_gbps, Ms(l.period_us()), static_cast<int>(l.bins),
                          l.quantum_us);
    for (const bool after : {false, true}) {
      absl::StrAppendFormat(
          &out, "  %s (score %.4f, excess %s/h)\n", after ? "with phasor's shifts" : "now",
          after ? l.achievable_score : l.current_score,
          FormatBytes(after ? l.excess_bytes_per_hour_after : l.excess_bytes_per_hour_before));
      for (const JobOnLink& j : l.jobs) {
        const uint32_t shift = after ? j.recommended_shift_bins : j.current_shift_bins;
        absl::StrAppendFormat(&out, "  %14s |%s|\n", j.job,
                              ShadedRow(OwnLoad(j, l.bins, shift), l.capacity_gbps, 1e300, width));
      }
      absl::StrAppendFormat(
          &out, "  %14s |%s|\n", "link load",
          ShadedRow(after ? l.load_after : l.load_before, l.capacity_gbps, l.capacity_gbps, width));
    }
  }
  return out;
}

nlohmann::ordered_json DiagnosisToJson(const Diagnosis& d) {
  using ojson = nlohmann::ordered_json;
  ojson out;
  out["candidate"] = d.candidate;
  out["epoch_us"] = d.epoch_us ? ojson(*d.epoch_us) : ojson(nullptr);
  out["current_score"] = d.current_score;
  out["achievable_score"] = d.achievable_score;
  out["min_link_score"] = d.min_link_score;
  out["cycle"] = d.cycle;
  out["exact"] = d.exact;
  out["excess_bytes_per_hour_before"] = d.excess_bytes_per_hour_before();
  out["excess_bytes_per_hour_after"] = d.excess_bytes_per_hour_after();
  out["up_threshold"] = d.up_threshold;
  ojson links = ojson::array();
  for (const LinkDiagnosis& l : d.links) {
    ojson link;
    link["id"] = l.id;
    link["capacity_gbps"] = l.capacity_gbps;
    link["quantum_us"] = l.quantum_us;
    link["circle_bins"] = l.bins;
    link["current_score"] = l.current_score;
    link["achievable_score"] = l.achievable_score;
    link["optimal_score"] = l.optimal_score;
    link["gain"] = l.gain();
    link["exact"] = l.exact;
    link["excess_bytes_per_hour_before"] = l.excess_bytes_per_hour_before;
    link["excess_bytes_per_hour_after"] = l.excess_bytes_per_hour_after;
    ojson jobs = ojson::array();
    for (const JobOnLink& j : l.jobs) {
      ojson job;
      job["id"] = j.job;
      job["share"] = j.share;
      job["period_us"] = j.period_us;
      job["quantized_period_us"] = j.quantized_period_us;
      job["mean_gbps"] = j.mean_gbps;
      job["peak_gbps"] = j.peak_gbps;
      job["phase_source"] = PhaseSourceName(j.phase_source);
      job["current_shift_us"] = j.current_shift_us;
      job["recommended_shift_us"] = j.recommended_shift_us;
      job["gbps"] = j.gbps;
      jobs.push_back(std::move(job));
    }
    link["jobs"] = std::move(jobs);
    link["load_before_gbps"] = l.load_before;
    link["load_after_gbps"] = l.load_after;
    links.push_back(std::move(link));
  }
  out["links"] = std::move(links);
  ojson quiet = ojson::array();
  for (const QuietLink& q : d.quiet_links) {
    quiet.push_back({{"id", q.id}, {"capacity_gbps", q.capacity_gbps}, {"jobs", q.jobs}});
  }
  out["quiet_links"] = std::move(quiet);
  ojson jobs = ojson::array();
  for (const JobSummary& j : d.jobs) {
    jobs.push_back({{"id", j.id},
                    {"period_us", j.period_us},
                    {"mean_gbps", j.mean_gbps},
                    {"phase_source", PhaseSourceName(j.phase_source)},
                    {"current_shift_us", j.current_shift_us},
                    {"recommended_shift_us", j.recommended_shift_us},
                    {"links", j.links}});
  }
  out["jobs"] = std::move(jobs);
  return out;
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1000 && u < 5) {
    bytes /= 1000;
    ++u;
  }
  return absl::StrFormat(u == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[u]);
}

std::string ShadedRow(const std::vector<double>& values, double full, double limit, int width) {
  static const char* kShades[] = {" ", "░", "▒", "▓", "█"};
  std::string out;
  const size_t n = values.size();
  for (int c = 0; c < width; ++c) {
    const size_t begin = n * c / width, end = std::max(begin + 1, n * (c + 1) / width);
    double sum = 0, peak = 0;
    for (size_t k = begin; k < end && k < n; ++k) {
      sum += values[k];
      peak = std::max(peak, values[k]);
    }
    if (peak > limit + 1e-9) {
      out += "!";
      continue;
    }
    const double mean = sum / static_cast<double>(end - begin);
    const int level =
        mean <= 0 ? 0 : std::clamp(static_cast<int>(std::ceil(mean / full * 4)), 1, 4);
    out += kShades[level];
  }
  return out;
}

}  // namespace phasor::diagnose
