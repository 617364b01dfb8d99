// The circle abstraction of one link (SPEC 3.2-3.4): the jobs' quantized
// profiles rolled onto one unified circle, and the link score of a choice of
// shifts.
//
// Plain values and pure functions; thread-safe.
#ifndef PHASOR_PLACER_LINK_SCORE_H_
#define PHASOR_PLACER_LINK_SCORE_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "placer/scratch.h"
#include "placer/traffic_profile.h"

namespace phasor::placer {

// One job's demand on a link: its profile times the share of it that crosses
// the link (0..1).
struct LinkDemand {
  const TrafficProfile* profile = nullptr;  // not owned; must outlive the call
  double share = 1.0;
};

struct CircleOptions {
  uint32_t quantum_us = 1000;  // q: the bin width tried first
  uint64_t max_bins = 1 << 16;  // the unified circle's limit; q doubles until N fits
};

// The jobs of one link on a common circle of N bins of `quantum_us`.
// Job j's pattern (B_j bins) repeats N / B_j times around it.
struct UnifiedCircle {
  uint32_t quantum_us = 0;  // the quantum used (>= the one asked for)
  uint64_t bins = 0;        // N = lcm(B_j)
  std::vector<QuantizedProfile> jobs;
  // The jobs' largest values summed in job order, as a bin's load is summed:
  // no bin's load exceeds it at any shifts (rounded addition is monotone),
  // so at or below the capacity no shift has excess. Set by
  // BuildUnifiedCircle; infinity (no such bound) in a circle built by hand.
  double peak_load_gbps = std::numeric_limits<double>::infinity();

  uint32_t JobBins(size_t j) const { return static_cast<uint32_t>(jobs[j].gbps.size()); }
};

// Quantizes every demand and builds the circle, coarsening the quantum (doubling
// it) until N <= max_bins. Requires validated profiles. InvalidArgument if the
// options are unusable (quantum 0, max_bins 0) or there are no demands;
// ResourceExhausted if no quantum up to the longest period fits max_bins.
absl::StatusOr<UnifiedCircle> BuildUnifiedCircle(const std::vector<LinkDemand>& demands,
                                                 const CircleOptions& options);

// Total excess (sum over the N bins of max(0, L(k) - C), in Gbit/s x bins) for
// shifts given in bins (shifts[j] < B_j).
double TotalExcess(const UnifiedCircle& circle, double capacity_gbps,
                   const std::vector<uint32_t>& shifts);

// The expected excess of one bin (Gbit/s) when every job sits at an
// independent uniformly random phase: E[max(0, X_1 + ... + X_n - C)], X_j one
// of job j's B_j bins drawn uniformly (a bin of the circle at random shifts
// is such a draw, so the circle's expected total excess is N times it).
// Exact: each job's distinct values with their shares of its bins, every
// combination of all but the two jobs with the most distinct values
// enumerated, and those two merged by one walk over their sorted values.
// nullopt when that enumeration would take more than `max_steps` steps.
std::optional<double> ExpectedExcessAtRandomPhases(const UnifiedCircle& circle, double capacity_gbps,
                                                   uint64_t max_steps);

// score = 1 - (1/N) * sum_k Excess(k) / C (SPEC 3.4); not clipped.
inline double ScoreFromExcess(double total_excess, uint64_t bins, double capacity_gbps) {
  return 1.0 - total_excess / (static_cast<double>(bins) * capacity_gbps);
}

// The link score of `shifts` (in bins) on the circle.
double LinkScore(const UnifiedCircle& circle, double capacity_gbps,
                 const std::vector<uint32_t>& shifts);

// True when shifts `a` and `b` (in bins) are the same configuration up to a
// common rotation of the circle, so that they have the same score: some r
// has a_j = b_j + r (mod B_j) for every j, i.e. the differences agree modulo
// every pair's gcd (generalised Chinese remainder theorem).
bool SameUpToRotation(const UnifiedCircle& circle, const std::vector<uint32_t>& a,
                      const std::vector<uint32_t>& b);

// The load L(k) over the N bins of the circle for `shifts` (in bins).
std::vector<double> LoadOnCircle(const UnifiedCircle& circle, const std::vector<uint32_t>& shifts);

// Fast evaluation of one job's shifts against a fixed load on the circle: the
// inner loop of every solver. Holds each job's pattern tiled to N + B_j values
// so that a rotation is a contiguous read, built on the first evaluation
// (planning a search, e.g. ExactSearchCost, needs no tiles). Not thread-safe:
// one evaluator per thread.
class CircleEvaluator {
 public:
  CircleEvaluator(const UnifiedCircle& circle, double capacity_gbps);

