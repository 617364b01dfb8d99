#include "placer/link_score.h"

#include <algorithm>
#include <cmath>
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
  const uint64_t n = circle.bins;
  ScratchBuffer load_buffer(n);
  std::vector<double>& load = load_buffer.get();
  for (size_t j = 0; j < circle.jobs.size(); ++j) {
    const std::vector<double>& d = circle.jobs[j].gbps;
    const uint64_t b = d.size();
    // L(k) += d[(k - s) mod B], in runs of whole pattern copies.
    const uint64_t s = shifts[j] % b;
    for (uint64_t k = 0; k < n;) {
      const uint64_t src = (k + b - s) % b;
      const uint64_t run = std::min(b - src, n - k);
      for (uint64_t i = 0; i < run; ++i) load[k + i] += d[src + i];
      k += run;
    }
  }
  double excess = 0;
  for (uint64_t k = 0; k < n; ++k) excess += std::max(0.0, load[k] - capacity_gbps);
  return excess;
}

bool SameUpToRotation(const UnifiedCircle& circle, const std::vector<uint32_t>& a,
                      const std::vector<uint32_t>& b) {
  const size_t jobs = circle.jobs.size();
  std::vector<int64_t> diff(jobs);
  for (size_t j = 0; j < jobs; ++j) {
    const int64_t bj = circle.JobBins(j);
    diff[j] = ((int64_t{a[j]} - int64_t{b[j]}) % bj + bj) % bj;
  }
  for (size_t i = 0; i < jobs; ++i) {
    for (size_t j = i + 1; j < jobs; ++j) {
      const int64_t g = std::gcd(int64_t{circle.JobBins(i)}, int64_t{circle.JobBins(j)});
      if ((diff[i] - diff[j]) % g != 0) return false;
    }
  }
  return true;
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
    : circle_(&circle), cap_(capacity_gbps) {
  const uint64_t n = circle.bins;
  tiled_.reserve(circle.jobs.size());
  for (size_t j = 0; j < circle.jobs.size(); ++j) {
    const std::vector<double>& d = circle.jobs[j].gbps;
    const uint64_t b = d.size();
    tiled_.emplace_back(n + b, ScratchBuffer::Uninitialized{});
    double* out = tiled_.back().get().data();
    for (uint64_t at = 0; at < n + b; at += b) {  // whole copies of the pattern, then the rest
      std::copy_n(d.begin(), std::min(b, n + b - at), out + at);
    }
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
  double excess = 0;
  for (uint64_t k = 0; k < bins(); ++k) excess += std::max(0.0, load[k] - cap_);
  evaluations_ += bins();
  return excess;
}

double CircleEvaluator::FoldingCost(size_t j) const {
  const double n = static_cast<double>(bins()), b = JobBins(j);
  return (4 * n + b * b) * std::log2(n / b + 1);
}

void CircleEvaluator::ExcessForAllShifts(const std::vector<double>& load, size_t j,
                                         std::vector<double>& out) {
  const uint64_t n = bins(), b = JobBins(j), m = n / b;
  const std::vector<double>& d = circle_->jobs[j].gbps;
  // Residue class r of the load, sorted, at sorted[r*m, (r+1)*m); suffix[r*(m+1) + i]
  // is the sum of the class's values from position i on.
  ScratchBuffer sorted_buffer(n, ScratchBuffer::Uninitialized{});
  ScratchBuffer suffix_buffer(b * (m + 1), ScratchBuffer::Uninitialized{});
  std::vector<double>& sorted = sorted_buffer.get();
  std::vector<double>& suffix = suffix_buffer.get();
  for (uint64_t r = 0; r < b; ++r) {
    double* cls = sorted.data() + r * m;
    for (uint64_t i = 0; i < m; ++i) cls[i] = load[r + i * b];
    std::sort(cls, cls + m);
    double* suf = suffix.data() + r * (m + 1);
    suf[m] = 0;
    for (uint64_t i = m; i-- > 0;) suf[i] = suf[i + 1] + cls[i];
  }
  // F_r(x) = sum over class r of max(0, v + x - C).
  auto f = [&](uint64_t r, double x) {
    const double* cls = sorted.data() + r * m;
    const uint64_t first = static_cast<uint64_t>(std::upper_bound(cls, cls + m, cap_ - x) - cls);
    return suffix[r * (m + 1) + first] + static_cast<double>(m - first) * (x - cap_);
  };
  ScratchBuffer idle_buffer(b);  // F_r(0), shared by every idle bin of the pattern
  std::vector<double>& idle = idle_buffer.get();
  for (uint64_t r = 0; r < b; ++r) idle[r] = f(r, 0.0);
  out.assign(b, 0.0);
  for (uint64_t s = 0; s < b; ++s) {
    double sum = 0;
    uint64_t r = s;  // (bin + s) mod B, walked with the bin
    for (uint64_t bin = 0; bin < b; ++bin) {
      sum += d[bin] == 0.0 ? idle[r] : f(r, d[bin]);
      if (++r == b) r = 0;
    }
    out[s] = sum;
  }
  evaluations_ += n + b * b;
}

}  // namespace phasor::placer
