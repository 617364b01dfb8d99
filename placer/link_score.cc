#include "placer/link_score.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "boost/sort/pdqsort/pdqsort.hpp"

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

// Shifts summed at once by SumShiftedRows (four lanes, four accumulators).
constexpr uint64_t kShiftBlock = 16;

// out[s] = sum over bin < b, in bin order, of row[bin][(bin + s) mod g], for
// every s < g; each row readable up to g + kShiftBlock entries (row[r + g] ==
// row[r]). kShiftBlock shifts at a time, one lane each: every lane adds its
// own shift's terms in bin order, so each sum is the one a loop over bins
// would make, bit for bit, and the blocks' lanes run side by side.
PHASOR_AVX2_CLONES void SumShiftedRows(const double* const* row, uint64_t b, uint64_t g, double* out) {
  const Lanes zero = {0, 0, 0, 0};
  for (uint64_t s = 0; s < g; s += kShiftBlock) {
    Lanes acc0 = zero, acc1 = zero, acc2 = zero, acc3 = zero;
    uint64_t r = s % g;
    for (uint64_t bin = 0; bin < b; ++bin) {
      const double* at = row[bin] + r;
      Lanes v;
      std::memcpy(&v, at, sizeof(v));
      acc0 += v;
      std::memcpy(&v, at + 4, sizeof(v));
      acc1 += v;
      std::memcpy(&v, at + 8, sizeof(v));
      acc2 += v;
      std::memcpy(&v, at + 12, sizeof(v));
      acc3 += v;
      if (++r == g) r = 0;
    }
    alignas(32) double sums[kShiftBlock];
    std::memcpy(sums, &acc0, sizeof(acc0));
    std::memcpy(sums + 4, &acc1, sizeof(acc1));
    std::memcpy(sums + 8, &acc2, sizeof(acc2));
    std::memcpy(sums + 12, &acc3, sizeof(acc3));
    for (uint64_t k = 0; k < kShiftBlock && s + k < g; ++k) out[s + k] = sums[k];
  }
}

