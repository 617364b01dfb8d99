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

Fold FoldSeries(const std::vector<double>& v, size_t begin, size_t end, double period,
                double offset, int bins, double bin_width) {
  Fold f;
  f.sum.assign(bins, 0.0);
  f.count.assign(bins, 0.0);
  for (size_t i = begin; i < end; ++i) {
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

// Consecutive ranges of about `cycles` periods each (the last one absorbs a
// short remainder). Folding chunk by chunk tolerates a slow phase drift (an
// iteration time that wanders, a period known to within 1e-4) that would
// smear a fold over thousands of periods.
std::vector<std::pair<size_t, size_t>> Chunks(size_t n, double period, double cycles) {
  const size_t len = std::max<size_t>(1, static_cast<size_t>(std::ceil(cycles * period)));
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t b = 0; b < n; b += len) out.emplace_back(b, std::min(n, b + len));
  if (out.size() >= 2 && out.back().second - out.back().first < len / 2) {
    out[out.size() - 2].second = n;
    out.pop_back();
  }
  return out;
}

// Mean and valid count of v over [begin, end).
std::pair<double, double> RangeMean(const std::vector<double>& v, size_t begin, size_t end) {
  double sum = 0, count = 0;
  for (size_t i = begin; i < end; ++i) {
    if (std::isnan(v[i])) continue;
    sum += v[i];
    count += 1;
  }
  return {count > 0 ? sum / count : 0.0, count};
}

// The series minus its centred moving mean over one period (valid bins
// only; NaN stays NaN, and so does a bin whose window is mostly gaps). The
// mean of a periodic signal over any whole period is its overall mean, so
// the pattern passes unchanged while variation slower than the period (load
// that drifts over minutes) is removed.
std::vector<double> Detrend(const std::vector<double>& v, double period) {
  const size_t n = v.size();
  const int64_t w = std::max<int64_t>(1, std::llround(period));
  std::vector<double> prefix(n + 1, 0.0), count(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const bool ok = !std::isnan(v[i]);
    prefix[i + 1] = prefix[i] + (ok ? v[i] : 0.0);
    count[i + 1] = count[i] + (ok ? 1.0 : 0.0);
  }
  std::vector<double> out(n, kNaN);
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) continue;
    int64_t a = static_cast<int64_t>(i) - w / 2;
    int64_t b = a + w;  // [a, b)
    if (a < 0) {
      b -= a;
      a = 0;
    }
    if (b > static_cast<int64_t>(n)) {
      a = std::max<int64_t>(0, a - (b - static_cast<int64_t>(n)));
      b = static_cast<int64_t>(n);
    }
    const double c = count[b] - count[a];
    if (c < 0.5 * static_cast<double>(b - a)) continue;
    out[i] = v[i] - (prefix[b] - prefix[a]) / c;
  }
  return out;
}

// Sub-bin peak position by a parabola through three points.
double ParabolicPeak(const std::vector<double>& r, size_t i) {
  if (i == 0 || i + 1 >= r.size() || std::isnan(r[i - 1]) || std::isnan(r[i + 1])) return i;
  const double a = r[i - 1], b = r[i], c = r[i + 1];
  const double den = a - 2 * b + c;
  // Not a strict maximum, or a neighbour that is not finite (a NaN r[i] or
  // an infinite a - c would otherwise make the offset NaN): the lag itself.
  if (!(den < 0)) return i;
  const double d = 0.5 * (a - c) / den;
  if (!std::isfinite(d)) return i;
  return static_cast<double>(i) + std::clamp(d, -0.5, 0.5);
}

