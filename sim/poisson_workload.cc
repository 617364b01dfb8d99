#include "sim/poisson_workload.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace phasor::sim {

std::vector<WorkloadModel> CassiniModels() {
  return {{.name = "vgg19", .measured = false, .compute_us = 110000, .gradient_mb = 0},
          {.name = "imagenet", .measured = true, .compute_us = 0, .gradient_mb = 0},
          {.name = "bert", .measured = true, .compute_us = 0, .gradient_mb = 0},
          {.name = "gpt2", .measured = false, .compute_us = 200000, .gradient_mb = 498},
          {.name = "dlrm", .measured = false, .compute_us = 50000, .gradient_mb = 200}};
}

absl::StatusOr<std::vector<TraceJob>> GeneratePoissonWorkload(const PoissonWorkloadOptions& options,
                                                              const models::ModelCatalog& catalog) {
  if (options.jobs == 0) return absl::InvalidArgumentError("workload.jobs: must be >= 1");
  if (!(options.load > 0) || !std::isfinite(options.load)) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.load: ", options.load, " must be > 0"));
  }
  if (options.cluster_gpus == 0)
    return absl::InvalidArgumentError("workload.cluster_gpus: must be >= 1");
  if (!(options.median_duration_s > 0) || !std::isfinite(options.median_duration_s)) {
    return absl::InvalidArgumentError("workload.median_duration_s: must be > 0");
  }
  if (options.gpus.empty()) return absl::InvalidArgumentError("workload.gpus: empty");
  for (size_t i = 0; i < options.gpus.size(); ++i) {
    if (options.gpus[i] == 0)
      return absl::InvalidArgumentError(absl::StrCat("workload.gpus[", i, "]: must be >= 1"));
  }
  if (options.models.empty()) return absl::InvalidArgumentError("workload.models: empty");
  // Resolve each model once.
  struct Resolved {
    std::string name;
    double compute_us = 0, gradient_bytes = 0;  // gradient-size models
  };
  std::vector<Resolved> models;
  for (size_t i = 0; i < options.models.size(); ++i) {
    const WorkloadModel& m = options.models[i];
    const std::string field = absl::StrCat("workload.models[", i, "]");
    if (m.name.empty()) return absl::InvalidArgumentError(field + ".name: empty");
    Resolved r{.name = m.name};
    if (m.measured) {
      absl::StatusOr<models::ModelTiming> t = catalog.Lookup(m.name, "1");
      if (!t.ok()) return absl::NotFoundError(absl::StrCat(field, ": ", t.status().message()));
    } else {
      if (!(m.compute_us >= 0) || !std::isfinite(m.compute_us)) {
        return absl::InvalidArgumentError(field + ".compute_us: must be >= 0");
      }
      if (!(m.gradient_mb >= 0) || !std::isfinite(m.gradient_mb)) {
        return absl::InvalidArgumentError(field + ".gradient_mb: must be >= 0");
      }
      r.compute_us = m.compute_us;
      if (m.gradient_mb > 0) {
        r.gradient_bytes = m.gradient_mb * 1e6;
      } else {
        absl::StatusOr<double> bytes = catalog.GradientBytes(m.name);
        if (!bytes.ok())
          return absl::NotFoundError(absl::StrCat(field, ": ", bytes.status().message()));
        r.gradient_bytes = *bytes;
      }
      if (!(r.gradient_bytes > 0))
        return absl::InvalidArgumentError(field + ".gradient_mb: must be > 0");
    }
    models.push_back(std::move(r));
  }
  std::mt19937_64 rng(options.seed);
  auto unit = [&rng] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  std::vector<TraceJob> jobs(options.jobs);
  double gpu_seconds = 0;
  for (uint32_t i = 0; i < options.jobs; ++i) {
    TraceJob& job = jobs[i];
    const Resolved& m = models[static_cast<size_t>(unit() * models.size()) % models.size()];
    job.id = absl::StrCat(m.name, "-", i);
    job.model = m.name;
    job.compute_us = m.compute_us;
    job.gradient_bytes = m.gradient_bytes;
    job.gpus =
        options.gpus[static_cast<size_t>(unit() * options.gpus.size()) % options.gpus.size()];
    // Log-normal (sigma 0.8) around the median, by Box-Muller, as the Pollux
    // workloads' drawn durations.
    const double u1 = std::max(1e-12, unit()), u2 = unit();
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
    job.duration_s = options.median_duration_s * std::clamp(std::exp(0.8 * z), 0.2, 5.0);
    gpu_seconds += job.gpus * job.duration_s;
  }
  const double rate_per_s = options.load * options.cluster_gpus / (gpu_seconds / options.jobs);
  double at_s = 0;
  for (uint32_t i = 0; i < options.jobs; ++i) {
    if (i > 0) at_s += -std::log(std::max(1e-12, 1 - unit())) / rate_per_s;
    jobs[i].arrival_us = at_s * 1e6;
  }
  return jobs;
}

}  // namespace phasor::sim