// std::upper_bound(cls, cls + m, threshold) - cls for a sorted class of m >= 1
// values, without a branch per step (a conditional move instead: the fold's
// searches go in no predictable direction).
inline uint64_t FirstAbove(const double* cls, uint64_t m, double threshold) {
  uint64_t lo = 0, n = m;  // the answer is in [lo, lo + n]
  while (n > 1) {
    const uint64_t half = n / 2;
    lo = cls[lo + half - 1] <= threshold ? lo + half : lo;
    n -= half;
  }
  return lo + (cls[lo] <= threshold ? 1 : 0);
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
      double peak = 0.0;  // 0 + the first job's, as TotalExcess starts a bin
      for (const QuantizedProfile& job : circle.jobs) {
        peak += job.gbps.empty() ? 0.0 : *std::max_element(job.gbps.begin(), job.gbps.end());
      }
      circle.peak_load_gbps = peak;
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
  // No bin can pass the capacity: every term is max(0, L(k) - C) = 0, and
  // so is their sum (a link whose jobs' peaks fit together).
  if (circle.peak_load_gbps <= capacity_gbps) return 0.0;
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

std::optional<double> ExpectedExcessAtRandomPhases(const UnifiedCircle& circle, double capacity_gbps,
                                                   uint64_t max_steps) {
  if (circle.peak_load_gbps <= capacity_gbps) return 0.0;
  // Each job's distinct values, ascending, with their shares of its bins.
  struct Values {
    std::vector<double> x, p;
  };
  std::vector<Values> jobs;
  jobs.reserve(circle.jobs.size());
  for (const QuantizedProfile& job : circle.jobs) {
    if (job.gbps.empty()) continue;
    std::vector<double> sorted = job.gbps;
    std::sort(sorted.begin(), sorted.end());
    const double each = 1.0 / static_cast<double>(sorted.size());
    Values v;
    for (size_t i = 0; i < sorted.size();) {
      size_t k = i;
      while (k < sorted.size() && sorted[k] == sorted[i]) ++k;
      v.x.push_back(sorted[i]);
      v.p.push_back(static_cast<double>(k - i) * each);
      i = k;
    }
    jobs.push_back(std::move(v));
  }
  if (jobs.empty()) return 0.0;
  // The two jobs with the most values last (a stable order: ties keep the
  // circle's order), an empty job in front of a lone one.
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Values& a, const Values& b) { return a.x.size() < b.x.size(); });
  if (jobs.size() == 1) jobs.insert(jobs.begin(), Values{{0.0}, {1.0}});
  const Values& y = jobs[jobs.size() - 2];
  const Values& z = jobs.back();
  // Steps: one walk of y's and z's values per combination of the others
  // (checked as the product grows, so that it cannot overflow).
  const uint64_t walk = y.x.size() + z.x.size();
  if (walk > max_steps) return std::nullopt;
  uint64_t combinations = 1;
  for (size_t j = 0; j + 2 < jobs.size(); ++j) {
    combinations *= jobs[j].x.size();
    if (combinations * walk > max_steps) return std::nullopt;
  }
  // The last job's tails: above[k] = sum_{i >= k} p_i, above_x[k] = sum_{i >= k} p_i x_i.
  const size_t nz = z.x.size();
  std::vector<double> above(nz + 1, 0.0), above_x(nz + 1, 0.0);
  for (size_t k = nz; k-- > 0;) {
    above[k] = above[k + 1] + z.p[k];
    above_x[k] = above_x[k + 1] + z.p[k] * z.x[k];
  }
  // Every combination of the other jobs (an odometer over their values): its
  // sum s and probability w; then y's values ascending, z's threshold
  // C - s - y falling, so one pointer walks z's values down.
  const size_t others = jobs.size() - 2;
  std::vector<size_t> digit(others, 0);
  double excess = 0;
  for (uint64_t c = 0; c < combinations; ++c) {
    double s = 0, w = 1;
    for (size_t j = 0; j < others; ++j) {
      s += jobs[j].x[digit[j]];
      w *= jobs[j].p[digit[j]];
    }
    for (size_t j = 0; j < others && ++digit[j] == jobs[j].x.size(); ++j) digit[j] = 0;
    size_t k = nz;  // z's values from k up pass the threshold
    double part = 0;
    for (size_t m = 0; m < y.x.size(); ++m) {
      const double threshold = capacity_gbps - s - y.x[m];
      while (k > 0 && z.x[k - 1] > threshold) --k;
      if (k == nz) continue;
      part += y.p[m] * std::max(0.0, above_x[k] - threshold * above[k]);
    }
    excess += w * part;
  }
  return excess;
}

