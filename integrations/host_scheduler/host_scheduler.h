// The host-scheduler seam (SPEC sections 5 and 9): a host scheduler proposes
// its top-K candidate allocations each scheduling round; with the plugin on,
// phasor ranks them (a RankFunction: in process, or through phasord) and sets
// shifts; with it off, the host's first choice runs.
//
// HostSchedulerAdapter is the one interface every host scheduler is driven
// through: the simulator's reference policies (sim/host_scheduler.h: Themis-,
// Pollux- and consolidate-style), which sim::ReplayTrace takes, and the
// integrations beside this folder. This header depends on the placer's plain
// request types only: no simulator, no wire, no topology.
//
// Thread safety: an adapter instance is used from one thread at a time.
#ifndef PHASOR_INTEGRATIONS_HOST_SCHEDULER_HOST_SCHEDULER_H_
#define PHASOR_INTEGRATIONS_HOST_SCHEDULER_HOST_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "placer/ranker.h"

namespace phasor::host_scheduler {

struct ServerView {
  std::string id;
  std::string rack;        // its edge switch
  uint32_t gpus = 0;       // installed
  uint32_t free_gpus = 0;  // not allocated
};

struct PendingJob {
  std::string id;
  std::string model;
  uint32_t gpus = 1;
  double arrival_us = 0;
  double isolated_run_us = 0;  // the job's run time alone (its size)
};

struct SchedulingRound {
  double now_us = 0;
  std::vector<ServerView> servers;  // the whole cluster
  std::vector<PendingJob> pending;  // in arrival order
};

// One allocation of some pending jobs: a placer candidate in server form
// (id, job -> its servers in rank order, one entry per GPU: ["s1", "s1",
// "s2", "s2"] = 2 GPUs on each of s1 and s2); `links` stays empty.
using CandidateAllocation = placer::Candidate;

class HostSchedulerAdapter {
 public:
  virtual ~HostSchedulerAdapter() = default;
  virtual std::string_view name() const = 0;
  // Up to `k` candidates (>= 1 when any pending job fits), best first. Every
  // candidate only uses free GPUs. An empty list means nothing fits now.
  // Errors: Unavailable when a remote engine does not answer.
  virtual absl::StatusOr<std::vector<CandidateAllocation>> Propose(const SchedulingRound& round,
                                                                   uint32_t k) = 0;
};

// The ranking step of a round (plugin on): a validated RankRequest in, the
// placer's Ranking out. placer::Rank in process, or phasord over the wire
// (adapters::PhasordRanker). An error stops the caller's round with it.
using RankFunction = std::function<absl::StatusOr<placer::Ranking>(const placer::RankRequest& request)>;

}  // namespace phasor::host_scheduler

#endif  // PHASOR_INTEGRATIONS_HOST_SCHEDULER_HOST_SCHEDULER_H_
