// Host-scheduler adapters over the wire (SPEC section 9): a Themis-style or
// Pollux-style engine (any host_scheduler::HostSchedulerAdapter) proposes its top-K
// candidate allocations for a scheduling round; the adapter sends them to
// phasord as one RankRequest in server form (Pollux's {job: [node per
// replica]} is exactly that form; Themis's several auction bids are the K
// candidates), returns the candidates in phasord's order (ranked best first,
// then the rejected ones in the engine's order) and commits the first, so
// phasord publishes the jobs' offsets to their agents. It goes through the one
// wire path, RankAndCommit (phasord_ranker.h).
//
// Assumptions: phasord runs with a `topology_path` covering the engine's
// servers (it routes the server form); a job's profile comes from the
// `profiles` callback, or, when that returns nullopt, from the latest probe
// profile phasord holds for the job.
//
// Thread safety: one thread at a time (it owns a client socket).
#ifndef PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_SCHEDULER_H_
#define PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_SCHEDULER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "integrations/adapters/phasord_ranker.h"
#include "integrations/client/client.h"
#include "placer/traffic_profile.h"
#include "integrations/host_scheduler/host_scheduler.h"

namespace phasor::adapters {

// The traffic profile (NIC level, SPEC section 6) of a pending job, or nullopt.
using ProfileSource = std::function<std::optional<placer::TrafficProfile>(const host_scheduler::PendingJob& job)>;

struct PhasordSchedulerOptions {
  // Commit the first candidate of phasord's order (default true); off, the
  // adapter only reorders.
  bool commit = true;
  // Sent with every RankRequest; unset fields keep phasord's (the placer's)
  // defaults. A coarser quantum_us or fewer max_spanning_trees bound the
  // solve time of rounds whose jobs share many links.
  phasor::v1::RankOptions rank_options;
};

class PhasordRankedScheduler : public host_scheduler::HostSchedulerAdapter {
 public:
  // `engine` proposes; `client` (not owned; must outlive the adapter) talks to phasord.
  PhasordRankedScheduler(std::unique_ptr<host_scheduler::HostSchedulerAdapter> engine, client::Client* client,
                         ProfileSource profiles, PhasordSchedulerOptions options = {});

  std::string_view name() const override { return name_; }

  // The engine's candidates reordered by phasord. Errors: the engine's, or
  // phasord's (Unavailable when it does not answer; the round is then lost
  // rather than placed blind: the caller may fall back to the engine).
  absl::StatusOr<std::vector<host_scheduler::CandidateAllocation>> Propose(const host_scheduler::SchedulingRound& round,
                                                                uint32_t k) override;

  // The last round's reply from phasord (ranking id, shifts, scores) and, when
  // committed, the offsets it published.
  const phasor::v1::RankReply& last_reply() const { return last_reply_; }
  const std::optional<phasor::v1::CommitReply>& last_commit() const { return last_commit_; }

  // The RankRequest the adapter sends for `candidates` of `round` (exposed so
  // tests and tools can run the same request in-process).
  phasor::v1::RankRequest BuildRequest(const host_scheduler::SchedulingRound& round,
                                       const std::vector<host_scheduler::CandidateAllocation>& candidates) const;

 private:
  std::unique_ptr<host_scheduler::HostSchedulerAdapter> engine_;
  client::Client* client_;
  ProfileSource profiles_;
  PhasordSchedulerOptions options_;
  std::string name_;
  phasor::v1::RankReply last_reply_;
  std::optional<phasor::v1::CommitReply> last_commit_;
};

}  // namespace phasor::adapters

#endif  // PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_SCHEDULER_H_