bool SameUpToRotation(const UnifiedCircle& circle, const std::vector<uint32_t>& a,
                      const std::vector<uint32_t>& b) {
  // The same shifts (a link of pinned jobs, solved at its pins): no pair to test.
  if (a == b) return true;
  const size_t jobs = circle.jobs.size();
  absl::InlinedVector<int64_t, 8> diff(jobs);
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
  tiled_.resize(jobs);
  tiled_length_.assign(jobs, 0);
  others_bins_.resize(jobs);
  for (size_t f = 0; f < jobs; ++f) {
    uint64_t others = 1;
    for (size_t i = 0; i < jobs; ++i) {
      if (i != f) others = std::lcm(others, uint64_t{JobBins(i)});
    }
    others_bins_[f] = others;
  }
  if (jobs < 2) return;
  FoldedJob best;
  for (size_t f = 0; f < jobs; ++f) {
    const uint64_t others = others_bins_[f];
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
  best.min.resize(best.g);
  best.max.resize(best.g);
  for (uint64_t r = 0; r < best.g; ++r) {
    double* cls = best.sorted.data() + r * best.m;
    for (uint64_t i = 0; i < best.m; ++i) cls[i] = d[r + i * best.g];
    std::sort(cls, cls + best.m);
    double* suf = best.suffix.data() + r * (best.m + 1);
    suf[best.m] = 0;
    for (uint64_t i = best.m; i-- > 0;) suf[i] = suf[i + 1] + cls[i];
    best.min[r] = cls[0];
    best.max[r] = cls[best.m - 1];
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

double CircleEvaluator::ExcessInOrder(const std::vector<size_t>& order, const std::vector<uint32_t>& shifts) {
  // Chunks of FusedExcess's own length (so its lane sums and their order are
  // the same as over a whole load), each chunk's load summed job by job from
  // the patterns, as AddJob sums them.
  constexpr uint64_t kChunk = 1024;
  alignas(32) std::array<double, kChunk> load;
  const uint64_t n = bins();
  double total = 0;
  for (uint64_t begin = 0; begin < n; begin += kChunk) {
    const uint64_t len = std::min(kChunk, n - begin);
    std::fill_n(load.data(), len, 0.0);
    for (size_t j : order) {
      const std::vector<double>& d = circle_->jobs[j].gbps;
      const uint64_t b = d.size();
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
    total += FusedExcess<1>(rows, 1, len, cap_, std::numeric_limits<double>::infinity(), &summed);
  }
  evaluations_ += n;
  return total;
}

double CircleEvaluator::AddJobAndExcess(const std::vector<double>& load, size_t j, uint32_t shift,
                                        std::vector<double>& out) {
  const double* d = Rotated(j, shift % JobBins(j));
  const uint64_t n = bins();
  out.resize(n);
  // FusedExcess<1>'s chunks, lanes and sums over the loads as they are written.
  constexpr uint64_t kChunk = 1024;
  const Lanes zero = {0, 0, 0, 0};
  double total = 0;
  for (uint64_t k = 0; k < n;) {
    const uint64_t end = std::min(n, k + kChunk);
    Lanes acc = zero;
    for (; k + 4 <= end; k += 4) {
      Lanes l, add;
      std::memcpy(&l, load.data() + k, sizeof(l));
      std::memcpy(&add, d + k, sizeof(add));
      l += add;
      std::memcpy(out.data() + k, &l, sizeof(l));
      l -= cap_;
      acc += l > zero ? l : zero;
    }
    double rest = 0;
    for (; k < end; ++k) {
      out[k] = load[k] + d[k];
      rest += std::max(0.0, out[k] - cap_);
    }
    total += ((acc[0] + acc[1]) + (acc[2] + acc[3])) + rest;
  }
  evaluations_ += n;
  return total;
}

double CircleEvaluator::Excess(const std::vector<double>& load) {
  const double* rows[] = {load.data()};
  uint64_t summed = 0;
  const double excess =
      FusedExcess<1>(rows, 1, bins(), cap_, std::numeric_limits<double>::infinity(), &summed);
  evaluations_ += summed;
  return excess;
}


void CircleEvaluator::Tile(size_t j, uint64_t length) const {
  // A fold reads one period of the other jobs (folded_->others_bins), every
  // other evaluation the whole circle: the tile grows to what is read. Only
  // the patterns read are tiled (the joint solver reads one job's).
  const std::vector<double>& d = circle_->jobs[j].gbps;
  const uint64_t b = d.size();
  tiled_[j].emplace(length + b, ScratchBuffer::Uninitialized{});
  double* out = tiled_[j]->get().data();
  for (uint64_t at = 0; at < length + b; at += b) {  // whole copies of the pattern, then the rest
    std::copy_n(d.begin(), std::min(b, length + b - at), out + at);
  }
  tiled_length_[j] = length;
}

CircleEvaluator::RowPointers CircleEvaluator::RotatedRows(const std::vector<uint32_t>& shifts,
                                                          size_t skip, uint64_t length) const {
  RowPointers rows;
  for (size_t j = 0; j < circle_->jobs.size(); ++j) {
    if (j != skip) rows.push_back(Rotated(j, shifts[j] % JobBins(j), length));
  }
  return rows;
}

double CircleEvaluator::FoldedExcessAt(const std::vector<uint32_t>& shifts, double bound) {
  const FoldedJob& fold = *folded_;
  const RowPointers rows = RotatedRows(shifts, fold.job, fold.others_bins);
  const size_t others = rows.size();
  const uint64_t m = fold.m, g = fold.g, l = fold.others_bins;
  // Bin b of the others meets class (b - s_f) mod g of job f.
  uint64_t r = (g - shifts[fold.job] % g) % g;
  constexpr uint64_t kChunk = 512;
  alignas(32) std::array<double, kChunk> load;
  double total = 0;
  uint64_t b = 0;
  // Class r's term at `threshold` (class values above it exceed C): the
  // suffix sum above it less their count times it; exactly 0 when no value is
  // above it (suffix m is 0), so adding it then changes no sum.
  auto term = [&](uint64_t cls_index, uint64_t first, double threshold) {
    return fold.suffix[cls_index * (m + 1) + first] - static_cast<double>(m - first) * threshold;
  };
  while (b < l) {
    const uint64_t len = std::min(kChunk, l - b);
    // The others' load, summed row by row as before (each bin's terms in
    // the same order), four bins at a time.
    {
      uint64_t i = 0;
      for (; i + 4 <= len; i += 4) {
        Lanes sum, d;
        std::memcpy(&sum, rows[0] + b + i, sizeof(sum));
        for (size_t j = 1; j < others; ++j) {
          std::memcpy(&d, rows[j] + b + i, sizeof(d));
          sum += d;
        }
        std::memcpy(load.data() + i, &sum, sizeof(sum));
      }
      for (; i < len; ++i) {
        double sum = rows[0][b + i];
        for (size_t j = 1; j < others; ++j) sum += rows[j][b + i];
        load[i] = sum;
      }
    }
    for (uint64_t i = 0; i < len; ++i) {
      const double threshold = cap_ - load[i];
      if (threshold < fold.max[r]) {
        const uint64_t first =
            threshold < fold.min[r] ? 0 : FirstAbove(fold.sorted.data() + r * m, m, threshold);
        total += term(r, first, threshold);
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
  const RowPointers rows_vector = RotatedRows(shifts, jobs, bins());
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

// Both in instructions, roughly (measured with callgrind on the ranking
// benchmarks): a fold sorts one period of the others' load by class, fills
// the table and sums b shifts sixteen at a time; ExcessAt searches a class per
// bin of the others' period when it folds, else sums every job's row.
double CircleEvaluator::AllShiftsCost(size_t j) const {
  const double period = static_cast<double>(OthersBins(j)), b = JobBins(j);
  const double classes = static_cast<double>(std::gcd(OthersBins(j), uint64_t{JobBins(j)}));
  return period * (3 * std::log2(period / classes + 1) + 12) + b * b / 3;
}

double CircleEvaluator::ExcessAtCost() const {
  const double jobs = static_cast<double>(circle_->jobs.size());
  if (folded_) {
    return static_cast<double>(folded_->others_bins) * (6 * jobs + 4 * std::log2(static_cast<double>(folded_->m)) + 10);
  }
  return static_cast<double>(bins()) * jobs * 1.5;
}

uint64_t CircleEvaluator::ExcessAtEvaluations() const {
  const uint64_t jobs = circle_->jobs.size();
  if (folded_) return folded_->others_bins * (jobs - 1 + std::bit_width(folded_->m));
  return bins() * jobs;
}

double CircleEvaluator::FoldingCost(size_t j) const {
  const double n = static_cast<double>(bins()), b = JobBins(j);
  return (4 * n + b * b) * std::log2(n / b + 1);
}

namespace {

// A load's residue classes modulo b, as ExcessForAllShifts queries them:
// F_r(x) = sum over class r (the bins k = r mod b) of max(0, v + x - C),
// computed as the suffix sum of the class's sorted values above C - x plus
// (their count) x (x - C). The suffix sums add the class's values one by one
// from the largest down, so two layouts that hold the same values in a class
// give the same F_r bit for bit.
//
// A load that repeats every P bins (the other jobs' lcm L, when b does not
// divide it) has only g = gcd(b, P) distinct classes: by the Chinese
// remainder theorem class r mod b holds, once each, the values load[x] with
// x < P and x = r mod g. So the classes are built from the first P bins
// modulo g: P log(P / g) work instead of N log(N / b), N = lcm(b, P).
//
// Runs: when the load takes at most kMaxRunValues distinct values (the sum
// of a few square waves takes at most 2^jobs), each class is its counts of
// each value, and its sorted order and suffix sums follow from the counts
// without sorting. Sorted: any other load, each class sorted.
class LoadClasses {
 public:
  static constexpr size_t kMaxRunValues = 16;
  static constexpr uint64_t kMinBranchlessSort = 32;

  // The classes modulo `g` of load[0, period) (g divides period), queried at
  // x in [0, x_max] only: a value at or below C - x_max never exceeds C, so
  // each sorted class sorts only the values above it (the suffix sums from
  // the top are the same).
  LoadClasses(const double* load, uint64_t period, uint64_t g, double cap, double x_max)
      : g_(g), m_(period / g), cap_(cap) {
    if (!BuildRuns(load, period)) BuildSorted(load, cap - x_max);
  }

  // The index of the first value above `threshold` in the runs' ascending
  // values (values_.size() when none): the same for every class.
  size_t FirstAbove(double threshold) const {
    size_t t = 0;
    while (t < values_.size() && !(values_[t] > threshold)) ++t;
    return t;
  }

  // F_c(x) of class c < g, with first = FirstAbove(C - x) for the runs
  // (ignored when sorted).
  double At(uint64_t c, double x, size_t first) const {
    if (runs_) {
      const size_t k = values_.size() + 1;
      const uint64_t position = positions_[c * k + first];
      return suffix_[c * k + first] + static_cast<double>(m_ - position) * (x - cap_);
    }
    const double* cls = sorted_.data() + c * m_;
    const uint64_t position =
        static_cast<uint64_t>(std::upper_bound(cls + low_[c], cls + m_, cap_ - x) - cls);
    return suffix_[c * (m_ + 1) + position] + static_cast<double>(m_ - position) * (x - cap_);
  }
  double At(uint64_t c, double x) const { return At(c, x, runs_ ? FirstAbove(cap_ - x) : 0); }

  // table[k * stride + c] = F_c(xs[k]) for every class c < g and every k,
  // xs ascending: each sorted class is walked once against the thresholds
  // C - xs[k] (O(m + K) a class, where At's binary search costs K log m),
  // the same positions At finds, so the same values.
  void Fill(const std::vector<double>& xs, double* table, size_t stride) const {
    const size_t count = xs.size();
    if (runs_) {
      for (size_t k = 0; k < count; ++k) {
        const size_t first = FirstAbove(cap_ - xs[k]);
        for (uint64_t c = 0; c < g_; ++c) table[k * stride + c] = At(c, xs[k], first);
      }
      return;
    }
    for (uint64_t c = 0; c < g_; ++c) {
      const double* cls = sorted_.data() + c * m_;
      const double* suffix = suffix_.data() + c * (m_ + 1);
      uint64_t position = low_[c];  // the first value above the threshold, which rises as k falls
      for (size_t k = count; k-- > 0;) {
        const double threshold = cap_ - xs[k];
        while (position < m_ && !(cls[position] > threshold)) ++position;
        table[k * stride + c] = suffix[position] + static_cast<double>(m_ - position) * (xs[k] - cap_);
      }
    }
  }

  bool runs() const { return runs_; }

 private:
  bool BuildRuns(const double* load, uint64_t period) {
    // The distinct values in order of appearance, and each class's count of
    // each, in one pass.
    std::array<double, kMaxRunValues> seen;
    size_t distinct = 0, last = 0;
    Ensure(counts_, g_ * kMaxRunValues);
    std::fill_n(counts_.begin(), g_ * kMaxRunValues, 0u);
    uint64_t c = 0;
    for (uint64_t x = 0; x < period; ++x) {
      const double v = load[x];
      if (distinct == 0 || seen[last] != v) {
        last = 0;
        while (last < distinct && seen[last] != v) ++last;
        if (last == distinct) {
          if (distinct == kMaxRunValues) return false;
          seen[distinct++] = v;
        }
      }
      ++counts_[c * kMaxRunValues + last];
      if (++c == g_) c = 0;
    }
    std::array<size_t, kMaxRunValues> order;
    std::iota(order.begin(), order.begin() + distinct, size_t{0});
    std::sort(order.begin(), order.begin() + distinct, [&](size_t a, size_t b) { return seen[a] < seen[b]; });
    values_.resize(distinct);
    for (size_t t = 0; t < distinct; ++t) values_[t] = seen[order[t]];
    const size_t k = distinct + 1;
    Ensure(positions_, g_ * k);
    Ensure(suffix_, g_ * k);
    for (uint64_t cls = 0; cls < g_; ++cls) {
      const uint32_t* count = counts_.data() + cls * kMaxRunValues;
      uint64_t* position = positions_.data() + cls * k;
      double* suffix = suffix_.data() + cls * k;
      position[0] = 0;
      for (size_t t = 0; t < distinct; ++t) position[t + 1] = position[t] + count[order[t]];
      double sum = 0;
      suffix[distinct] = 0;
      for (size_t t = distinct; t-- > 0;) {
        const double v = values_[t];
        for (uint32_t i = count[order[t]]; i > 0; --i) sum += v;
        suffix[t] = sum;
      }
    }
    runs_ = true;
    return true;
  }

  // Each class: its values at or below `floor` first (unsorted: no query
  // reaches them), then the others sorted, with suffix sums over them.
  void BuildSorted(const double* load, double floor) {
    Ensure(sorted_, g_ * m_);
    Ensure(suffix_, g_ * (m_ + 1));
    Ensure(low_, g_);
    for (uint64_t c = 0; c < g_; ++c) {
      double* cls = sorted_.data() + c * m_;
      uint64_t low = 0, high = m_;
      for (uint64_t i = 0; i < m_; ++i) {
        const double v = load[c + i * g_];
        if (v > floor) {
          cls[--high] = v;
        } else {
          cls[low++] = v;
        }
      }
      low_[c] = low;
      // Branchless partitions for long classes: their values come in no
      // order a branch predictor could follow (BM_Rank16x64x3Arrival in
      // about 0.93x the time with std::sort, alternated three times); short
      // ones by std::sort, whose insertion sort is inlined. Any sort puts the
      // same values in the same order.
      if (m_ - low > kMinBranchlessSort) {
        boost::sort::pdqsort_branchless(cls + low, cls + m_);
      } else {
        std::sort(cls + low, cls + m_);
      }
      double* suf = suffix_.data() + c * (m_ + 1);
      suf[m_] = 0;
      for (uint64_t i = m_; i-- > low;) suf[i] = suf[i + 1] + cls[i];
    }
  }

  // The arrays below are the thread's, kept between calls and grown as
  // needed (never shrunk, so a later call fills them without clearing): one
  // LoadClasses at a time per thread.
  template <typename T>
  static void Ensure(std::vector<T>& v, size_t size) {
    if (v.size() < size) v.resize(size);
  }
  struct Arrays {
    std::vector<uint32_t> counts;     // runs: [class][value in order of appearance]
    std::vector<uint64_t> positions;  // runs: [class][t]: values below values_[t] in the class
    std::vector<double> suffix;       // runs: [class][t]; sorted: [class][position >= low]
    std::vector<double> sorted;       // sorted: class c at [c * m, (c + 1) * m)
    std::vector<uint64_t> low;        // sorted: per class, its values at or below the floor
  };
  static Arrays& ThreadArrays() {
    thread_local Arrays arrays;
    return arrays;
  }

  const uint64_t g_, m_;
  const double cap_;
  bool runs_ = false;
  std::vector<double> values_;  // runs: the load's distinct values, ascending
  Arrays& arrays_ = ThreadArrays();
  std::vector<uint32_t>& counts_ = arrays_.counts;
  std::vector<uint64_t>& positions_ = arrays_.positions;
  std::vector<double>& suffix_ = arrays_.suffix;
  std::vector<double>& sorted_ = arrays_.sorted;
  std::vector<uint64_t>& low_ = arrays_.low;
};

// The period to fold a load of the other jobs at for job j's classes (b bins)
// on a circle of n: their lcm `others` when b does not divide it and it
// leaves the circle's classes whole (lcm(others, b) = n), else the circle.
uint64_t FoldPeriod(uint64_t n, uint64_t others, uint64_t b) {
  return others >= n || others % b == 0 || std::lcm(others, b) != n ? n : others;
}

// FoldPeriod for any load: `others` only where the load repeats every
// `others` bins, bit for bit.
uint64_t LoadPeriod(const std::vector<double>& load, uint64_t others, uint64_t b) {
  const uint64_t n = load.size();
  const uint64_t period = FoldPeriod(n, others, b);
  if (period == n || std::memcmp(load.data(), load.data() + others, (n - others) * sizeof(double)) != 0) return n;
  return period;
}

}  // namespace

void CircleEvaluator::ExcessForAllShifts(const std::vector<double>& load, size_t j,
                                         std::vector<double>& out) {
  ExcessForAllShiftsPeriodic(load.data(), LoadPeriod(load, OthersBins(j), JobBins(j)), j, out);
}

void CircleEvaluator::ExcessForAllShiftsOfOthers(const std::vector<double>& load, size_t j,
                                                 std::vector<double>& out) {
  ExcessForAllShiftsPeriodic(load.data(), FoldPeriod(load.size(), OthersBins(j), JobBins(j)), j, out);
}

void CircleEvaluator::OthersLoad(const std::vector<size_t>& others, const std::vector<uint32_t>& shifts,
                                 size_t j, std::vector<double>& load) const {
  LoadOf(others, shifts, OthersBins(j), load);
}

void CircleEvaluator::LoadOf(const std::vector<size_t>& order, const std::vector<uint32_t>& shifts,
                             uint64_t length, std::vector<double>& load) const {
  // Each pattern walked from its shift, in the order given (AddJob's sums,
  // bin for bin).
  const uint64_t period = length;
  load.resize(period);
  bool first = true;  // the first pattern lands on zeros: 0 + d, written over what was there
  for (size_t i : order) {
    const std::vector<double>& d = circle_->jobs[i].gbps;
    const uint64_t b = d.size();
    uint64_t src = (b - shifts[i] % b) % b;
    for (uint64_t k = 0; k < period;) {
      const uint64_t run = std::min(b - src, period - k);
      double* out = load.data() + k;
      const double* in = d.data() + src;
      if (first) {
        for (uint64_t r = 0; r < run; ++r) out[r] = 0.0 + in[r];
      } else {
        for (uint64_t r = 0; r < run; ++r) out[r] += in[r];
      }
      k += run;
      src = 0;
    }
    first = false;
  }
  if (first) std::fill(load.begin(), load.end(), 0.0);
}

void CircleEvaluator::ExcessForAllShiftsAgainst(const std::vector<size_t>& others,
                                                const std::vector<uint32_t>& shifts, size_t j,
                                                std::vector<double>& out) {
  ScratchBuffer load_buffer(OthersBins(j), ScratchBuffer::Uninitialized{});
  OthersLoad(others, shifts, j, load_buffer.get());
  ExcessForAllShiftsPeriodic(load_buffer.get().data(), OthersBins(j), j, out);
}

void CircleEvaluator::ExcessForAllShiftsPeriodic(const double* load, uint64_t period, size_t j,
                                                 std::vector<double>& out) {
  const uint64_t n = bins(), b = JobBins(j);
  const std::vector<double>& d = circle_->jobs[j].gbps;
  const uint64_t g = std::gcd(period, b);
  double x_max = 0;
  for (double v : d) x_max = std::max(x_max, v);
  const LoadClasses classes(load, period, g, cap_, x_max);
  out.assign(b, 0.0);
  // F_r(v) for each distinct demand v of the pattern (a square wave has one,
  // and 0 for its idle bins) and class r, once, instead of a search per
  // (shift, bin). The same terms added in the same order as a search per
  // (shift, bin) would: the same sums, bit for bit.
  std::vector<double> values;
  values.reserve(b + 1);
  values.push_back(0.0);
  for (double v : d) {
    if (v != 0.0) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  constexpr uint64_t kMaxTable = uint64_t{1} << 20;  // doubles (8 MiB)
  if (values.size() * (g + kShiftBlock) <= kMaxTable) {
    // Row k: F_r(values[k]) for the classes r < g, then its first
    // kShiftBlock entries again (cyclically), so that a block of consecutive
    // classes is one contiguous read. Bin y of the pattern at shift s meets
    // the load's class (y + s) mod B, which holds the values of class
    // (y + s) mod g (g divides B).
    const uint64_t stride = g + kShiftBlock;
    ScratchBuffer table_buffer(values.size() * stride, ScratchBuffer::Uninitialized{});
    std::vector<double>& table = table_buffer.get();  // [value k][class r]
    classes.Fill(values, table.data(), stride);
    for (size_t k = 0; k < values.size(); ++k) {
      double* row_k = table.data() + k * stride;
      for (uint64_t r = g; r < stride; ++r) row_k[r] = row_k[r - g];
    }
    std::vector<const double*> row(b);  // per bin: its value's row
    for (uint64_t bin = 0; bin < b; ++bin) {
      row[bin] = table.data() + (std::lower_bound(values.begin(), values.end(), d[bin]) - values.begin()) * stride;
    }
    // Row entries depend on the class r mod g only, so shift s + g sums the
    // same terms in the same order as shift s: the first g shifts, repeated.
    SumShiftedRows(row.data(), b, g, out.data());
    for (uint64_t s = g; s < b; ++s) out[s] = out[s - g];
  } else {
    ScratchBuffer idle_buffer(b);  // F_r(0), shared by every idle bin of the pattern
    std::vector<double>& idle = idle_buffer.get();
    const size_t first = classes.runs() ? classes.FirstAbove(cap_) : 0;
    for (uint64_t r = 0; r < g; ++r) idle[r] = classes.At(r, 0.0, first);
    for (uint64_t r = g; r < b; ++r) idle[r] = idle[r - g];
    for (uint64_t s = 0; s < b; ++s) {
      double sum = 0;
      uint64_t r = s;  // (bin + s) mod B, walked with the bin
      for (uint64_t bin = 0; bin < b; ++bin) {
        sum += d[bin] == 0.0 ? idle[r] : classes.At(r % g, d[bin]);
        if (++r == b) r = 0;
      }
      out[s] = sum;
    }
  }
  evaluations_ += n + b * b;
}

}  // namespace phasor::placer
