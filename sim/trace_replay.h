// Trace-driven runs (`phasor simulate --trace`): job arrivals from a real
// trace are replayed through a host scheduler (HostSchedulerAdapter) on a
// fabric, with the phasor plugin on or off, and the run reports job
// completion times, iteration slowdowns and excess bytes.
//
// Traces (format detected from the CSV header):
//   - Philly (traces/philly_pollux.csv): timestamp, duration (s), num_gpus.
//     Rows are sorted by submit time; each job gets a measured model chosen
//     by a seeded hash of its row; its duration is its isolated run time.
//   - ITP-2021 (data/traces/itp2021/clusterNN.csv.gz, ElasticFlow's traces
//     of Microsoft's ITP clusters): job_id, submission_time (s), duration
//     (s), num_gpu; models assigned as for Philly. Range checks name the field
//     and the row.
//   Files may be gzip-compressed (detected by content).
//   - Pollux workloads (pollux_workloads/workload-N.csv): name, time (s),
//     application (the model), num_replicas. These windows carry no
//     duration: each job's isolated run time is drawn (seeded) from a
//     log-normal distribution with median `workload_median_duration_s`,
//     clipped to [0.2, 5] x the median.
//
// Each job's iteration comes from the model catalogue for its placement
// (GPUs per server); a job on one server loads no link and is simulated as
// one compute phase of its whole run. With the plugin on, every scheduling
// round ranks the host's K candidates with the running jobs pinned at their
// current phase, runs the best one and starts each new job at its next slot
// (when its shifts gain over random phases: start_delay_min_gain; candidates
// that leave fewer whole free servers or whole free racks than the host's
// first are not ranked: ranking_policy.keep_packing, placer/packing.h); with it off, the host's first
// candidate runs and jobs start at once. duration_jitter and duration_factors perturb run times alike in
// every mode: the noise controls.
//
// Scheduling is non-preemptive; rounds run at every arrival and completion.
#ifndef PHASOR_SIM_TRACE_REPLAY_H_
#define PHASOR_SIM_TRACE_REPLAY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "integrations/host_scheduler/host_scheduler.h"
#include "placer/ranker.h"
#include "placer/ranking_policy.h"
#include "sim/fluid_network.h"
#include "sim/scenario.h"

