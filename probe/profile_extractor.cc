#include "probe/profile_extractor.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kissfft/kissfft.hh"

namespace phasor::probe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Per-phase sums of a series folded at `period` bins with phase bins of
// width `period / bins`, the phase origin at `offset` bins.
struct Fold {
  std::vector<double> sum;
  std::vector<double> count;
};

Fold FoldSeries(const std::vector<double>& v, double period, double offset, int bins,
                double bin_width) {
  Fold f;
  f.sum.assign(bins, 0.0);
  f.count.assign(bins, 0.0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) continue;
    double phase = std::fmod(static_cast<double>(i) + 0.5 - offset, period);
    if (phase < 0) phase += period;
    int b = static_cast<int>(phase / bin_width);
    if (b >= bins) b = bins - 1;
    f.sum[b] += v[i];
    f.count[b] += 1.0;
  }
  return f;
}

// Variance between phase bins (sum over bins of n_b * (mean_b - mean)^2).
double BetweenVariance(const Fold& f, double mean) {
  double s = 0;
  for (size_t b = 0; b < f.sum.size(); ++b) {
    if (f.count[b] == 0) continue;
    const double d = f.sum[b] / f.count[b] - mean;
    s += f.count[b] * d * d;
  }
  return s;
}

// Sub-bin peak position by a parabola through three points.
double ParabolicPeak(const std::vector<double>& r, size_t i) {
  if (i == 0 || i + 1 >= r.size() || std::isnan(r[i - 1]) || std::isnan(r[i + 1])) return i;
  const double a = r[i - 1], b = r[i], c = r[i + 1];
  const double den = a - 2 * b + c;
  if (den >= 0) return i;
  const double d = 0.5 * (a - c) / den;
  return static_cast<double>(i) + std::clamp(d, -0.5, 0.5);
}

}  // namespace

std::vector<double> Autocorrelation(const std::vector<double>& values, size_t max_lag) {
  const size_t n = values.size();
  std::vector<double> r(max_lag + 1, kNaN);
  if (n == 0) return r;
  double sum = 0;
  size_t valid = 0;
  for (double v : values) {
    if (!std::isnan(v)) {
      sum += v;
      ++valid;
    }
  }
  if (valid == 0) return r;
  const double mean = sum / valid;
  size_t nfft = 1;
  while (nfft < 2 * n) nfft <<= 1;
  using cpx = std::complex<double>;
  std::vector<cpx> x(nfft), m(nfft), fx(nfft), fm(nfft);
  for (size_t i = 0; i < n; ++i) {
    if (!std::isnan(values[i])) {
      x[i] = values[i] - mean;
      m[i] = 1.0;
    }
  }
  kissfft<double> forward(nfft, false);
  kissfft<double> inverse(nfft, true);
  forward.transform(x.data(), fx.data());
  forward.transform(m.data(), fm.data());
  for (size_t k = 0; k < nfft; ++k) {
    fx[k] = std::norm(fx[k]);
    fm[k] = std::norm(fm[k]);
  }
  inverse.transform(fx.data(), x.data());
  inverse.transform(fm.data(), m.data());
  const double c0 = (x[0].real() / nfft) / std::round(m[0].real() / nfft);
  if (!(c0 > 0)) return r;
  for (size_t lag = 0; lag <= max_lag && lag < n; ++lag) {
    const double pairs = std::round(m[lag].real() / nfft);
    if (pairs < 8) continue;
    r[lag] = (x[lag].real() / nfft / pairs) / c0;
  }
  return r;
}

