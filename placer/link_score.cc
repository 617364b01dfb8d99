#include "placer/link_score.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace phasor::placer {

absl::StatusOr<UnifiedCircle> BuildUnifiedCircle(const std::vector<LinkDemand>& demands,
                                                 const CircleOptions& options) {
  if (options.quantum_us == 0) return absl::InvalidArgumentError("quantum_us: must be positive");
  if (options.max_bins == 0) return absl::InvalidArgumentError("max_bins: must be positive");
  if (demands.empty()) return absl::InvalidArgumentError("a link circle needs at least one job");
  uint32_t longest = 0;
  for (const LinkDemand& d : demands) longest = std::max(longest, d.profile->period_us);

  for (uint64_t q = options.quantum_us;; q *= 2) {
    // Beyond the longest period every job is one bin: N = 1 always fits.
    const uint32_t quantum = static_cast<uint32_t>(std::min<uint64_t>(q, longest));
    uint64_t n = 1;
    bool fits = true;
    for (const LinkDemand& d : demands) {
      const uint64_t b = QuantizedPeriodUs(d.profile->period_us, quantum) / quantum;
      n = std::lcm(n, b);
      if (n > options.max_bins) {
        fits = false;
        break;
      }
    }
    if (fits) {
      UnifiedCircle circle;
      circle.quantum_us = quantum;
      circle.bins = n;
      circle.jobs.reserve(demands.size());
      for (const LinkDemand& d : demands) circle.jobs.push_back(Quantize(*d.profile, quantum, d.share));
      return circle;
    }
    if (quantum == longest) {
      return absl::ResourceExhaustedError(
          absl::StrCat("no quantum fits the unified circle in max_bins ", options.max_bins));
    }
  }
}

std::vector<double> LoadOnCircle(const UnifiedCircle& circle, const std::vector<uint32_t>& shifts) {
  const uint64_t n = circle.bins;
  std::vector<double> load(n, 0.0);
  for (size_t j = 0; j < circle.jobs.size(); ++j) {
    const std::vector<double>& d = circle.jobs[j].gbps;
    const uint64_t b = d.size();
    // L(k) += d[(k - s) mod B]: walk k and the source index together.
    uint64_t src = (b - shifts[j] % b) % b;
    for (uint64_t k = 0; k < n; ++k) {
      load[k] += d[src];
      if (++src == b) src = 0;
    }
  }
  return load;
}

double TotalExcess(const UnifiedCircle& circle, double capacity_gbps,
                   const std::vector<uint32_t>& shifts) {
  double excess = 0;
  for (double l : LoadOnCircle(circle, shifts)) excess += std::max(0.0, l - capacity_gbps);
  return excess;
}

double LinkScore(const UnifiedCircle& circle, double capacity_gbps,
                 const std::vector<uint32_t>& shifts) {
  return ScoreFromExcess(TotalExcess(circle, capacity_gbps, shifts), circle.bins, capacity_gbps);
}

namespace {

// Sum over k < n of max(0, p[k] + d[k] - cap), giving up (and returning a value
// above `bound`) as soon as the partial sum exceeds `bound`. Four independent
// accumulators let the compiler keep the loop in vector registers.
double BoundedExcess(const double* p, const double* d, uint64_t n, double cap, double bound,
                     uint64_t* evaluations) {
  constexpr uint64_t kChunk = 1024;
  double total = 0;
  uint64_t k = 0;
  while (k < n) {
    const uint64_t end = std::min(n, k + kChunk);
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (; k + 4 <= end; k += 4) {
      a0 += std::max(0.0, p[k] + d[k] - cap);
      a1 += std::max(0.0, p[k + 1] + d[k + 1] - cap);
      a2 += std::max(0.0, p[k + 2] + d[k + 2] - cap);
      a3 += std::max(0.0, p[k + 3] + d[k + 3] - cap);
    }
    for (; k < end; ++k) a0 += std::max(0.0, p[k] + d[k] - cap);
    total += (a0 + a1) + (a2 + a3);
    if (total > bound) break;
  }
  *evaluations += k;
  return total;
}

}  // namespace

CircleEvaluator::CircleEvaluator(const UnifiedCircle& circle, double capacity_gbps)
    : circle_(&circle), cap_(capacity_gbps), tiled_(circle.jobs.size()) {
  const uint64_t n = circle.bins;
  for (size_t j = 0; j < circle.jobs.size(); ++j) {
    const std::vector<double>& d = circle.jobs[j].gbps;
    const uint64_t b = d.size();
    tiled_[j].resize(n + b);
    for (uint64_t i = 0; i < n + b; ++i) tiled_[j][i] = d[i % b];
  }
}

void CircleEvaluator::AddJob(size_t j, uint32_t shift, std::vector<double>& load) const {
  const double* d = Rotated(j, shift % JobBins(j));
  const uint64_t n = bins();
  for (uint64_t k = 0; k < n; ++k) load[k] += d[k];
}

double CircleEvaluator::ExcessWith(const std::vector<double>& load, size_t j, uint32_t shift,
                                   double bound) {
  return BoundedExcess(load.data(), Rotated(j, shift % JobBins(j)), bins(), cap_, bound,
                       &evaluations_);
}

double CircleEvaluator::Excess(const std::vector<double>& load) {
  if (zeros_.size() != bins()) zeros_.assign(bins(), 0.0);
  return BoundedExcess(load.data(), zeros_.data(), bins(), cap_,
                       std::numeric_limits<double>::infinity(), &evaluations_);
}

}  // namespace phasor::placer
