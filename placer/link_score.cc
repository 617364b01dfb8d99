#include "placer/link_score.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace phasor::placer {

namespace {

// ExcessAt folds a job whose residue classes hold at least this many values.
constexpr uint64_t kMinFoldedClass = 16;

// Four doubles as one value: GCC and Clang compile arithmetic on it to SIMD
// instructions of whatever width the target has (two SSE2 registers, or one
// AVX2 register in the clone below), without -ffast-math reordering the sums.
using Lanes = double __attribute__((vector_size(32)));

// sum_k max(0, sum_j rows[j][k] - cap) over k < n, in one pass, giving up
// past `bound` (checked every chunk). kRows rows, or `count` when kRows is 0
// (the fixed counts let the compiler unroll the rows). Built twice: for AVX2
// machines and for the baseline, picked at load time.
// Clang (14) does not multiversion templates: there the baseline only (the
// fuzz and sanitizer builds).
#if defined(__clang__)
#define PHASOR_AVX2_CLONES
#else
#define PHASOR_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#endif
template <size_t kRows>
PHASOR_AVX2_CLONES double FusedExcess(
    const double* const* rows, size_t count, uint64_t n, double cap, double bound,
    uint64_t* summed) {
  const size_t row_count = kRows > 0 ? kRows : count;
  constexpr uint64_t kChunk = 1024;
  const Lanes zero = {0, 0, 0, 0};
  double total = 0;
  uint64_t k = 0;
  while (k < n) {
    const uint64_t end = std::min(n, k + kChunk);
    Lanes acc = zero;
    for (; k + 4 <= end; k += 4) {
      Lanes l, d;
      std::memcpy(&l, rows[0] + k, sizeof(l));
      for (size_t j = 1; j < row_count; ++j) {
        std::memcpy(&d, rows[j] + k, sizeof(d));
        l += d;
      }
      l -= cap;
      acc += l > zero ? l : zero;
    }
    double rest = 0;
    for (; k < end; ++k) {
      double l = rows[0][k];
      for (size_t j = 1; j < row_count; ++j) l += rows[j][k];
      rest += std::max(0.0, l - cap);
    }
    total += ((acc[0] + acc[1]) + (acc[2] + acc[3])) + rest;
    if (total > bound) break;
  }
  *summed = k;
  return total;
}

}  // namespace

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
      // b >= 1 (QuantizedPeriodUs is at least one quantum); n <= max_bins and
      // b < 2^32 before the lcm, and the lcm is checked for overflow.
      const uint64_t b = QuantizedPeriodUs(d.profile->period_us, quantum) / quantum;
      const uint64_t lcm_factor = b / std::gcd(n, b);
      if (__builtin_mul_overflow(n, lcm_factor, &n) || n > options.max_bins) {
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
  // The load chunk by chunk (no N-bin array: scoring a link allocates
  // nothing), each job's pattern copied in runs of consecutive bins.
  constexpr uint64_t kChunk = 1024;
  std::array<double, kChunk> load;
  const uint64_t n = circle.bins;
  double excess = 0;
  for (uint64_t begin = 0; begin < n; begin += kChunk) {
    const uint64_t len = std::min(kChunk, n - begin);
    std::fill_n(load.data(), len, 0.0);
    for (size_t j = 0; j < circle.jobs.size(); ++j) {
      const std::vector<double>& d = circle.jobs[j].gbps;
      const uint64_t b = d.size();
      // L(k) += d[(k - s) mod B].
      uint64_t src = (begin % b + b - shifts[j] % b) % b;
      for (uint64_t i = 0; i < len;) {
        const uint64_t run = std::min(b - src, len - i);
        for (uint64_t r = 0; r < run; ++r) load[i + r] += d[src + r];
        i += run;
        src = 0;
      }
    }
    const double* rows[] = {load.data()};
    uint64_t summed = 0;
    excess += FusedExcess<1>(rows, 1, len, capacity_gbps, std::numeric_limits<double>::infinity(),
                             &summed);
  }
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

CircleEvaluator::CircleEvaluator(const UnifiedCircle& circle, double capacity_gbps)
    : circle_(&circle), cap_(capacity_gbps) {
  // The job whose classes are longest, folded when a class is long enough
  // for a binary search to beat summing it.
  const size_t jobs = circle.jobs.size();
  if (jobs < 2) return;
  FoldedJob best;
  for (size_t f = 0; f < jobs; ++f) {
    uint64_t others = 1;
    for (size_t i = 0; i < jobs; ++i) {
      if (i != f) others = std::lcm(others, uint64_t{JobBins(i)});
    }
    const uint64_t g = std::gcd(uint64_t{JobBins(f)}, others);
    if (JobBins(f) / g > best.m) {
      best.job = f;
      best.g = g;
      best.m = JobBins(f) / g;
      best.others_bins = others;
    }
  }
  if (best.m < kMinFoldedClass) return;
  const std::vector<double>& d = circle.jobs[best.job].gbps;
  best.sorted.resize(d.size());
  best.suffix.resize(best.g * (best.m + 1));
  for (uint64_t r = 0; r < best.g; ++r) {
    double* cls = best.sorted.data() + r * best.m;
    for (uint64_t i = 0; i < best.m; ++i) cls[i] = d[r + i * best.g];
    std::sort(cls, cls + best.m);
    double* suf = best.suffix.data() + r * (best.m + 1);
    suf[best.m] = 0;
    for (uint64_t i = best.m; i-- > 0;) suf[i] = suf[i + 1] + cls[i];
  }
  folded_ = std::move(best);
}

void CircleEvaluator::AddJob(size_t j, uint32_t shift, std::vector<double>& load) const {
  const double* d = Rotated(j, shift % JobBins(j));
  const uint64_t n = bins();
  for (uint64_t k = 0; k < n; ++k) load[k] += d[k];
}

double CircleEvaluator::ExcessWith(const std::vector<double>& load, size_t j, uint32_t shift,
                                   double bound) {
  const double* rows[] = {load.data(), Rotated(j, shift % JobBins(j))};
  uint64_t summed = 0;
  const double excess = FusedExcess<2>(rows, 2, bins(), cap_, bound, &summed);
  evaluations_ += summed;
  return excess;
}

double CircleEvaluator::Excess(const std::vector<double>& load) {
  const double* rows[] = {load.data()};
  uint64_t summed = 0;
  const double excess =
      FusedExcess<1>(rows, 1, bins(), cap_, std::numeric_limits<double>::infinity(), &summed);
  evaluations_ += summed;
  return excess;
}


void CircleEvaluator::Tile() const {
  const uint64_t n = bins();
  tiled_.reserve(circle_->jobs.size());
  for (const QuantizedProfile& job : circle_->jobs) {
    const std::vector<double>& d = job.gbps;
    const uint64_t b = d.size();
    tiled_.emplace_back(n + b, ScratchBuffer::Uninitialized{});
    double* out = tiled_.back().get().data();
    for (uint64_t at = 0; at < n + b; at += b) {  // whole copies of the pattern, then the rest
      std::copy_n(d.begin(), std::min(b, n + b - at), out + at);
    }
  }
}

CircleEvaluator::RowPointers CircleEvaluator::RotatedRows(const std::vector<uint32_t>& shifts,
                                                          size_t skip) const {
  RowPointers rows;
  for (size_t j = 0; j < circle_->jobs.size(); ++j) {
    if (j != skip) rows.push_back(Rotated(j, shifts[j] % JobBins(j)));
  }
  return rows;
}

double CircleEvaluator::FoldedExcessAt(const std::vector<uint32_t>& shifts, double bound) {
  const FoldedJob& fold = *folded_;
  const RowPointers rows = RotatedRows(shifts, fold.job);
  const size_t others = rows.size();
  const uint64_t m = fold.m, g = fold.g, l = fold.others_bins;
  // Bin b of the others meets class (b - s_f) mod g of job f.
  uint64_t r = (g - shifts[fold.job] % g) % g;
  constexpr uint64_t kChunk = 512;
  std::array<double, kChunk> load;
  double total = 0;
  uint64_t b = 0;
  while (b < l) {
    const uint64_t len = std::min(kChunk, l - b);
    std::copy_n(rows[0] + b, len, load.data());
    for (size_t j = 1; j < others; ++j) {
      const double* d = rows[j] + b;
      for (uint64_t i = 0; i < len; ++i) load[i] += d[i];
    }
    for (uint64_t i = 0; i < len; ++i) {
      const double* cls = fold.sorted.data() + r * m;
      const double* suf = fold.suffix.data() + r * (m + 1);
      const double threshold = cap_ - load[i];  // class values above it exceed C
      if (threshold < cls[m - 1]) {
        const uint64_t first =
            threshold < cls[0]
                ? 0
                : static_cast<uint64_t>(std::upper_bound(cls, cls + m, threshold) - cls);
        total += suf[first] - static_cast<double>(m - first) * threshold;
      }
      if (++r == g) r = 0;
    }
    b += len;
    if (total > bound) break;
  }
  evaluations_ += b * (others + std::bit_width(m));
  return total;
}

double CircleEvaluator::ExcessAt(const std::vector<uint32_t>& shifts, double bound) {
  if (folded_) return FoldedExcessAt(shifts, bound);
  const size_t jobs = circle_->jobs.size();
  const RowPointers rows_vector = RotatedRows(shifts, jobs);
  const double* const* rows = rows_vector.data();
  const uint64_t n = bins();
  uint64_t summed = 0;
  double total = 0;
  switch (jobs) {
    case 1: total = FusedExcess<1>(rows, jobs, n, cap_, bound, &summed); break;
    case 2: total = FusedExcess<2>(rows, jobs, n, cap_, bound, &summed); break;
    case 3: total = FusedExcess<3>(rows, jobs, n, cap_, bound, &summed); break;
    case 4: total = FusedExcess<4>(rows, jobs, n, cap_, bound, &summed); break;
    default: total = FusedExcess<0>(rows, jobs, n, cap_, bound, &summed);
  }
  evaluations_ += summed * jobs;
  return total;
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
  // A pattern has few distinct demands (a square wave one): F_r(v) for each
  // distinct v and class r, once, instead of a search per (shift, bin). The
  // same terms added in the same order: the same sums, bit for bit.
  std::vector<double> values;
  for (double v : d) {
    if (v != 0.0) values.push_back(v);
  }
  const size_t busy = values.size();
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  constexpr uint64_t kMaxTable = uint64_t{1} << 20;  // doubles (8 MiB)
  if (values.size() < busy && values.size() * b <= kMaxTable) {
    ScratchBuffer table_buffer(values.size() * b, ScratchBuffer::Uninitialized{});
    std::vector<double>& table = table_buffer.get();  // [value k][class r]
    for (size_t k = 0; k < values.size(); ++k) {
      for (uint64_t r = 0; r < b; ++r) table[k * b + r] = f(r, values[k]);
    }
    std::vector<const double*> row(b);  // per bin: its value's row, or the idle one
    for (uint64_t bin = 0; bin < b; ++bin) {
      row[bin] = d[bin] == 0.0 ? idle.data()
                               : table.data() + (std::lower_bound(values.begin(), values.end(), d[bin]) -
                                                 values.begin()) * b;
    }
    for (uint64_t s = 0; s < b; ++s) {
      double sum = 0;
      uint64_t r = s;
      for (uint64_t bin = 0; bin < b; ++bin) {
        sum += row[bin][r];
        if (++r == b) r = 0;
      }
      out[s] = sum;
    }
  } else {
    for (uint64_t s = 0; s < b; ++s) {
      double sum = 0;
      uint64_t r = s;  // (bin + s) mod B, walked with the bin
      for (uint64_t bin = 0; bin < b; ++bin) {
        sum += d[bin] == 0.0 ? idle[r] : f(r, d[bin]);
        if (++r == b) r = 0;
      }
      out[s] = sum;
    }
  }
  evaluations_ += n + b * b;
}

}  // namespace phasor::placer
