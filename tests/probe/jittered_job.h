// Generated switch port counters of a jittery training job, read the way the
// Zhejiang Lab leaf's production ports are read (issue 29), for the period
// detection tests and bench/probe/period_family.cc:
//  - one main burst per iteration (burst_bytes over burst_s) plus small
//    traffic between bursts (between_share of the bytes, fluctuating);
//  - the bursts sit on an exact grid of period_s, but each one is off the
//    grid by a timing offset e_n with standard deviation jitter_sd_s:
//    e_n = sqrt(pattern_share) * a * p[n mod k] + sqrt(1 - pattern_share) * a * w_n,
//    w_n white (consecutive intervals T + e_{n+1} - e_n are anti-correlated,
//    -0.5 at lag 1 from w alone) and p a fixed zero-mean pattern of k
//    iterations (the weak k-iteration structure: intervals correlate
//    positively at lag k), dominated by its highest frequency floor(k/2)/k
//    (which makes neighbours more anti-correlated still);
//  - the switch refreshes its counters every refresh_s (with jitter), a
//    poller reads them every read_nominal_s plus an exponential tail and
//    writes per-interval octets: a reading with no refresh since the one
//    before is 0 (about half of them at 0.575 s readings and a 1.1 s
//    refresh), and the bytes a reading shows were counted up to the last
//    refresh, not up to the reading.
// The defaults are the production ports: 11.4035 s, 0.4 s sd jitter,
// lag-1 interval autocorrelation about -0.6 and lag-5 about +0.5, readings
// every ~0.575 s, ~2.7 GB bursts, 6% of the bytes between bursts.
#ifndef PHASOR_TESTS_PROBE_JITTERED_JOB_H_
#define PHASOR_TESTS_PROBE_JITTERED_JOB_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace phasor::probe::testing {

struct JitteredJob {
  double period_s = 11.4035;    // the exact grid the bursts sit on
  double burst_bytes = 2.7e9;   // bytes of one main burst
  double burst_s = 2.0;         // its length
  double burst_noise = 0.1;     // relative sd of each burst's bytes
  double between_share = 0.06;  // share of all bytes sent between bursts
  double jitter_sd_s = 0.4;     // sd of a burst's offset from the grid
  int pattern_k = 5;            // the k-iteration structure in the timing (0 or 1: none)
  double pattern_share = 0.4;   // share of the offsets' variance in it
};

struct RefreshReading {
  double duration_s = 3600;
  double read_nominal_s = 0.5;      // shortest time between two readings
  double read_tail_mean_s = 0.075;  // plus an exponential delay of this mean
  double refresh_s = 1.1;           // the switch refreshes its counters this often
  double refresh_jitter_s = 0.35;   // +- uniformly (the refresh is irregular)
};

// What was generated, besides the CSV: the burst start times and the share
// of zero readings, so a test can check the shape it asked for.
struct JitteredSeries {
  std::string csv;                // SaveTimeUTC,DeviceName,PortName,InOctets,OutOctets
  std::vector<double> burst_s;    // burst start times (s from the series start)
  double zero_reading_share = 0;  // readings that showed 0 octets
  uint64_t readings = 0;
};

// Autocorrelation of the consecutive intervals of `times` at `lag`.
inline double IntervalAutocorrelation(const std::vector<double>& times, size_t lag) {
  std::vector<double> d;
  for (size_t i = 1; i < times.size(); ++i) d.push_back(times[i] - times[i - 1]);
  if (d.size() <= lag + 1) return 0;
  const double mean = std::accumulate(d.begin(), d.end(), 0.0) / d.size();
  double num = 0, den = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    den += (d[i] - mean) * (d[i] - mean);
    if (i + lag < d.size()) num += (d[i] - mean) * (d[i + lag] - mean);
  }
  return den > 0 ? num / den : 0;
}

// Standard deviation of the bursts' offsets from the grid of `period_s`
// anchored at the first burst's mean position.
inline double GridOffsetSd(const std::vector<double>& times, double period_s) {
  std::vector<double> e;
  for (size_t n = 0; n < times.size(); ++n) e.push_back(times[n] - n * period_s);
  const double mean = std::accumulate(e.begin(), e.end(), 0.0) / e.size();
  double ss = 0;
  for (double x : e) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / e.size());
}

