// Host schedulers: the engines phasor plugs into (SPEC sections 5 and 9). A
// host scheduler proposes its top-K candidate allocations each scheduling
// round; with the plugin on, phasor ranks them and sets shifts; with it off,
// the host's first choice runs.
//
// HostSchedulerAdapter is the one interface every host scheduler is driven
// through: the reference policies here (for the simulator's trace replay)
// and, later, the ZeroMQ adapters that forward a round to a real Themis- or
// Pollux-style engine and return its candidates. It lives in sim/ because its
// only callers today are the simulator; it depends on nothing but plain
// structs, so the integrations module can move it (a header move) when a
// second caller needs it without linking the simulator.
//
// The reference policies (assumptions: non-preemptive, whole jobs, GPUs are
// the only resource, servers grouped by their edge switch = "rack"):
//   - ConsolidateFirst: first-come first-served with backfill; each job on as
//     few servers as possible, inside one rack when it fits.
//   - ThemisStyle: finish-time fairness. Pending jobs are ordered by
//     rho = (time waited + isolated run time) / isolated run time (furthest
//     behind their fair share first); the K candidates place them in that
//     order with different rack preferences (an auction's several bids).
//   - PolluxStyle: goodput-driven. Each job's shape (GPUs per
//     server) is the one with the best measured throughput per GPU among the
//     shapes of its size, from the model data; candidates vary shape and rack.
// Candidate k (k >= 1) differs from candidate 0 by starting the rack search
// at a different rack and, for k odd, spreading jobs over more servers.
//
// Thread safety: an adapter instance is used from one thread at a time.
#ifndef PHASOR_SIM_HOST_SCHEDULER_H_
#define PHASOR_SIM_HOST_SCHEDULER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/model_catalog.h"

namespace phasor::sim {

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

// One allocation of some pending jobs: job -> its servers in rank order, one
// entry per GPU (["s1", "s1", "s2", "s2"] = 2 GPUs on each of s1 and s2).
struct CandidateAllocation {
  std::string id;
  std::map<std::string, std::vector<std::string>> servers;
};

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

// "themis", "pollux" or "consolidate". `models` (may be null) gives Pollux's
// measured throughputs and must outlive the adapter. InvalidArgument for an
// unknown name.
absl::StatusOr<std::unique_ptr<HostSchedulerAdapter>> MakeReferenceScheduler(
    std::string_view name, const ModelCatalog* models);

// GPUs per server of an allocation in the catalogue's placement form ("44").
std::string PlacementString(const std::vector<std::string>& servers);

}  // namespace phasor::sim

#endif  // PHASOR_SIM_HOST_SCHEDULER_H_