absl::StatusOr<ExtractedProfile> ExtractProfile(const BinnedSeries& series,
                                                const ExtractorOptions& options) {
  if (series.bin_us == 0) return absl::InvalidArgumentError("bin_us: must be positive");
  if (series.bytes.empty()) return absl::InvalidArgumentError("bytes: the series is empty");
  if (!(options.min_confidence >= 0 && options.min_confidence <= 1)) {
    return absl::InvalidArgumentError("min_confidence: must be in [0, 1]");
  }
  if (!(options.min_cycles >= 2)) return absl::InvalidArgumentError("min_cycles: must be >= 2");
  if (!(options.harmonic_ratio > 0 && options.harmonic_ratio <= 1)) {
    return absl::InvalidArgumentError("harmonic_ratio: must be in (0, 1]");
  }
  const std::vector<double>& v = series.bytes;
  const size_t n = v.size();
  double sum = 0;
  size_t valid = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) continue;
    if (v[i] < 0 || std::isinf(v[i])) {
      return absl::InvalidArgumentError(absl::StrCat("bytes[", i, "]: ", v[i], " is not a count"));
    }
    sum += v[i];
    ++valid;
  }
  ExtractedProfile out;
  out.bin_us = series.bin_us;
  const double to_gbps = 8.0 / (series.bin_us * 1000.0);  // bytes per bin -> Gbit/s
  if (valid == 0) {
    out.reason = "no data: every bin is a gap";
    return out;
  }
  const double mean = sum / valid;
  out.mean_gbps = mean * to_gbps;
  if (static_cast<double>(n - valid) > options.max_gap_fraction * n) {
    out.reason = absl::StrCat("no periodic pattern: ", n - valid, " of ", n, " bins are gaps");
    return out;
  }
  if (out.mean_gbps < options.idle_gbps) {
    out.reason = "no periodic pattern: idle";
    return out;
  }
  double ss = 0;
  for (double x : v) {
    if (!std::isnan(x)) ss += (x - mean) * (x - mean);
  }
  if (std::sqrt(ss / valid) < 1e-3 * mean) {
    out.reason = "no periodic pattern: constant rate";
    return out;
  }

  // Lag range.
  const double min_lag = std::max(2.0, static_cast<double>(options.min_period_us) / series.bin_us);
  double max_lag = n / options.min_cycles;
  if (options.max_period_us > 0) {
    max_lag = std::min(max_lag, static_cast<double>(options.max_period_us) / series.bin_us);
  }
  if (max_lag < min_lag + 1) {
    out.reason = absl::StrCat("no periodic pattern: the series (", n,
                              " bins) is too short for min_cycles ", options.min_cycles);
    return out;
  }
  const size_t lag_hi = static_cast<size_t>(max_lag);
  const std::vector<double> r = Autocorrelation(v, lag_hi + 1);

  // Step 3: coarse period.
  size_t start = 1;
  while (start <= lag_hi && !(r[start] < 0)) ++start;
  start = std::max(start, static_cast<size_t>(std::ceil(min_lag)));
  std::vector<size_t> peaks;
  double best = -1;
  for (size_t t = std::max<size_t>(start, 1); t <= lag_hi; ++t) {
    if (std::isnan(r[t]) || std::isnan(r[t - 1]) || std::isnan(r[t + 1])) continue;
    if (r[t] >= r[t - 1] && r[t] > r[t + 1] && r[t] > 0) {
      peaks.push_back(t);
      best = std::max(best, r[t]);
    }
  }
  if (peaks.empty()) {
    out.reason = "no periodic pattern: no autocorrelation peak";
    return out;
  }
  size_t peak = peaks.back();
  for (size_t t : peaks) {
    if (r[t] >= options.harmonic_ratio * best) {
      peak = t;
      break;
    }
  }
  out.acf_peak = r[peak];
  const double coarse = ParabolicPeak(r, peak);

  // Step 4: epoch folding around the coarse period, then a finer pass.
  const int score_bins = std::max(4, static_cast<int>(std::lround(coarse)));
  auto score = [&](double p) {
    return BetweenVariance(FoldSeries(v, p, 0.0, score_bins, p / score_bins), mean);
  };
  double period = coarse;
  double best_score = -1;
  const double lo = std::max(min_lag, coarse - 1.5), hi = coarse + 1.5;
  for (int pass = 0; pass < 2; ++pass) {
    const double a = pass == 0 ? lo : std::max(lo, period - 0.01);
    const double b = pass == 0 ? hi : std::min(hi, period + 0.01);
    const int steps = pass == 0 ? 300 : 40;
    for (int s = 0; s <= steps; ++s) {
      const double p = a + (b - a) * s / steps;
      const double sc = score(p);
      if (sc > best_score) {
        best_score = sc;
        period = p;
      }
    }
  }
  out.period_exact_us = period * series.bin_us;
  out.period_us = static_cast<uint32_t>(std::lround(out.period_exact_us));
  const int bins = static_cast<int>((out.period_us + series.bin_us - 1) / series.bin_us);

  // Step 5: confidence from the fold with one phase bin per series bin.
  const Fold fold = FoldSeries(v, period, 0.0, bins, 1.0);
  const double r2 = BetweenVariance(fold, mean) / ss;
  const double chance = valid > 1 ? std::min(1.0, (bins - 1.0) / (valid - 1.0)) : 1.0;
  out.confidence = chance < 1 ? std::clamp((r2 - chance) / (1 - chance), 0.0, 1.0) : 0.0;
  if (out.confidence < options.min_confidence) {
    out.reason = absl::StrCat("no periodic pattern: best candidate period ", out.period_us,
                              " us explains too little (confidence ", out.confidence, ")");
    return out;
  }

  // Step 6: two-level fit, start of the longest high run, refold from there.
  std::vector<double> prof(bins, 0.0);
  for (int b = 0; b < bins; ++b) prof[b] = fold.count[b] > 0 ? fold.sum[b] / fold.count[b] : mean;
  const auto [mn, mx] = std::minmax_element(prof.begin(), prof.end());
  const double mid = 0.5 * (*mn + *mx);
  double lo_sum = 0, hi_sum = 0;
  int lo_n = 0, hi_n = 0;
  for (double x : prof) {
    if (x > mid) {
      hi_sum += x;
      ++hi_n;
    } else {
      lo_sum += x;
      ++lo_n;
    }
  }
  const double level_lo = lo_n ? lo_sum / lo_n : *mn;
  const double level_hi = hi_n ? hi_sum / hi_n : *mx;
  const double thr = 0.5 * (level_lo + level_hi);
  int run_start = 0, run_len = 0;
  for (int s = 0; s < bins; ++s) {
    const int prev = (s + bins - 1) % bins;
    if (!(prof[s] > thr) || prof[prev] > thr) continue;  // s must begin a run
    int len = 0;
    while (len < bins && prof[(s + len) % bins] > thr) ++len;
    if (len > run_len) {
      run_len = len;
      run_start = s;
    }
  }
  const Fold final_fold = FoldSeries(v, period, run_start, bins, 1.0);
  out.gbps.resize(bins);
  for (int b = 0; b < bins; ++b) {
    const double bytes = final_fold.count[b] > 0 ? final_fold.sum[b] / final_fold.count[b] : mean;
    out.gbps[b] = bytes * to_gbps;
  }
  out.peak_gbps = *std::max_element(out.gbps.begin(), out.gbps.end());
  double up = 0;
  const double last_weight = period - (bins - 1) > 0 ? std::min(1.0, period - (bins - 1)) : 1.0;
  for (int b = 0; b < bins; ++b) {
    const double bytes = out.gbps[b] / to_gbps;
    const double credit =
        level_hi > level_lo ? std::clamp((bytes - level_lo) / (level_hi - level_lo), 0.0, 1.0) : 0;
    up += credit * (b == bins - 1 ? last_weight : 1.0);
  }
  out.up_fraction = std::clamp(up / period, 0.0, 1.0);
  const double cycles = std::floor((n - run_start) / period);
  out.t0_epoch_us =
      series.t0_epoch_us + std::llround((run_start + cycles * period) * series.bin_us);
  if (out.t0_epoch_us >= series.t0_epoch_us + static_cast<int64_t>(n) * series.bin_us) {
    out.t0_epoch_us -= std::llround(period * series.bin_us);
  }
  out.periodic = true;
  return out;
}

}  // namespace phasor::probe