// The share of the (detrended) variance a fold at `period` with `bins`
// phase bins explains, chance-corrected and averaged over chunks of `cycles`
// periods (valid-weighted), and its standard deviation under white noise:
// a chunk's R^2 then follows Beta((B-1)/2, (m-B)/2).
struct Explained {
  double share = 0;
  double noise_sd = 0;
  double weight = 0;  // valid bins in chunks long enough to count
};
Explained ExplainedShare(const std::vector<double>& v, double period, int bins, double cycles) {
  const std::vector<double> d = Detrend(v, period);
  double weighted = 0, weight = 0, noise_var = 0;
  for (const auto& [begin, end] : Chunks(v.size(), period, cycles)) {
    const auto [chunk_mean, m] = RangeMean(d, begin, end);
    if (m <= bins + 1) continue;
    double chunk_ss = 0;
    for (size_t i = begin; i < end; ++i) {
      if (!std::isnan(d[i])) chunk_ss += (d[i] - chunk_mean) * (d[i] - chunk_mean);
    }
    const double chance = (bins - 1.0) / (m - 1.0);
    double c = 0;
    if (chunk_ss > 0) {
      const double r2 =
          BetweenVariance(FoldSeries(d, begin, end, period, 0.0, bins, 1.0), chunk_mean) / chunk_ss;
      c = (r2 - chance) / (1 - chance);
    }
    const double beta_a = (bins - 1) / 2.0, beta_b = (m - bins) / 2.0;
    const double sd = std::sqrt(beta_a * beta_b /
                                ((beta_a + beta_b) * (beta_a + beta_b) * (beta_a + beta_b + 1))) /
                      (1 - chance);
    weighted += m * c;
    noise_var += m * m * sd * sd;
    weight += m;
  }
  Explained e;
  e.weight = weight;
  if (weight > 0) {
    e.share = std::clamp(weighted / weight, 0.0, 1.0);
    e.noise_sd = std::sqrt(noise_var) / weight;
  }
  return e;
}

// r at a fractional lag, linearly interpolated (NaN when a neighbour is).
double AcfAt(const std::vector<double>& r, double lag) {
  if (!(lag >= 0)) return kNaN;
  const size_t i = static_cast<size_t>(lag);
  if (i + 1 >= r.size()) return kNaN;
  const double f = lag - static_cast<double>(i);
  return (1 - f) * r[i] + f * r[i + 1];
}

// The mean of r over the first `multiples` multiples of p (those with a
// value): how well every iteration lines up with the ones p, 2p, ... after
// it. Per-iteration timing noise makes each hill of r broad and, when the
// noise has structure, off-centre (the mode of the interval between two
// bursts is not its mean), but every hill is centred on its multiple on
// average, so their sum peaks at the period itself.
double HarmonicAcf(const std::vector<double>& r, double p, int multiples) {
  double sum = 0;
  int count = 0;
  for (int j = 1; j <= multiples; ++j) {
    const double x = AcfAt(r, j * p);
    if (std::isnan(x)) continue;
    sum += x;
    ++count;
  }
  return count > 0 ? sum / count : kNaN;
}

// What RefinePeriod reads.
struct RefineContext {
  const std::vector<double>& v;  // the series
  const std::vector<double>& r;  // its autocorrelation
  double min_lag = 2;
  size_t lag_hi = 0;
  double fold_cycles = 32;
};