inline JitteredSeries GenerateJitteredJob(const JitteredJob& job, const RefreshReading& reading,
                                          uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  JitteredSeries out;

  // The k-iteration pattern: its highest frequency plus a little of a random
  // pattern, zero mean, unit variance.
  const int k = std::max(1, job.pattern_k);
  std::vector<double> pattern(k, 0.0);
  if (k >= 2) {
    const double phase = 2 * M_PI * uniform(rng);
    const int m = k / 2;
    for (int i = 0; i < k; ++i) {
      pattern[i] = std::cos(2 * M_PI * m * i / k + phase) + 0.1 * normal(rng);
    }
    const double mean = std::accumulate(pattern.begin(), pattern.end(), 0.0) / k;
    double ss = 0;
    for (double& x : pattern) {
      x -= mean;
      ss += x * x;
    }
    const double sd = std::sqrt(ss / k);
    for (double& x : pattern) x = sd > 0 ? x / sd : 0;
  }
  const double share = k >= 2 ? job.pattern_share : 0.0;
  const double a = job.jitter_sd_s * std::sqrt(share);
  const double b = job.jitter_sd_s * std::sqrt(1 - share);

  // Rates on a 5 ms grid, then the cumulative byte count.
  constexpr double kStep = 0.005;
  const size_t steps = static_cast<size_t>(std::ceil(reading.duration_s / kStep)) + 1;
  std::vector<double> bytes(steps, 0.0);
  const double between_per_iteration =
      job.burst_bytes * job.between_share / (1 - job.between_share);
  const double between_rate = between_per_iteration / job.period_s;  // bytes per s
  // Between-burst traffic fluctuates in 0.25 s pieces (lognormal-ish factor).
  double factor = 1;
  for (size_t i = 0; i < steps; ++i) {
    if (i % 50 == 0) factor = std::max(0.0, 1 + 0.5 * normal(rng));
    bytes[i] = between_rate * factor * kStep;
  }
  const double first = uniform(rng) * job.period_s;
  for (int n = 0;; ++n) {
    const double e = a * pattern[n % k] + b * normal(rng);
    const double start = first + n * job.period_s + e;
    if (start + job.burst_s >= reading.duration_s) break;
    out.burst_s.push_back(start);
    const double total = std::max(0.0, job.burst_bytes * (1 + job.burst_noise * normal(rng)));
    const double rate = total / job.burst_s;
    for (double t = std::max(0.0, start); t < start + job.burst_s; t += kStep) {
      const size_t i = static_cast<size_t>(t / kStep);
      if (i < steps) bytes[i] += rate * std::min(kStep, start + job.burst_s - t);
    }
  }
  std::vector<double> cumulative(steps + 1, 0.0);
  for (size_t i = 0; i < steps; ++i) cumulative[i + 1] = cumulative[i] + bytes[i];
  auto count_at = [&](double t) {
    const double x = std::clamp(t / kStep, 0.0, static_cast<double>(steps));
    const size_t i = static_cast<size_t>(x);
    if (i >= steps) return cumulative[steps];
    return cumulative[i] + (x - i) * bytes[i];
  };

  // Refreshes and readings.
  std::exponential_distribution<double> tail(1.0 / reading.read_tail_mean_s);
  double refresh = uniform(rng) * reading.refresh_s;
  double shown = count_at(refresh);  // what the counters show at a reading
  double next_refresh =
      refresh + reading.refresh_s + reading.refresh_jitter_s * (2 * uniform(rng) - 1);
  double last_shown = shown;
  out.csv = "SaveTimeUTC,DeviceName,PortName,InOctets,OutOctets\n";
  const int64_t start_ms = 1'716'480'000'000;
  uint64_t zeros = 0;
  for (double t = reading.read_nominal_s; t < reading.duration_s;
       t += reading.read_nominal_s + tail(rng)) {
    while (next_refresh <= t) {
      shown = count_at(next_refresh);
      next_refresh += reading.refresh_s + reading.refresh_jitter_s * (2 * uniform(rng) - 1);
    }
    const int64_t delta = std::llround(shown - last_shown);
    last_shown = shown;
    zeros += delta == 0;
    ++out.readings;
    const std::string v = std::to_string(delta);
    out.csv +=
        std::to_string(start_ms + std::llround(t * 1000)) + ",Leaf-9,Port1," + v + "," + v + "\n";
  }
  out.zero_reading_share = out.readings ? static_cast<double>(zeros) / out.readings : 0;
  return out;
}

}  // namespace phasor::probe::testing

#endif  // PHASOR_TESTS_PROBE_JITTERED_JOB_H_
