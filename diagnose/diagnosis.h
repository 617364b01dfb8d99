// Link congestion diagnosis (issue 7): for one placement, which jobs collide
// on each contended link, when in their iterations, what it costs, and the
// shifts that fix it. A Diagnosis is a plain value; the renderers
// (diagnose/report.h) turn it into a terminal table, JSON or an HTML page.
//
// How every number is computed (docs/diagnose.md has the long form):
//   - The placement is one candidate of a placer::RankRequest (link form).
//     Diagnose() ranks it with placer::Rank() -- the ranker, affinity graph
//     and one-shift-per-job solution of SPEC 4 -- and takes from it the
//     contended links, each link's quantum and circle size, the achieved
//     ("achievable") link scores, the link's own optimum and the
//     recommended shifts. Nothing of the solver is reimplemented here.
//   - Each contended link's unified circle is rebuilt with
//     placer::BuildUnifiedCircle() from the same demands (profile x share)
//     and options, so it is the circle the ranker solved.
//   - "Current" phases: each job's phase reference r_j is, in order, its
//     profile's t0_epoch_us (an iteration start seen by a probe), or the
//     iteration start phasord gave it (DiagnoseOptions::committed_start_epoch_us,
//     origin + shift of its offset). Its current shift is (r_j - E) mod T_j,
//     with E the smallest r_j of the candidate's jobs (one epoch for all
//     links). A job with neither is assumed to start at shift 0, i.e. every
//     such job starts its iterations together (the worst case for identical
//     jobs, and what the probes cannot tell apart). JobOnLink::phase_source
//     says which applied.
//   - Shifts (us) become circle bins as the ranker does: round(t / q) mod B_j.
//   - Score: placer::LinkScore (SPEC 3.4); excess bytes per hour = the mean
//     excess over capacity, (1 - score) x C Gbit/s, x 3600 s / 8 x 1e9.
//
// Pure functions, thread-safe.
#ifndef PHASOR_DIAGNOSE_DIAGNOSIS_H_
#define PHASOR_DIAGNOSE_DIAGNOSIS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "placer/ranker.h"

namespace phasor::diagnose {

struct DiagnoseOptions {
  // A bin of a job's quantized pattern is part of an Up phase (drawn as an
  // arc) when its demand d exceeds min + up_threshold x (peak - min) of the
  // job's pattern on the link (and d > 0): relative to the job's swing, so
  // steady background traffic is not an Up phase. A flat pattern is Up
  // everywhere (if not 0). In [0, 1); default 0.1.
  double up_threshold = 0.1;
  // Limit the diagnosis to this link id (empty: every contended link).
  // NotFound when the link is not a contended link of the placement.
  std::string only_link;
  // Job -> an iteration start phasord scheduled (offset origin + shift), the
  // phase reference of a job whose profile has no t0_epoch_us. Default empty.
  std::map<std::string, int64_t> committed_start_epoch_us;
};

// Where a job's current phase came from.
enum class PhaseSource {
  kT0,          // the profile's t0_epoch_us
  kCommitted,   // phasord's offset (DiagnoseOptions::committed_start_epoch_us)
  kAssumedZero  // no phase reference: shift 0 assumed
};
// "t0_epoch_us" / "phasord offset" / "assumed 0"
const char* PhaseSourceName(PhaseSource source);

// One job on one contended link.
struct JobOnLink {
  std::string job;
  double share = 1;                  // of the job's profile crossing the link
  uint32_t period_us = 0;            // T_j, the measured period
  uint32_t quantized_period_us = 0;  // T'_j on this link's quantum
  std::vector<double> gbps;          // the quantized pattern (B_j bins, share applied)
  double mean_gbps = 0;              // of `gbps`
  double peak_gbps = 0;              // of `gbps`
  PhaseSource phase_source = PhaseSource::kAssumedZero;
  uint32_t current_shift_us = 0;      // in [0, T_j)
  uint32_t current_shift_bins = 0;    // on the circle, < B_j
  uint32_t recommended_shift_us = 0;  // the ranker's, in [0, T'_j)
  uint32_t recommended_shift_bins = 0;