  const UnifiedCircle& circle() const { return *circle_; }
  double capacity_gbps() const { return cap_; }
  uint64_t bins() const { return circle_->bins; }
  uint32_t JobBins(size_t j) const { return circle_->JobBins(j); }

  // load[k] += D_j[(k - s) mod N] for every k.
  void AddJob(size_t j, uint32_t shift, std::vector<double>& load) const;

  // sum_k max(0, load[k] + D_j[(k - s) mod N] - C); stops early and returns a
  // value above `bound` once the partial sum exceeds it.
  double ExcessWith(const std::vector<double>& load, size_t j, uint32_t shift, double bound);

  // sum_k max(0, load[k] - C).
  double Excess(const std::vector<double>& load);

  // out = load with job j added at `shift` (as AddJob adds it), and
  // Excess(out), in one pass: the same values bit for bit.
  double AddJobAndExcess(const std::vector<double>& load, size_t j, uint32_t shift, std::vector<double>& out);

  // Excess(load) for the load of the jobs `order` at shifts[j], AddJob'ed
  // onto zeros in that order: the same value, bit for bit, without an N-bin
  // load or the patterns' tiles.
  double ExcessInOrder(const std::vector<size_t>& order, const std::vector<uint32_t>& shifts);

  // The total excess with every job at shifts[j] (bins): the load is summed
  // and measured chunk by chunk, without an N-bin array; stops early and
  // returns a value above `bound` once the partial sum exceeds it.
  //
  // When one job's period shares little with the others' (B_f / gcd(B_f, L)
  // large, L the lcm of the other periods), the circle folds onto the others'
  // L bins: by the Chinese remainder theorem bin b of the others' load meets
  // exactly the pattern values of job f in one residue class modulo
  // g = gcd(B_f, L), so the sum is over L bins of a per-class function
  // G_r(x) = sum over the class of max(0, v + x - C), read from the class's
  // sorted values by binary search: L * log(B_f / g) work instead of N.
  double ExcessAt(const std::vector<uint32_t>& shifts, double bound);

  // ExcessWith(load, j, s) for every s in [0, B_j) at once, into out[s]. Folds
  // the circle: bins k with k = b + s (mod B_j) meet pattern value d_j[b], so
  // each residue class of `load` is sorted once and queried by binary search,
  // costing O(N log(N/B_j) + B_j^2 log(N/B_j)) instead of O(B_j * N). Worth it
  // when the pattern repeats often (FoldingPays).
  void ExcessForAllShifts(const std::vector<double>& load, size_t j, std::vector<double>& out);

  // ExcessForAllShifts of a load made of other jobs' patterns only, each
  // AddJob'ed (any of them, in any order, onto zeros: the searches' loads).
  // Such a load repeats every OthersBins(j) bins bit for bit (each bin and
  // the bin one period on add the same values in the same order), so the
  // check ExcessForAllShifts makes of that, a compare of the whole load, is
  // skipped: the same values.
  void ExcessForAllShiftsOfOthers(const std::vector<double>& load, size_t j, std::vector<double>& out);

  // ExcessForAllShifts of job j against a load that repeats every `period`
  // bins (only load[0, period) is read; lcm(period, B_j) must be the circle's
  // N, as for any load of the other jobs with period OthersBins(j)).
  void ExcessForAllShiftsPeriodic(const double* load, uint64_t period, size_t j, std::vector<double>& out);

  // One period (OthersBins(j) bins) of the load of the jobs `others` (not j)
  // at shifts[i], summed in that order as AddJob would sum them onto zeros.
  void OthersLoad(const std::vector<size_t>& others, const std::vector<uint32_t>& shifts, size_t j,
                  std::vector<double>& load) const;

