// How many generated jittery jobs (tests/probe/jittered_job.h) the period
// detector reads right: the issue-29 shape (per-iteration timing noise of
// 3-6% of the period, anti-correlated between neighbours, a weak k-iteration
// structure with k = 3..8, hour-long series, 0.5-1 s readings with
// counter-refresh zeros, small traffic between bursts), through the same
// path as `phasor profile --switch-csv` (ParseSwitchCsv, Resample with the
// default 100 ms bins, ExtractProfile with the default options).
//
//   probe_period_family [--cases N] [--seed S] [--verbose]
//
// Family "production": the production ports' period (11.4035 s) with seeds,
// k, jitter, pattern share, burst length and reading interval varied; family
// "periods": the same with the period drawn from 6-16 s (at least 10 readings
// per iteration). A case is read right when the reported period is within 1%
// of the generated one. Prints one line per case with --verbose, and a
// summary line per family (right, and how the wrong ones were read).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "probe/counter_series.h"
#include "probe/profile_extractor.h"
#include "probe/switch_csv.h"
#include "tests/probe/jittered_job.h"

namespace {

using phasor::probe::testing::JitteredJob;
using phasor::probe::testing::RefreshReading;

struct Case {
  JitteredJob job;
  RefreshReading reading;
  uint32_t seed = 0;
};

Case Draw(std::mt19937& rng, bool vary_period, uint32_t seed) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Case c;
  c.seed = seed;
  if (vary_period) c.job.period_s = 6 + 10 * u(rng);
  c.job.pattern_k = 3 + static_cast<int>(rng() % 6);
  c.job.jitter_sd_s = c.job.period_s * (0.03 + 0.03 * u(rng));
  c.job.pattern_share = 0.2 + 0.3 * u(rng);
  c.job.burst_s = 0.6 + 2.4 * u(rng);
  // Readings every 0.5-1 s, but at least 10 per iteration.
  const double longest = std::min(0.9, c.job.period_s / 10 - c.reading.read_tail_mean_s);
  c.reading.read_nominal_s = 0.5 + (longest - 0.5) * u(rng);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  int cases = 50;
  uint32_t seed = 1;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--cases") && i + 1 < argc) {
      cases = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--verbose")) {
      verbose = true;
    } else {
      std::fprintf(stderr, "usage: %s [--cases N] [--seed S] [--verbose]\n", argv[0]);
      return 2;
    }
  }
  for (const bool vary_period : {false, true}) {
    const char* family = vary_period ? "periods" : "production";
    std::mt19937 rng(seed + (vary_period ? 1000 : 0));
    int right = 0;
    std::map<std::string, int> wrong;
    for (int i = 0; i < cases; ++i) {
      const Case c = Draw(rng, vary_period, seed * 7919 + i + (vary_period ? 100000 : 0));
      const auto generated = phasor::probe::testing::GenerateJitteredJob(c.job, c.reading, c.seed);
      auto parsed = phasor::probe::ParseSwitchCsv(generated.csv, "generated.csv");
      if (!parsed.ok()) {
        std::fprintf(stderr, "%s\n", std::string(parsed.status().message()).c_str());
        return 1;
      }
      auto binned = phasor::probe::Resample(parsed->series.at(1).intervals, {});
      auto p = phasor::probe::ExtractProfile(*binned);
      if (!p.ok()) {
        std::fprintf(stderr, "%s\n", std::string(p.status().message()).c_str());
        return 1;
      }
      const double got_s = p->periodic ? p->period_exact_us / 1e6 : 0;
      const bool ok = p->periodic && std::abs(got_s - c.job.period_s) <= 0.01 * c.job.period_s;
      right += ok;
      if (!ok) {
        const double ratio = got_s / c.job.period_s;
        std::string how = !p->periodic ? "no pattern"
                          : std::abs(ratio - std::round(ratio)) < 0.02
                              ? std::to_string(std::lround(ratio)) + "x"
                              : "off";
        ++wrong[how];
      }
      if (verbose) {
        std::printf(
            "%s case %d seed %u: period %.4f s k %d jitter %.3f s (%.1f%%) share %.2f burst %.2f s "
            "reading %.3f s zeros %.2f | read %.4f s confidence %.3f %s\n",
            family, i, c.seed, c.job.period_s, c.job.pattern_k, c.job.jitter_sd_s,
            100 * c.job.jitter_sd_s / c.job.period_s, c.job.pattern_share, c.job.burst_s,
            c.reading.read_nominal_s + c.reading.read_tail_mean_s, generated.zero_reading_share,
            got_s, p->confidence, ok ? "right" : "WRONG");
      }
    }
    std::printf("%s: %d of %d read within 1%%", family, right, cases);
    for (const auto& [how, n] : wrong) std::printf("; %d %s", n, how.c_str());
    std::printf("\n");
  }
  return 0;
}
