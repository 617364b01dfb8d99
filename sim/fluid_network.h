// The fluid network model of the simulator (SPEC section 10): jobs alternate
// compute (Down) and communication (Up) phases; the Up phases of concurrent
// jobs share every link max-min fairly (progressive filling), each capped by
// its NIC rate; rates are recomputed at every phase change, and an iteration
// ends when its bytes are delivered.
//
// Model of a job's traffic. A job has ONE fluid flow of rate r (its per-server
// NIC rate while in its Up phase, capped by `nic_gbps`) that loads link l with
// share(l) * r. This is exact for the link form of `phasor rank` (share = the
// part of the job's NIC-level profile that crosses the link) and for ring
// all-reduce, whose hops advance in lockstep at the rate of the slowest hop
// (SPEC section 6). Max-min fairness is computed over these weighted flows:
// raising every unfrozen flow's rate together, a link saturates when
// sum(share * rate) reaches its capacity, and the flows on it freeze.
//
// Assumptions: no queueing, no loss, no congestion-control dynamics (a fluid
// model: rates change instantly at phase changes); the compute phase does not
// depend on the network; a job's bytes per iteration are fixed.
//
// FluidNetwork is a single-threaded value: not thread-safe, no shared state.
#ifndef PHASOR_SIM_FLUID_NETWORK_H_
#define PHASOR_SIM_FLUID_NETWORK_H_

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace phasor::sim {

struct SimLink {
  std::string id;
  double capacity_gbps = 0;  // > 0
};

struct SimJob {
  std::string id;
  double compute_us = 0;    // Down phase per iteration, >= 0
  double comm_bytes = 0;    // bytes per iteration on the job's flow, >= 0
  double nic_gbps = 0;      // rate cap of the flow, > 0
  // Link id -> share of the flow that crosses the link (>= 0; usually 0..1, k
  // when k hops of a ring cross the link). Shares of 0 are ignored; links not
  // named here carry none of the job's traffic.
  std::map<std::string, double> links;
  uint64_t iterations = 1;  // iterations to run, >= 1
  double start_us = 0;      // the first iteration starts here (>= the time it is added)
  // Pacing (SPEC 7, mode `pace`): when > 0, every iteration starts at the next
  // slot start_us + n * pace_period_us at or after the end of the previous one.
  double pace_period_us = 0;
  // Pacing degrades gracefully (default true): an iteration that overruns its
  // slot (ends more than one period after it started) does not wait for the
  // next slot, which would lose most of a period: the next iteration starts
  // at once and the slot grid re-anchors there (counted in JobStats::reslots).
  // False: always wait for the next slot of the original grid.
  bool pace_reslot = true;
  // Closed loop (phasord's re-alignment, docs/phasord.md), when
  // realign_period_us > 0 and pacing is off: the job's intended iteration
  // starts are realign_anchor_us + n x realign_period_us. At an iteration's
  // end the phase error of the next start (wrapped to +-period/2) is checked;
  // when it exceeds realign_threshold_us, the last re-alignment is at least
  // realign_min_interval_us ago, and waiting for the intended start costs at
  // most realign_max_wait_fraction x period, the next iteration waits for it
  // (counted in JobStats::realignments). A late job is not held back a whole
  // period: it is re-aligned when its error has wrapped around to early.
  double realign_period_us = 0;
  double realign_anchor_us = 0;
  double realign_threshold_us = 2000;
  double realign_min_interval_us = 1e6;
  double realign_max_wait_fraction = 0.25;
};

struct FluidNetworkOptions {
  // Links whose load is recorded as a piecewise-constant series over
  // [record_from_us, record_to_us) (for plots). Empty: none.
  std::vector<std::string> record_links;
  double record_from_us = 0;
  double record_to_us = 0;
  // Keep every iteration time of every job (needed for percentiles). When
  // false only counts, sums and extremes are kept (for very long runs).
  bool keep_iteration_times = true;
};

struct JobStats {
  std::string id;
  double start_us = 0;       // when its first iteration started
  double finish_us = 0;      // when its last iteration ended (0 while running)
  uint64_t iterations_done = 0;
  double bytes_delivered = 0;
  double iteration_sum_us = 0;
  double last_end_us = 0;    // when its last iteration ended (start_us before the first)
  std::vector<double> iteration_us;  // end_k - end_{k-1}, end_{-1} = start_us
  bool finished = false;
  uint64_t reslots = 0;       // pacing: slot grid re-anchored after an overrun
  uint64_t realignments = 0;  // closed loop: iterations held back to the intended phase
  uint64_t shifts = 0;        // one-shot shifts applied (ShiftNextIteration)
};

struct LinkStats {
  std::string id;
  double capacity_gbps = 0;
  double bytes = 0;            // bytes carried
  double overload_us = 0;      // time the demand (sum share * NIC rate) exceeded capacity
  double excess_bytes = 0;     // bytes carried while it did (the ECN-mark proxy)
  double busy_us = 0;          // time with any load
};

struct LoadPoint {
  double time_us = 0;
  double gbps = 0;         // load from time_us until the next point
  double demand_gbps = 0;  // what the flows in their Up phase would send at their NIC rates
};

class FluidNetwork {
 public:
  // Link ids must be unique and capacities > 0 (checked by Validate).
  FluidNetwork(std::vector<SimLink> links, FluidNetworkOptions options = {});

  // InvalidArgument naming the field (e.g. "links[1].capacity_gbps: must be > 0").
  static absl::Status ValidateLinks(const std::vector<SimLink>& links);

  // Adds a job; InvalidArgument naming the field when it is malformed, names an
  // unknown link, reuses an id, or starts before now_us().
  absl::Status AddJob(const SimJob& job);

  // Removes a job at once (a preempted or cancelled job); NotFound if unknown.
  absl::Status RemoveJob(const std::string& id);

  // Advances the clock to `until_us` or to the first instant at which some job
  // completes its last iteration, whichever comes first; returns the ids of the
  // jobs that completed at that instant (empty when `until_us` was reached).
  std::vector<std::string> AdvanceUntil(double until_us);

  // A one-shot time shift of a running job (Cassini's agents shifting every
  // job of a placement, not only the new ones): its next iteration starts at
  // the first slot anchor_us + n x period_us at or after the end of its
  // current iteration (or, if its first iteration has not started, at or
  // after its start). Later iterations run free. A later call replaces a
  // shift not yet applied. NotFound for a job not running; InvalidArgument
  // for period_us <= 0 or a non-finite anchor.
  absl::Status ShiftNextIteration(const std::string& id, double anchor_us, double period_us);

  // The closed loop's grid of a job that has one (realign_period_us > 0)
  // becomes anchor_us + n x period_us, as phasord's commit re-records a
  // running job's offset at the phase it holds with its measured period. A
  // job without a closed loop is left as it is. NotFound for a job not
  // running; InvalidArgument for period_us <= 0 or a non-finite anchor.
  absl::Status SetRealignGrid(const std::string& id, double anchor_us, double period_us);

  // Runs until every job has completed.
  void RunToCompletion();

  // The current max-min rate of a job's flow (0 outside its Up phase); NotFound
  // semantics are not needed by callers, so an unknown id gives 0.
  double CurrentRateGbps(const std::string& id) const;

  double now_us() const { return now_us_; }
  uint64_t events() const { return events_; }
  size_t running_jobs() const { return running_; }

  // Statistics so far, in the order jobs were added / links were given.
  const std::vector<JobStats>& job_stats() const { return job_stats_; }
  std::vector<LinkStats> link_stats() const;
  // The recorded load series of a link named in options.record_links.
  const std::vector<LoadPoint>& load_series(const std::string& link_id) const;

 private:
  enum class Phase { kWaiting, kCompute, kComm, kDone };
  struct JobState {
    SimJob spec;
    std::vector<std::pair<uint32_t, double>> links;  // link index, share > 0
    Phase phase = Phase::kWaiting;
    double phase_end_us = 0;       // kWaiting / kCompute: when the phase ends
    double remaining_bits = 0;     // kComm
    double rate_gbps = 0;          // kComm: current max-min rate
    double last_end_us = 0;        // end of the previous iteration
    double iteration_start_us = 0; // start of the current iteration
    double pace_anchor_us = 0;     // pacing: slots are pace_anchor_us + n x period
    double last_realign_us = -std::numeric_limits<double>::infinity();
    double shift_anchor_us = 0;    // ShiftNextIteration, pending when shift_period_us > 0
    double shift_period_us = 0;
    uint64_t done = 0;
    size_t stats_index = 0;
    bool in_link_flows = false;    // in link_flows_ (it was in its Up phase at the last fill)
    bool frozen = false;           // scratch for progressive filling
  };
  // The per-link state the filling's rounds read and write, apart from the
  // rest (LinkState) so that their scans stay within a few cache lines.
  struct LinkFill {
    double residual_gbps = 0;    // scratch: capacity minus frozen load
    double unfrozen_weight = 0;  // scratch
    double load_gbps = 0;        // the load from the last recompute
    // A bound for the filling's candidate test. Within a round, freezing the
    // link's flows at the level leaves residual - level x weight unchanged but
    // for rounding: at most a few units in the last place of the capacity per
    // flow (every term is at most the capacity while the slack is positive).
    // capacity x (2e-12 + 1e-15 x (flows + 2)) covers the saturation test's
    // 1e-12 x capacity plus that drift (1e-15 is more than 4 units of 2^-53 per
    // flow), so a link whose slack exceeds it at a round's start cannot
    // saturate in that round.
    double saturation_margin_gbps = 0;
  };
  struct LinkState {
    double capacity_gbps = 0;
    double demand_gbps = 0;
    // Sums over link_flows_ in its order: the shares, share x NIC rate.
    double flows_weight = 0;
    double flows_demand_gbps = 0;
    int record_index = -1;
    LinkStats stats;
  };

  void StartIteration(JobState& job, double at_us);
  void FinishIteration(JobState& job, std::vector<std::string>& completed);
  void Accumulate(double dt_us);
  void RecomputeRates();
  void Record();

  FluidNetworkOptions options_;
  std::vector<LinkState> links_;
  std::vector<LinkFill> fill_;  // per link, as links_
  std::map<std::string, uint32_t> link_index_;
  std::vector<JobState> jobs_;              // live jobs (not done, not removed)
  std::vector<JobStats> job_stats_;
  std::map<std::string, size_t> job_ids_;   // every id ever added -> stats index
  // The links some flow in its Up phase loads, from the last recompute, in
  // the order a walk over those flows in job order, each over its links,
  // first meets them.
  std::vector<uint32_t> active_links_;
  // Per link: the flows in their Up phase that load it, in job order. Kept
  // from one fill to the next and updated for the jobs whose Up phase began
  // or ended since; rebuilt when jobs_ is compacted (indices move), which
  // clears link_flows_valid_.
  struct LinkFlow {
    uint32_t job;  // index in jobs_
    double share;
  };
  std::vector<std::vector<LinkFlow>> link_flows_;
  bool link_flows_valid_ = false;
  // RecomputeRates' marks: a link is in active_links_ / changed_links_ of the
  // current fill when its mark equals fill_count_.
  std::vector<uint64_t> active_mark_, changed_mark_;
  std::vector<uint32_t> changed_links_;
  uint64_t fill_count_ = 0;
  // RecomputeRates' scratch: the flows not yet frozen, the links they load.
  std::vector<uint32_t> unfrozen_, live_links_;
  std::vector<uint32_t> candidates_;  // a round's links that may saturate, in live_links_ order
  std::vector<std::vector<LoadPoint>> series_;
  double now_us_ = 0;
  uint64_t events_ = 0;
  size_t running_ = 0;
  bool rates_dirty_ = false;
};

}  // namespace phasor::sim

#endif  // PHASOR_SIM_FLUID_NETWORK_H_
