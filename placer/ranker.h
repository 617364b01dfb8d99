// Ranking candidate placements (SPEC section 5): for each candidate, the
// contended links, one shift per job (section 4) and the candidate's score;
// candidates sorted by score with the host scheduler's order breaking ties.
//
// Rank() is a pure function of its request; it is thread-safe and may run
// concurrently with itself.
#ifndef PHASOR_PLACER_RANKER_H_
#define PHASOR_PLACER_RANKER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "placer/link_score.h"
#include "placer/shift_solver.h"
#include "placer/traffic_profile.h"

namespace phasor::placer {

struct Link {
  std::string id;
  double capacity_gbps = 0;  // > 0
};

struct Job {
  std::string id;
  TrafficProfile profile;
  // A running job's shift that must be kept (< profile.period_us).
  std::optional<uint32_t> pinned_shift_us;
};

// A candidate placement. Link form: job -> link -> share of the job's profile
// that crosses the link (0..1). Server form: job -> its servers in rank order;
// a router (the topology module, `phasor rank --topology`) turns it into the
// link form before ranking, and Rank() rejects a candidate still in server form.
struct Candidate {
  std::string id;
  std::map<std::string, std::map<std::string, double>> links;
  std::map<std::string, std::vector<std::string>> servers;
};

struct RankOptions {
  CircleOptions circle;        // quantum_us (default 1000), max_bins (default 65536)
  ShiftSolverOptions solver;   // exact search budget, restarts, seed
  // Loops: spanning trees tried as starting points of the joint descent. The
  // maximum-weight tree is always tried; the others only when the component
  // has at most 8x this many ways to drop its loop edges.
  uint32_t max_spanning_trees = 256;
  // Loops: sweeps of the joint coordinate descent.
  uint32_t joint_max_sweeps = 16;
  // Loops: bin evaluations one component's joint descent may spend (bounds
  // the work on large tangled components; the result stays valid, only less
  // improved).
  uint64_t joint_max_evaluations = 20'000'000;
  // Loops: a job's every shift is tried when that costs at most this many bin
  // evaluations; otherwise only the shifts that line it up with a neighbour
  // as a shared link's own optimum would.
  uint64_t joint_full_scan_evaluations = 2'000'000;
};

struct RankRequest {
  std::vector<Link> links;
  std::vector<Job> jobs;
  std::vector<Candidate> candidates;  // in the host scheduler's order of preference
  RankOptions options;
};

struct LinkResult {
  std::string id;
  double score = 1;          // achieved with the candidate's shifts
  double optimal_score = 1;  // the link's own optimum (equal to score on tree components)
  double capacity_gbps = 0;
  std::vector<std::string> jobs;  // in the request's job order
  uint32_t quantum_us = 0;        // the quantum the link's circle used
  uint64_t circle_bins = 0;
  bool exact = false;             // the link's own optimum is proven
  std::map<std::string, int64_t> rounding_error_us;  // T'_j - T_j per job
};

struct RankedCandidate {
  std::string candidate;
  double score = 1;           // mean of the contended links' achieved scores (1 when none)
  double min_link_score = 1;  // minimum of them (1 when none)
  bool cycle = false;         // some component of the affinity graph has a loop
  // Proven optimal: every link solved exactly and every link keeps its own
  // optimum (always so on trees; on loops when the links agree).
  bool exact = false;
  std::vector<std::pair<std::string, uint32_t>> shifts_us;  // per job, request order
  std::vector<LinkResult> links;                            // contended links, request order
};

struct RejectedCandidate {
  std::string candidate;
  std::string reason;
};

struct Ranking {
  std::vector<RankedCandidate> ranked;  // best first; ties keep the request's order
  std::vector<RejectedCandidate> rejected;
};

// Checks what makes the whole request unusable (InvalidArgument naming the
// field, e.g. "links[2].capacity_gbps: must be > 0"): ids, capacities,
// profiles, pinned shifts, shares, options. Unknown job or link names in a
// candidate are not errors here: Rank() rejects that candidate alone.
absl::Status ValidateRankRequest(const RankRequest& request);

// Ranks a request that ValidateRankRequest accepted.
Ranking Rank(const RankRequest& request);

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_RANKER_H_
