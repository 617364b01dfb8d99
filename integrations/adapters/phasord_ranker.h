// The one wire path from a host scheduler's round to phasord: RankAndCommit
// sends a RankRequest through the client and, when asked, commits the first
// ranked candidate (so phasord records the choice and publishes its jobs'
// offsets, as a scheduler would). Both forms of a round use it:
//   - PhasordRanker: a host_scheduler::RankFunction (link form, running jobs
//     pinned), so a trace replay (sim::ReplayTrace with
//     TraceReplayOptions::rank set) ranks its rounds through phasord instead
//     of placer::Rank in process. Doubles travel as IEEE doubles, so the
//     result equals the in-process one.
//   - PhasordRankedScheduler (phasord_scheduler.h): an engine's candidates in
//     server form, reordered by phasord.
//
// Thread safety: as the client (one thread at a time).
#ifndef PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_RANKER_H_
#define PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_RANKER_H_

#include <optional>

#include "absl/status/statusor.h"
#include "integrations/client/client.h"
#include "integrations/host_scheduler/host_scheduler.h"

namespace phasor::adapters {

// phasord's answer to one round.
struct WireRanking {
  phasor::v1::RankReply reply;                    // ranking id, order, shifts, scores
  std::optional<phasor::v1::CommitReply> commit;  // set when the first was committed
};

// Ranks `request` at phasord and, when `commit` is true and some candidate was
// ranked, commits the first. Errors: the client's (Unavailable when phasord
// does not answer) or phasord's (InvalidArgument for a request it rejects).
absl::StatusOr<WireRanking> RankAndCommit(client::Client* client, phasor::v1::RankRequest request,
                                          bool commit);

struct PhasordRankerOptions {
  // Commit the best candidate of each ranking (default true).
  bool commit = true;
};

// `client` (not owned) must outlive the returned function. Its errors are
// RankAndCommit's.
host_scheduler::RankFunction PhasordRanker(client::Client* client, PhasordRankerOptions options = {});

}  // namespace phasor::adapters

#endif  // PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_RANKER_H_