namespace phasor::sim {

struct TraceJob {
  std::string id;
  double arrival_us = 0;   // from the first arrival of the replayed window
  uint32_t gpus = 1;
  std::string model;
  double duration_s = 0;   // isolated run time
  // A gradient-size job (generated workloads): when gradient_bytes > 0 its
  // iteration is compute_us of compute then a ring all-reduce of
  // gradient_bytes (2(n-1)/n of it per server on n servers), instead of the
  // catalogue's measured timing of `model`.
  double compute_us = 0;
  double gradient_bytes = 0;
};

struct TraceLoadOptions {
  uint64_t seed = 1;                         // model assignment, drawn durations
  double hours = 0;                          // keep arrivals in the first `hours` (0: all)
  uint32_t max_jobs = 0;                     // keep the first N jobs (0: all)
  uint32_t max_gpus = 0;                     // drop jobs asking more GPUs (0: keep all)
  uint32_t min_gpus = 0;                     // drop jobs asking fewer GPUs (0: keep all)
  double arrival_scale = 1;                  // > 0: arrival times divided by it (2: twice the load)
  // > 0: isolated run times multiplied by it (at least 1 s). With
  // arrival_scale = 1 / duration_scale the trace runs compressed in time at
  // the same load (fewer iterations to simulate: for sweeps).
  double duration_scale = 1;
  double workload_median_duration_s = 600;   // Pollux workloads: median isolated run time
  std::vector<std::string> models;           // Philly: the models to assign (must not be empty)
};

// The valid ranges of a trace's fields (docs/simulator.md): GPU counts
// 1..kMaxTraceGpus, durations 0..kMaxTraceDurationS (a year), arrival times
// 0..kMaxTraceTimeS (about 31 years).
inline constexpr uint32_t kMaxTraceGpus = 65536;
inline constexpr double kMaxTraceDurationS = 365.0 * 86400;
inline constexpr double kMaxTraceTimeS = 1e9;

// Reads a trace. InvalidArgument "<path>:<line>: <what>" for a malformed row
// (a field out of its range names the field), or an unknown header; NotFound
// when the file cannot be read.
absl::StatusOr<std::vector<TraceJob>> LoadTrace(const std::string& path,
                                                const TraceLoadOptions& options);

// The ranking step of a replay round (plugin on): given the round's
// RankRequest (link form, running jobs pinned), the placer's Ranking. An error
// stops the replay with that error.
using RankFunction = host_scheduler::RankFunction;

struct TraceReplayOptions {
  std::string trace_path;
  // A generated workload (e.g. GeneratePoissonWorkload) replayed instead of
  // a trace file when trace_path is empty; arrivals from 0, in order.
  std::vector<TraceJob> jobs;
  std::string models_dir = "data/models";
  std::string scheduler = "themis";      // themis | pollux | consolidate
  // The host scheduler to drive instead of the reference policy `scheduler`
  // names (not owned; must outlive the replay; default null: the reference
  // policy). The report's scheduler is then its name().
  host_scheduler::HostSchedulerAdapter* host = nullptr;
  bool plugin = true;                    // phasor ranks the top-K and sets shifts
  // Plugin off only: each multi-server job starts after a seeded random delay
  // in [0, its period) (the "null plugin": the same kind of start delay as
  // phasor's slots, without ranking). The control that measures how much a
  // start delay alone perturbs a non-preemptive schedule (the noise bound).
  bool random_start = false;
  // random_start's delays are drawn from this seed (0, default: `seed`), so
  // that several replicates of the control run on the same jobs (the
  // distribution of the noise, not one draw).
  uint64_t random_start_seed = 0;
  // The second noise control, in every mode alike: each job's isolated run
  // time is multiplied by a seeded factor uniform in [1 - F, 1 + F]
  // (ApplyDurationJitter below), F = duration_jitter in [0, 0.5] (default 0:
  // no change, the run is the same as without it). Jobs keep their arrival
  // and model; the factor depends only on the job's id and the jitter seed,
  // so runs of different modes with one F and seed replay the same jobs
  // (paired comparisons stay paired). Real run times are never known to a
  // few per cent: a schedule whose JCT moves more under F = 1 % than under
  // the plugin says nothing about the plugin.
  double duration_jitter = 0;
  // duration_jitter's factors are drawn from this seed (0, default: `seed`).
  uint64_t duration_jitter_seed = 0;
  // A targeted control: job id -> factor in (0, 10] on its isolated run time
  // (after duration_jitter; default none). E.g. "off, but the jobs the plugin
  // sped up in an early round finish as early as with the plugin": their
  // factors are their run times on / off. A name no job has is
  // InvalidArgument naming it.
  std::map<std::string, double> duration_factors;
  // Generated fabric when topology_path is empty:
  // "leaf-spine:N[:OVERSUB[:PER_LEAF[:GPUS]]]" = N servers of GPUS (default
  // 4) GPUs with 50 Gbit/s NICs, PER_LEAF (default 8) per leaf, 2 spines,
  // uplinks oversubscribed OVERSUB:1 (default 2).
  std::string fabric = "leaf-spine:24";
  std::string topology_path;             // a topology YAML instead
  double hours = 0;                      // see TraceLoadOptions
  uint32_t max_jobs = 0;
  uint32_t min_gpus = 0, max_gpus = 0;   // see TraceLoadOptions (trace files only)
  double arrival_scale = 1;              // see TraceLoadOptions (trace files only)
  double duration_scale = 1;             // see TraceLoadOptions (trace files only)
  double workload_median_duration_s = 600;
  uint32_t top_k = 4;                    // candidates per round
  uint64_t seed = 1;
  bool pace = false;                     // SPEC 7 mode `pace` instead of `once`
  // How the host's order and the predicted gain combine (placer/ranking_policy.h;
  // default: the host's first choice stands unless another candidate beats it
  // by 0.05 with a trusted prediction). min_gain < 0: Rank()'s order alone.
  // Cassini mode sets min_gain < 0 (the paper ranks by the compatibility
  // score) and discard_loops (CassiniMode below).
  placer::RankingPolicyOptions ranking_policy;
  // Plugin on: a new job waits for its slot only when the shifts are
  // predicted to gain more than this on one of the chosen candidate's
  // contended links it crosses (the link's score S minus its random-phase
  // score R, placer::RandomPhaseScore: what starting at once, at a random
  // phase, would get); otherwise it starts at once, as with the plugin off,
  // since a start delay that buys nothing still reorders later rounds of a
  // non-preemptive schedule. < 0: every shifted job waits (Cassini mode).
  // Default 0: a job waits when its shifts gain anything (docs/simulator.md).
  double start_delay_min_gain = 0;
  // Plugin on, once mode: each running job is ranked with its profile as
  // measured on its links (the mean of its last iterations as the period,
  // its bytes over a longer, lower Up phase when sharing stretched it), as
  // phasord ranks with the probes' profiles (MeasuredProfile below; default
  // true). False: its isolated profile from the model catalogue (Cassini
  // mode). Pace mode keeps the isolated profile: its slots hold the period.
  bool measured_running_profiles = true;
  // Plugin on: running jobs are pinned at their current phase (SPEC 4,
  // beyond; default true), so only new jobs move. False (Cassini): the solver
  // shifts every job of the affinity graph freely, and each running job whose
  // shift changed by more than a quantum is shifted once, at the end of its
  // current iteration (FluidNetwork::ShiftNextIteration; counted in
  // TraceReport::running_shifts).
  bool pin_running = true;
  // Pace mode: an iteration that overruns its slot re-anchors the job's slot
  // grid instead of waiting for the next slot (SimJob::pace_reslot; default true).
  bool pace_reslot = true;
  // Once mode: the closed loop of phasord (SimJob::realign_*): each new job's
  // intended phase is its slot; drift beyond realign_threshold_us is
  // corrected at most once per realign_min_interval_s. Default off: on the
  // bundled workload it costs more than it restores (docs/simulator.md).
  bool realign = false;
  // With realign, pinned running jobs and once mode: every ranked round
  // re-anchors each running job's grid at the phase it holds, with the
  // period it was ranked with (FluidNetwork::SetRealignGrid), as phasord's
  // commit re-records a running job's offset; false: the grid stays its
  // first slots at its catalogue period. Default false: measured in
  // docs/simulator.md (it gives up the planned phases of jobs that drifted
  // into each other).
  bool realign_regrid = false;
  // Plugin on: whose rank order a new job's ring follows (placer/ring_order.h):
  // phasor's (racks together, off the running jobs' links; default) or the
  // host's as it proposed it. Cassini mode: the host's.
  placer::RingOrderMode ring_order = placer::RingOrderMode::kPhasor;
  // Plugin on: candidates phasor adds of its own beside the host's, from the
  // servers wholly free (placer/candidates.h, OwnCandidates; default 2, 0:
  // none), judged by the same packing rule and policy. Cassini mode: none.
  uint32_t own_candidates = 2;
  // Plugin on: new jobs start at their slots (phasor's time shifts; default
  // true). False: every job starts at once, as with the plugin off (the
  // ablation of shifts: placement, ring order and candidates alone).
  bool shifts = true;
  double realign_threshold_us = 2000;
  double realign_min_interval_s = 1;
  uint32_t quantum_us = 1000;
  // Load series of every loaded link over [record_at_s, record_at_s +
  // record_window_s) of simulated time (for the demo's plots); < 0: at the
  // median arrival.
  double record_at_s = -1;
  double record_window_s = 2;
  std::ostream* progress = nullptr;      // a progress bar here when set
  // Ranks each round; unset (default): placer::Rank in process. Set it to
  // rank elsewhere, e.g. through phasord over the wire
  // (adapters::PhasordRanker in integrations/adapters).
  RankFunction rank;
};

struct TraceJobResult {
  std::string id;
  std::string model;
  uint32_t gpus = 0;
  std::string placement;        // GPUs per server ("44")
  bool networked = false;       // spans more than one server
  double arrival_us = 0, start_us = 0, finish_us = 0;
  double isolated_iteration_us = 0;
  IterationSummary iteration_us;
  double slowdown = 1;          // mean iteration / isolated iteration
};

// A ranked round where Rank()'s best predicted score was not the host's
// first choice: what the policy did (the replay's record of its decisions).
struct ContestedRound {
  double time_s = 0;
  std::vector<std::string> jobs;  // the jobs the round placed
  std::string host_first, score_best, chosen;
  double host_first_score = 1, score_best_score = 1;
  double host_first_effective = 1, score_best_effective = 1;  // R + shift_confidence x (S - R)
  std::string blocked;  // placer::PolicyDecision::blocked
};

struct TraceReport {
  std::string scheduler;
  bool plugin = false;
  bool random_start = false;  // the noise control (TraceReplayOptions::random_start)
  double duration_jitter = 0;  // the second control (TraceReplayOptions::duration_jitter)
  uint64_t duration_jitter_seed = 0;  // the seed its factors were drawn from
  std::string plugin_label;   // "off", "random", "on" (phasor) or "cassini" (CassiniMode)
  bool pace = false;
  size_t servers = 0, gpus = 0, links = 0;
  std::vector<TraceJobResult> jobs;  // completed jobs, in trace order
  size_t unfinished = 0;             // never placed (too large for the cluster)
  IterationSummary jct_s;            // job completion time = finish - arrival
  IterationSummary queueing_s;       // start - arrival
  IterationSummary iteration_slowdown;  // every iteration of networked jobs / isolated
  double excess_bytes = 0;
  double makespan_s = 0;
  uint64_t rounds = 0, ranked_rounds = 0, events = 0;
  uint64_t overtaken_rounds = 0;  // ranked rounds where another candidate overtook the host's first
  uint64_t reslots = 0;           // pace: slot grids re-anchored after an overrun
  uint64_t realignments = 0;      // once: iterations held back to the intended phase
  uint64_t running_shifts = 0;    // pin_running off: running jobs shifted once to a new slot
  uint64_t discarded_loops = 0;   // discard_loops: candidates discarded for a loop
  uint64_t undelayed_starts = 0;  // start_delay_min_gain: shifted new jobs started at once
  uint64_t packing_dropped = 0;   // ranking_policy.keep_packing: candidates not ranked
  uint64_t own_proposed = 0;      // own_candidates: candidates phasor proposed
  uint64_t own_chosen = 0;        // rounds that ran one of phasor's own candidates
  uint64_t ring_reordered = 0;    // new jobs started in phasor's ring order, not the host's
  std::string ring_order;         // "host" or "phasor" (plugin on)
  uint32_t own_candidates = 0;    // TraceReplayOptions::own_candidates (plugin on)
  bool shifts = false;            // TraceReplayOptions::shifts (plugin on)
  std::vector<ContestedRound> contested;  // in time order
  double wall_s = 0;
  // Plots: link -> load series in the record window, link capacities, and
  // (up to 20000) sampled iteration slowdowns.
  std::map<std::string, std::vector<LoadPoint>> load;
  std::map<std::string, double> capacity_gbps;
  double record_from_us = 0, record_to_us = 0;
  std::vector<double> slowdown_samples;
};

// Multiplies each job's duration_s by 1 + fraction x (2u - 1), u uniform in
// [0, 1) from a hash of (seed, the job's id): a factor in [1 - fraction,
// 1 + fraction], the same for a job in every run with this seed; durations
// stay at least 1 s (LoadTrace's floor). fraction 0 leaves `jobs` untouched.
// InvalidArgument "duration_jitter: ..." unless 0 <= fraction <= 0.5.
absl::Status ApplyDurationJitter(double fraction, uint64_t seed, std::vector<TraceJob>& jobs);

// A running job's profile as a probe would measure it on its links, from
// the isolated one (a square wave: compute, then the Up phase) and the job's
// iteration times so far: the mean of the last (up to 8) iterations is the
// period, the compute phase stays, and the same bytes fill the rest (an Up
// phase stretched by sharing is longer and lower). `isolated` itself when no
// iteration has ended, when it has no square wave, or when the measured Up
// part is within 0.1 % of the isolated Up phase.
placer::TrafficProfile MeasuredProfile(const placer::TrafficProfile& isolated, const std::vector<double>& iteration_us);

// The GPUs of the replay's fabric (options.topology_path or options.fabric);
// errors as ReplayTrace's for a bad fabric.
absl::StatusOr<uint32_t> FabricGpus(const TraceReplayOptions& options);

// The paper's algorithm on the same path as `--plugin on` (the ablation of
// phasor's additions): `base` with the plugin on, once mode (pace off), no
// re-alignment, no pins (running jobs are shifted as the solver says), Rank()'s
// score order (ranking_policy.min_gain < 0), loop candidates discarded
// (ranking_policy.discard_loops), every candidate ranked (no ranking_policy.keep_packing),
// every shifted job waiting for its slot, and the catalogue's isolated
// profiles for running jobs.
TraceReplayOptions CassiniMode(TraceReplayOptions base);

// Runs one replay. Errors: InvalidArgument for bad options or trace rows
// (named), NotFound for missing files.
absl::StatusOr<TraceReport> ReplayTrace(const TraceReplayOptions& options);

// The three modes of the ablation on one workload: plugin off (the host
// alone), Cassini (CassiniMode(options)) and phasor (options, plugin on).
struct ModeComparison {
  TraceReport off, cassini, phasor;
};
absl::StatusOr<ModeComparison> CompareModes(const TraceReplayOptions& options);

nlohmann::ordered_json TraceReportToJson(const TraceReport& report);
// {"modes": [...], "runs": {mode: report}, "gain_over_off": {mode: {"jct_mean",
// "jct_p99", "slowdown_p99", "excess_bytes"}}} (gains are off / mode: > 1 is
// better; excess bytes off / mode, inf when the mode has none and off some).
nlohmann::ordered_json ModeComparisonToJson(const ModeComparison& comparison);
// A readable three-column table of the comparison.
std::string ModeComparisonTable(const ModeComparison& comparison);
nlohmann::ordered_json TraceSeriesToJson(const TraceReport& report);
std::string TraceReportTable(const TraceReport& report);

}  // namespace phasor::sim

#endif  // PHASOR_SIM_TRACE_REPLAY_H_
