// Host schedulers: the engines phasor plugs into (SPEC sections 5 and 9). A
// host scheduler proposes its top-K candidate allocations each scheduling
// round; with the plugin on, phasor ranks them and sets shifts; with it off,
// the host's first choice runs.
//
// The interface and its round types are the seam in
// integrations/host_scheduler/ (phasor_host_scheduler); the simulator's
// reference policies below implement it and sim::ReplayTrace takes it.
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
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "integrations/host_scheduler/host_scheduler.h"
#include "models/model_catalog.h"

namespace phasor::sim {

using models::CanonicalPlacement;
using models::ModelCatalog;
using models::ModelTiming;

using host_scheduler::CandidateAllocation;
using host_scheduler::HostSchedulerAdapter;
using host_scheduler::PendingJob;
using host_scheduler::SchedulingRound;
using host_scheduler::ServerView;

// "themis", "pollux" or "consolidate" (the engines above), or "kube",
// "slurm-tree" or "volcano" (the cluster managers real clusters run, as
// sim/host_scheduler.cc models each: kube-scheduler's default scoring pod by
// pod, Slurm's topology/tree best fit, Volcano's binpack with hard
// network-topology-aware mode). `models` (may be null) gives Pollux's
// measured throughputs and must outlive the adapter; `seed` draws
// kube-scheduler's choice among equal scores. InvalidArgument for an unknown
// name.
absl::StatusOr<std::unique_ptr<HostSchedulerAdapter>> MakeReferenceScheduler(
    std::string_view name, const ModelCatalog* models, uint64_t seed = 1);

// GPUs per server of an allocation in the catalogue's placement form ("44").
std::string PlacementString(const std::vector<std::string>& servers);

}  // namespace phasor::sim

#endif  // PHASOR_SIM_HOST_SCHEDULER_H_
