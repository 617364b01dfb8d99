#include "placer/pair_bound.h"

#include <algorithm>
#include <numeric>

namespace phasor::placer {
namespace {

// The non-zero bins of a pattern, as (bin, demand).
std::vector<std::pair<uint32_t, double>> Sending(const std::vector<double>& gbps) {
  std::vector<std::pair<uint32_t, double>> out;
  for (uint32_t b = 0; b < gbps.size(); ++b) {
    if (gbps[b] != 0.0) out.emplace_back(b, gbps[b]);
  }
  return out;
}

}  // namespace

uint64_t PairwiseBound::BuildCost(const UnifiedCircle& circle) {
  std::vector<uint64_t> sending;
  for (const QuantizedProfile& job : circle.jobs) {
    sending.push_back(static_cast<uint64_t>(
        std::count_if(job.gbps.begin(), job.gbps.end(), [](double v) { return v != 0.0; })));
  }
  uint64_t cost = 0;
  for (size_t i = 0; i < sending.size(); ++i) {
    for (size_t j = i + 1; j < sending.size(); ++j) cost += sending[i] * sending[j];
  }
  return cost;
}

PairwiseBound::PairwiseBound(const UnifiedCircle& circle, double capacity_gbps)
    : jobs_(circle.jobs.size()), lone_(jobs_), tables_(jobs_ * jobs_) {
  const double n = static_cast<double>(circle.bins);
  auto f = [capacity_gbps](double x) { return std::max(0.0, x - capacity_gbps); };
  std::vector<std::vector<std::pair<uint32_t, double>>> sending;
  for (size_t j = 0; j < jobs_; ++j) {
    const std::vector<double>& d = circle.jobs[j].gbps;
    double lone = 0;
    for (double v : d) lone += f(v);
    lone_[j] = lone * n / static_cast<double>(d.size());
    sending.push_back(Sending(d));
  }
  for (size_t i = 0; i < jobs_; ++i) {
    for (size_t j = i + 1; j < jobs_; ++j) {
      const uint64_t bi = circle.JobBins(i), bj = circle.JobBins(j);
      Table& t = tables_[i * jobs_ + j];
      t.g = static_cast<uint32_t>(std::gcd(bi, bj));
      // f(x + y) = f(x) + f(y) + h(x, y), where h vanishes unless both send:
      // the pair's excess is the two lone excesses plus the interactions of
      // their sending bins. Bin a of i meets bin b of j when a - b = delta (mod g).
      std::vector<double> interaction(t.g, 0.0);
      // Job j's sending bins as (b mod g, y, f(y)), so the inner loop has no
      // division and only one max.
      const size_t count = sending[j].size();
      std::vector<uint32_t> residue(count);
      std::vector<double> y(count), fy(count);
      for (size_t q = 0; q < count; ++q) {
        residue[q] = sending[j][q].first % t.g;
        y[q] = sending[j][q].second;
        fy[q] = f(y[q]);
      }
      for (const auto& [a, x] : sending[i]) {
        const uint32_t ra = a % t.g;
        const double fx = f(x);
        for (size_t q = 0; q < count; ++q) {
          const uint32_t at = ra >= residue[q] ? ra - residue[q] : ra + t.g - residue[q];
          interaction[at] += std::max(0.0, x + y[q] - capacity_gbps) - fx - fy[q];
        }
      }
      const double meets =
          n / (static_cast<double>(bi / t.g) * static_cast<double>(bj));  // N / lcm
      t.excess.resize(t.g);
      for (uint32_t delta = 0; delta < t.g; ++delta) {
        t.excess[delta] = lone_[i] + lone_[j] + meets * interaction[delta];
      }
    }
  }
}

double PairwiseBound::PairExcess(size_t i, size_t j, uint32_t s_i, uint32_t s_j) const {
  if (i > j) return PairExcess(j, i, s_j, s_i);
  const Table& t = TableOf(i, j);
  const uint32_t delta = (s_j % t.g + t.g - s_i % t.g) % t.g;
  return t.excess[delta];
}

double PairwiseBound::StarBound(const std::vector<uint32_t>& shifts) const {
  if (jobs_ == 0) return 0.0;
  double bound = 0;
  StarBoundRun(shifts, 0, shifts[0], 1, &bound);
  return bound;
}

void PairwiseBound::StarBoundRun(const std::vector<uint32_t>& shifts, size_t moving, uint32_t first,
                                 uint32_t count, double* out) const {
  if (jobs_ < 2) {
    std::fill(out, out + count, jobs_ == 1 ? lone_[0] : 0.0);
    return;
  }
  // Per other job c: its star sum without the moving job, and a walk through
  // the table of (c, moving) as the moving job's shift counts up from `first`.
  struct Walk {
    const double* table;
    uint32_t g;
    uint32_t at;
    bool up;      // the table index rises with the moving shift (c < moving)
    double base;  // sum of c's pairs with the other non-moving jobs
    double lone;
  };
  std::vector<Walk> walks;
  walks.reserve(jobs_ - 1);
  const double others = static_cast<double>(jobs_ - 2);
  for (size_t c = 0; c < jobs_; ++c) {
    if (c == moving) continue;
    double base = 0;
    for (size_t j = 0; j < jobs_; ++j) {
      if (j != c && j != moving) base += PairExcess(c, j, shifts[c], shifts[j]);
    }
    const Table& t = c < moving ? TableOf(c, moving) : TableOf(moving, c);
    const uint32_t sc = shifts[c] % t.g, s0 = first % t.g;
    // c < moving: index (s - s_c) mod g; c > moving: index (s_c - s) mod g.
    const uint32_t at = c < moving ? (s0 + t.g - sc) % t.g : (sc + t.g - s0) % t.g;
    walks.push_back({t.excess.data(), t.g, at, c < moving, base, lone_[c]});
  }
  const double moving_lone = others * lone_[moving];
  for (uint32_t s = 0; s < count; ++s) {
    double bound = 0, moving_sum = 0;
    for (Walk& w : walks) {
      const double pair = w.table[w.at];
      moving_sum += pair;
      bound = std::max(bound, w.base + pair - others * w.lone);
      if (w.up) {
        if (++w.at == w.g) w.at = 0;
      } else {
        w.at = w.at == 0 ? w.g - 1 : w.at - 1;
      }
    }
    out[s] = std::max(bound, moving_sum - moving_lone);
  }
}

}  // namespace phasor::placer
