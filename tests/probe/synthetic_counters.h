// Synthetic switch port counters in the Zhejiang CSV layout
// (probe/switch_csv.h), for the period and confidence tests and the
// extraction benchmark: a square-wave rate (an iteration's Up phase at
// up_gbps, the rest at down_gbps), optionally overlaid with a burst every
// super_period_s (periodic evaluation, gradient accumulation), read at
// irregular times like the real switch (0.5 s nominal plus an exponential
// tail, long outages followed by a cumulative row), with Gaussian noise on
// each reading.
#ifndef PHASOR_TESTS_PROBE_SYNTHETIC_COUNTERS_H_
#define PHASOR_TESTS_PROBE_SYNTHETIC_COUNTERS_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace phasor::probe::testing {

struct RateModel {
  double period_s = 3.0;
  double duty = 0.4;  // share of the period in the Up phase
  double up_gbps = 60;
  double down_gbps = 5;
  double super_period_s = 0;  // 0: none
  double super_len_s = 0;     // burst length
  double super_gbps = 0;      // added during the burst
  double noise = 0.1;         // Gaussian noise on each reading, times its mean rate
};

struct SamplingModel {
  double duration_s = 3600;
  double nominal_s = 0.5;       // shortest interval between readings
  double tail_mean_s = 0.2;     // plus an exponential delay of this mean
  double outage_every_s = 900;  // one outage this often (0: none) ...
  double outage_s = 40;         // ... this long, followed by a cumulative row
};

inline double RateAt(const RateModel& m, double t) {
  double ph = std::fmod(t, m.period_s);
  double g = ph < m.duty * m.period_s ? m.up_gbps : m.down_gbps;
  if (m.super_period_s > 0 && std::fmod(t, m.super_period_s) < m.super_len_s) g += m.super_gbps;
  return g;
}

// CSV text: header and one row per reading of one port.
inline std::string SyntheticSwitchCsv(const RateModel& m, const SamplingModel& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<double> tail(1.0 / s.tail_mean_s);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::string out = "SaveTimeUTC,DeviceName,PortName,InOctets,OutOctets\n";
  const int64_t start_ms = 1'716'480'000'000;
  double t = 0, next_outage = s.outage_every_s > 0 ? s.outage_every_s / 2 : 1e300;
  bool cumulative = false;
  double total = 0;
  while (t < s.duration_s) {
    double next = t + s.nominal_s + tail(rng);
    if (next > next_outage) {
      next = next_outage + s.outage_s;
      next_outage += s.outage_every_s;
      cumulative = true;
    }
    double bytes = 0;
    constexpr double kStep = 0.005;
    for (double u = t; u < next; u += kStep) {
      bytes += RateAt(m, u) * std::min(kStep, next - u) * 1e9 / 8;
    }
    bytes = std::max(0.0, bytes * (1 + m.noise * noise(rng)));
    total += bytes;
    t = next;
    const double value = cumulative ? 1e15 + total : bytes;
    cumulative = false;
    out += std::to_string(start_ms + std::llround(t * 1000)) + ",Leaf-9,Port1," +
           std::to_string(std::llround(value)) + "," + std::to_string(std::llround(value)) + "\n";
  }
  return out;
}

}  // namespace phasor::probe::testing

#endif  // PHASOR_TESTS_PROBE_SYNTHETIC_COUNTERS_H_