  // The first `length` bins of the load of the jobs `order` at shifts[i],
  // summed in that order as AddJob would sum them onto zeros (bit for bit),
  // from the patterns themselves: no tiles, no zeroed array.
  void LoadOf(const std::vector<size_t>& order, const std::vector<uint32_t>& shifts, uint64_t length,
              std::vector<double>& load) const;

  // ExcessForAllShifts against that load: the same values, from one period
  // of the others' load instead of the whole circle.
  void ExcessForAllShiftsAgainst(const std::vector<size_t>& others, const std::vector<uint32_t>& shifts,
                                 size_t j, std::vector<double>& out);

  // What ExcessForAllShiftsAgainst costs (one period of the others' load
  // sorted by class, the table, every shift's sum) and what one ExcessAt
  // costs, in the same unit (instructions, roughly), to choose between them.
  double AllShiftsCost(size_t j) const;
  double ExcessAtCost() const;
  // One ExcessWith (a load and one job's row) summed whole, in that unit.
  double ExcessWithCost() const { return static_cast<double>(bins()) * 3; }

  // The bin evaluations one ExcessAt counts when it sums the whole circle
  // (no early stop).
  uint64_t ExcessAtEvaluations() const;

  // The cost of ExcessForAllShifts for job j in bin evaluations (a sorted
  // element counted as four), and whether it beats B_j direct sums of N bins.
  double FoldingCost(size_t j) const;
  bool FoldingPays(size_t j) const {
    return FoldingCost(j) < static_cast<double>(JobBins(j)) * static_cast<double>(bins());
  }

  // The job ExcessAt folds, if any (the one whose residue classes are longest,
  // when they hold at least 16 values).
  std::optional<size_t> folded_job() const {
    return folded_ ? std::optional<size_t>(folded_->job) : std::nullopt;
  }

  // The lcm of the other jobs' pattern bins, per job (the period of a load
  // they make up).
  uint64_t OthersBins(size_t j) const { return others_bins_[j]; }

  // Bin evaluations made so far (the work done).
  uint64_t evaluations() const { return evaluations_; }

 private:
  // Job j's pattern rotated by `shift`, readable over `length` bins (the
  // circle's by default).
  const double* Rotated(size_t j, uint32_t shift, uint64_t length) const {
    if (tiled_length_[j] < length) Tile(j, length);
    return tiled_[j]->get().data() + JobBins(j) - shift;
  }
  const double* Rotated(size_t j, uint32_t shift) const { return Rotated(j, shift, bins()); }
  void Tile(size_t j, uint64_t length) const;  // fills tiled_[j]: job j's pattern over length + B_j bins

  // ExcessAt's fold: job `job`'s pattern split into residue classes modulo
  // g, each sorted, with suffix sums.
  struct FoldedJob {
    size_t job = 0;
    uint64_t g = 1;            // gcd(B_job, others_bins)
    uint64_t m = 1;            // B_job / g values per class
    uint64_t others_bins = 0;  // L: the lcm of the other jobs' periods
    std::vector<double> sorted;  // class r at [r * m, (r + 1) * m)
    std::vector<double> suffix;  // class r at [r * (m + 1), (r + 1) * (m + 1))
    std::vector<double> min, max;  // class r's smallest and largest value
  };
  double FoldedExcessAt(const std::vector<uint32_t>& shifts, double bound);

  // Every job's pattern rotated by its shift, but job `skip` (pass the job
  // count to keep all).
  using RowPointers = absl::InlinedVector<const double*, 8>;
  RowPointers RotatedRows(const std::vector<uint32_t>& shifts, size_t skip, uint64_t length) const;


  const UnifiedCircle* circle_;
  double cap_;
  std::vector<uint64_t> others_bins_;
  // Per job, its tiled pattern (none until an evaluation reads it) and the
  // rotations' readable length (0 until then).
  mutable std::vector<std::optional<ScratchBuffer>> tiled_;
  mutable std::vector<uint64_t> tiled_length_;
  std::optional<FoldedJob> folded_;
  uint64_t evaluations_ = 0;
};

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_LINK_SCORE_H_