// Refinement of the autocorrelation peak at `lag` below one bin (step 4 of
// the header): the period the series repeats at near that lag, in bins.
// Without `fold_scan`, the estimate before epoch folding (good to a fraction
// of a bin: enough to judge a candidate by its fold, step 3).
double RefinePeriod(const RefineContext& c, size_t lag, bool fold_scan) {
  const std::vector<double>& v = c.v;
  const std::vector<double>& r = c.r;
  const size_t n = v.size();
  const double coarse = ParabolicPeak(r, lag);
  const double acf_peak = r[lag];

  // Step 4a: where the autocorrelation at all multiples (up to one fold
  // chunk) lines up best, within 5% (or 0.6 bin) of the peak.
  const double reach = std::max(0.6, 0.05 * coarse);
  const int multiples =
      std::max(1, std::min(static_cast<int>(c.fold_cycles),
                           static_cast<int>(static_cast<double>(c.lag_hi) / (coarse + reach))));
  double consensus = coarse;
  {
    double best = HarmonicAcf(r, coarse, multiples);
    const double step = 0.02;
    for (double p = std::max(c.min_lag, coarse - reach); p <= coarse + reach; p += step) {
      const double h = HarmonicAcf(r, p, multiples);
      if (h > best) {
        best = h;
        consensus = p;
      }
    }
  }
  if (!fold_scan) return consensus;
  double period = coarse;
  double uncertainty = 0.6;  // bins
  if (std::abs(consensus - coarse) > 0.6) {
    // The peak is off-centre (timing noise): its multiples are too, one by
    // one; their consensus is the estimate, good to about a bin over the
    // multiples it spans.
    period = consensus;
    uncertainty = std::max(0.05, 1.0 / multiples);
  } else {
    // Step 4b: the peaks near k times the period (k = 2, 4, 8, ... while
    // they stay at least half as high) each narrow it down to about 1/k bin.
    for (size_t k = 2; k * period + k * uncertainty + 1 < c.lag_hi; k *= 2) {
      const double center = k * period;
      const double window = k * uncertainty + 1;
      const size_t from = static_cast<size_t>(std::max(1.0, std::floor(center - window)));
      const size_t to = static_cast<size_t>(std::ceil(center + window));
      size_t arg = 0;
      for (size_t t = from; t <= to && t + 1 < r.size(); ++t) {
        if (std::isnan(r[t])) continue;
        if (arg == 0 || r[t] > r[arg]) arg = t;
      }
      if (arg == 0 || !(r[arg] >= 0.5 * acf_peak)) break;
      // The k-th multiple must agree with the estimate so far: on a short
      // period the window around k*T reaches back to T's own peak, and
      // taking that as k*T would divide the period by k at every step.
      const double refined = ParabolicPeak(r, arg) / static_cast<double>(k);
      if (!(std::abs(refined - period) <= uncertainty)) break;
      if (!(std::abs(refined - consensus) <= uncertainty)) break;
      period = refined;
      uncertainty = 0.6 / static_cast<double>(k);
    }
  }
  // Step 4c: epoch folding on a fine grid within that uncertainty, chunk by
  // chunk.
  const int score_bins = std::max(4, static_cast<int>(std::lround(coarse)));
  auto score = [&](double p) {
    double total = 0;
    for (const auto& [begin, end] : Chunks(n, p, c.fold_cycles)) {
      const double chunk_mean = RangeMean(v, begin, end).first;
      total += BetweenVariance(FoldSeries(v, begin, end, p, 0.0, score_bins, p / score_bins),
                               chunk_mean);
    }
    return total;
  };
  const double lo = std::max(c.min_lag, period - 1.5 * uncertainty);
  const double hi = period + 1.5 * uncertainty;
  double best_score = -1;
  constexpr int kSteps = 60;
  for (int s = 0; s <= kSteps; ++s) {
    const double p = lo + (hi - lo) * s / kSteps;
    const double sc = score(p);
    if (sc > best_score) {
      best_score = sc;
      period = p;
    }
  }
  return period;
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
  // The fundamental: the shortest peak that is a real periodicity, not the
  // highest one (which may be a multiple of it, or a super-period such as
  // periodic evaluation that overlays it). A shorter peak t qualifies when
  //  - it stands out: r(t) >= harmonic_ratio * r(highest), r(t) >= 0.05, and
  //    r(t) is 4 standard deviations above what the series' own short-range
  //    correlation gives by chance (Bartlett's formula);
  //  - it repeats: near 2t and 3t (those within the lag range) the
  //    autocorrelation peaks within a factor of two of r(t). A peak that is
  //    only the distance between two bursts of one iteration has no echo at
  //    2t; a lag whose multiples correlate much better is a fraction of
  //    another period, not a period;
  //  - the highest peak is one of its multiples: a periodic signal's
  //    autocorrelation peaks only at multiples of its period (a super-period
  //    laid over the iterations shows at the multiple nearest to it), so a
  //    shorter lag the highest peak is no multiple of is another pattern (a
  //    sampling artefact, such as counters refreshed about once a second);
  //  - it explains the pattern: folded at t the series keeps at least half
  //    of what folding at the highest peak explains.
  // Every candidate, and the highest peak, is judged at its refined period
  // (step 4), not at its lag: with per-iteration timing noise the hill of r
  // at one period is broad and off-centre, and a fold at a period off by
  // 1-2% explains almost nothing over a chunk of 32 periods, while one at the
  // right period explains nearly as much as one at a sharper multiple.
  size_t peak = peaks.front();
  for (size_t t : peaks) {
    if (r[t] == best) peak = t;
  }
  double short_range = 1;
  for (size_t j = 1; j < start && j < r.size(); ++j) {
    if (!std::isnan(r[j])) short_range += 2 * r[j] * r[j];
  }
  const double chance_sd = std::sqrt(short_range / static_cast<double>(valid));
  const double floor = std::max({options.harmonic_ratio * best, 0.05, 4 * chance_sd});
  const RefineContext refine{v, r, min_lag, lag_hi, options.fold_cycles};
  auto explained_at = [&](double p) {
    return ExplainedShare(v, p, std::max(2, static_cast<int>(std::ceil(p))), options.fold_cycles)
        .share;
  };
  const double highest = ParabolicPeak(r, peak);
  double at_highest = kNaN;  // computed for the first candidate that gets that far
  for (size_t t : peaks) {
    if (t >= peak) break;
    if (r[t] < floor) continue;
    const double tp = RefinePeriod(refine, t, /*fold_scan=*/false);
    bool repeats = true;
    for (size_t k = 2; k <= 3 && k * tp + 2 <= lag_hi; ++k) {
      const double center = k * tp;
      const double half = std::max(1.5, 0.02 * center);
      double top = -1;
      for (size_t u = static_cast<size_t>(std::max(1.0, std::floor(center - half)));
           u <= static_cast<size_t>(std::ceil(center + half)) && u < r.size(); ++u) {
        if (!std::isnan(r[u])) top = std::max(top, r[u]);
      }
      if (top < 0.5 * r[t] || top > 2 * r[t]) repeats = false;
    }
    const double multiple = std::max(1.0, std::round(highest / tp));
    const bool divides = std::abs(highest - multiple * tp) <= std::max(1.5, 0.03 * highest);
    if (!repeats || !divides) continue;
    if (std::isnan(at_highest)) {
      at_highest = explained_at(RefinePeriod(refine, peak, /*fold_scan=*/false));
    }
    if (explained_at(tp) >= 0.5 * at_highest) {
      peak = t;
      break;
    }
  }
  out.acf_peak = r[peak];
  const double period = RefinePeriod(refine, peak, /*fold_scan=*/true);
  out.period_exact_us = period * series.bin_us;
  out.period_us = static_cast<uint32_t>(std::lround(out.period_exact_us));
  const int bins = static_cast<int>((out.period_us + series.bin_us - 1) / series.bin_us);

  // Step 5: confidence, chunk by chunk, with one phase bin per series bin.
  // Under white noise a chunk's R^2 follows Beta((B-1)/2, (m-B)/2); the
  // search over many periods picks the best of many draws, hence a bar of 5
  // standard deviations of the (valid-weighted) mean.
  const auto chunks = Chunks(n, period, options.fold_cycles);
  const Explained explained = ExplainedShare(v, period, bins, options.fold_cycles);
  if (explained.weight == 0) {
    out.reason = "no periodic pattern: too few valid bins per period";
    return out;
  }
  out.confidence = explained.share;
  const double noise_sd = explained.noise_sd;
  if (out.confidence < std::max(options.min_confidence, 5 * noise_sd)) {
    out.reason = absl::StrCat("no periodic pattern: best candidate period ", out.period_us,
                              " us explains too little (confidence ", out.confidence, ")");
    return out;
  }

  // The profile comes from the newest chunk: the current shape and phase.
  const size_t fold_begin = chunks.back().first;
  const Fold fold = FoldSeries(v, fold_begin, n, period, 0.0, bins, 1.0);
  const double fold_mean = RangeMean(v, fold_begin, n).first;

  // Step 6: two-level fit, start of the longest high run, refold from there.
  std::vector<double> prof(bins, 0.0);
  for (int b = 0; b < bins; ++b) {
    prof[b] = fold.count[b] > 0 ? fold.sum[b] / fold.count[b] : fold_mean;
  }
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
  const Fold final_fold = FoldSeries(v, fold_begin, n, period, run_start, bins, 1.0);
  out.gbps.resize(bins);
  for (int b = 0; b < bins; ++b) {
    const double bytes =
        final_fold.count[b] > 0 ? final_fold.sum[b] / final_fold.count[b] : fold_mean;
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