  uint32_t bins() const { return static_cast<uint32_t>(gbps.size()); }
};

// A half-open range of circle bins [begin, end) where a job is Up.
struct Arc {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// The Up arcs of `job` on a circle of `circle_bins` bins at shift `shift_bins`
// (the pattern repeats circle_bins / B_j times), in ascending order; an arc
// never wraps past bin N (one that would is split in two).
std::vector<Arc> UpArcs(const JobOnLink& job, uint64_t circle_bins, uint32_t shift_bins,
                        double up_threshold);

struct LinkDiagnosis {
  std::string id;
  double capacity_gbps = 0;
  uint32_t quantum_us = 0;          // q used by the ranker on this link
  uint64_t bins = 0;                // N
  std::vector<JobOnLink> jobs;      // the ranker's order (the request's job order)
  std::vector<double> load_before;  // L(k) at the current shifts, N values
  std::vector<double> load_after;   // L(k) at the recommended shifts
  double current_score = 1;         // placer::LinkScore at the current shifts
  double achievable_score = 1;      // the ranker's achieved score (one shift per job)
  double optimal_score = 1;         // the link's own optimum (> achievable only on loops)
  bool exact = false;               // the link's own optimum is proven
  double excess_bytes_per_hour_before = 0;
  double excess_bytes_per_hour_after = 0;

  double period_us() const { return static_cast<double>(bins) * quantum_us; }
  double gain() const { return achievable_score - current_score; }
};

// A link of the input that is not contended (fewer than two jobs with demand).
struct QuietLink {
  std::string id;
  double capacity_gbps = 0;
  std::vector<std::string> jobs;  // the jobs crossing it (0 or 1)
};

// A job of the placement.
struct JobSummary {
  std::string id;
  uint32_t period_us = 0;
  double mean_gbps = 0;  // of its profile (share 1)
  PhaseSource phase_source = PhaseSource::kAssumedZero;
  uint32_t current_shift_us = 0;
  uint32_t recommended_shift_us = 0;
  std::vector<std::string> links;  // contended links it crosses
};

struct Diagnosis {
  std::string candidate;
  std::optional<int64_t> epoch_us;   // E, when some job has t0_epoch_us
  double current_score = 1;          // mean of current link scores (1 when none)
  double achievable_score = 1;       // the ranker's candidate score
  double min_link_score = 1;         // the ranker's
  bool cycle = false;                // the affinity graph has a loop (ranker)
  bool exact = false;                // the ranker proved the shifts optimal
  std::vector<LinkDiagnosis> links;  // contended links, largest gain first
  std::vector<QuietLink> quiet_links;
  std::vector<JobSummary> jobs;  // request order
  double up_threshold = 0.1;     // DiagnoseOptions::up_threshold (for UpArcs)

  double excess_bytes_per_hour_before() const;
  double excess_bytes_per_hour_after() const;
};

// Bytes per hour of a mean excess of `gbps` Gbit/s: gbps x 1e9 / 8 x 3600.
inline double BytesPerHour(double gbps) { return gbps * 1e9 / 8.0 * 3600.0; }

// Diagnoses the one candidate of `request` named `candidate` (empty: the
// request must hold exactly one). The candidate must be in link form (route
// server-form candidates first: placer/candidate_routing.h). Errors:
// InvalidArgument for a request ValidateRankRequest refuses, for several
// candidates without a name, or for a candidate the ranker rejects ("candidate
// 'c0': job 'z' is not defined"); NotFound for an unknown candidate or
// options.only_link.
absl::StatusOr<Diagnosis> Diagnose(const placer::RankRequest& request, const std::string& candidate,
                                   const DiagnoseOptions& options = {});

// The same when the request is already validated or was routed (routing may
// give shares above 1, which ValidateRankRequest refuses).
absl::StatusOr<Diagnosis> DiagnoseValidated(const placer::RankRequest& request,
                                            const std::string& candidate,
                                            const DiagnoseOptions& options = {});

}  // namespace phasor::diagnose

#endif  // PHASOR_DIAGNOSE_DIAGNOSIS_H_
