// The joint solver (SPEC section 4): one shift per job of an affinity-graph
// component that has a loop, or two or more pinned jobs, where walking one
// spanning tree cannot keep every link at its own optimum.
//
// It assigns along the maximum-weight spanning tree (weight = how much a link
// stands to gain); when every link then sits at its own optimum the loop is
// harmless and the result is optimal. Otherwise it also tries the other
// spanning trees (when few), then improves the free jobs' shifts on the true
// objective (the sum of the component's normalised link excesses, every job's
// shift applied on all its links) by coordinate descent within an evaluation
// budget.
//
// Assumptions: every link was solved alone first (its circle and its own
// optimum are given); pinned jobs keep their shifts; a shift lives on the
// job's period rounded to the finest quantum of its links.
//
// SolveJoint is a pure function of its arguments (the circles and solutions
// are read, never written); thread-safe, may run concurrently with itself.
#ifndef PHASOR_PLACER_JOINT_SOLVER_H_
#define PHASOR_PLACER_JOINT_SOLVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "placer/affinity_graph.h"
#include "placer/link_score.h"
#include "placer/shift_solver.h"

namespace phasor::placer {

struct JointSolverOptions {
  // Spanning trees tried as starting points of the descent. The maximum-weight
  // tree is always tried; the others only when the component has at most 8x
  // this many ways to drop its loop edges.
  uint32_t max_spanning_trees = 256;
  // Sweeps of the coordinate descent over the component's free jobs.
  uint32_t max_sweeps = 16;
  // Bin evaluations one component's descent may spend (bounds the work on
  // large tangled components; the result stays valid, only less improved).
  uint64_t max_evaluations = 20'000'000;
  // A job's every shift is tried when that costs at most this many bin
  // evaluations; otherwise only the shifts that line it up with a neighbour
  // as a shared link's own optimum would.
  uint64_t full_scan_evaluations = 2'000'000;
  // Centring (default true, as ShiftSolverOptions::centre): a job whose every
  // shift was tried moves, among the shifts of equal best objective, to the
  // middle of the longest run of consecutive ones, so drift has the most room
  // before its Up phase meets another's.
  bool centre = true;
};

// A shift in us of the job at `pos` of `circle` as bins of the circle (< B_pos).
uint32_t ShiftBins(const UnifiedCircle& circle, size_t pos, int64_t t_us);

// One contended link of the candidate, solved alone.
struct JointLink {
  const UnifiedCircle* circle = nullptr;    // not owned; outlives the call
  const LinkSolution* solution = nullptr;   // the link's own optimum; not owned
  double capacity_gbps = 0;                 // > 0
  std::vector<size_t> jobs;                 // job indices, in circle order
  // How much the link stands to gain: its optimum's score minus its score at
  // random phases (the spanning tree's weight). Read for the component's links.
  double gain = 0;

  // The position of job j on this link (its index in `jobs`).
  size_t PositionOf(size_t j) const;
  // A shift in us of the job at `pos` as bins of this link's circle (< B_pos).
  uint32_t Bins(size_t pos, int64_t t_us) const { return ShiftBins(*circle, pos, t_us); }
  // The link's normalised excess (excess / (N * C)) with every job at t[jobs[p]] us.
  double Cost(const std::vector<int64_t>& t) const;
};

// One job of the candidate.
struct JointJob {
  uint32_t period_us = 0;                 // the profile's period (1..kMaxPeriodUs)
  std::optional<uint32_t> pinned_shift_us;  // kept as given
};

struct JointResult {
  // Every link of the component ends at its own optimum (the result is proven).
  bool optimal = false;
  // `out_of_time` answered true: the descent stopped early (shifts stay valid).
  bool stopped = false;
};

// Solves `component` of `graph` (whose links index `links` and jobs index
// `jobs` and `shifts`). `shifts` holds a shift in us per job on entry (pinned
// jobs at their pins) and the component's jobs' new shifts on return; jobs
// outside the component are untouched. `out_of_time`, when set, is asked
// before every job's move; true stops the descent.
JointResult SolveJoint(const AffinityGraph& graph, const AffinityGraph::Component& component,
                       const std::vector<JointLink>& links, const std::vector<JointJob>& jobs,
                       const JointSolverOptions& options, std::vector<int64_t>& shifts,
                       const std::function<bool()>& out_of_time = nullptr);

// The joint objective of `component` at shifts `t` (us): the sum of its links'
// Cost(t). Lower is better; equal to the sum of the links' own optima when
// every link sits at its optimum.
double JointObjective(const AffinityGraph::Component& component, const std::vector<JointLink>& links,
                      const std::vector<int64_t>& t);

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_JOINT_SOLVER_H_
