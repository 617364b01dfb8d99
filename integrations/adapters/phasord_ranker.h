// The simulator's ranking step over the wire: a sim::RankFunction that sends
// each replay round's RankRequest (link form, running jobs pinned) to phasord
// through the client and returns phasord's Ranking, so a trace replay
// (sim::ReplayTrace with TraceReplayOptions::rank set) runs its host
// scheduler's rounds through phasord instead of placer::Rank in process.
// Doubles travel as IEEE doubles, so the result equals the in-process one.
//
// Thread safety: as the client (one thread at a time).
#ifndef PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_RANKER_H_
#define PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_RANKER_H_

#include "integrations/client/client.h"
#include "sim/trace_replay.h"

namespace phasor::adapters {

struct PhasordRankerOptions {
  // Commit the best candidate of each ranking (default true), so phasord
  // records the choice and publishes its jobs' offsets, as a scheduler would.
  bool commit = true;
};

// `client` (not owned) must outlive the returned function. The function's
// errors are the client's (Unavailable when phasord does not answer) or
// phasord's (InvalidArgument for a request it rejects).
sim::RankFunction PhasordRanker(client::Client* client, PhasordRankerOptions options = {});

}  // namespace phasor::adapters

#endif  // PHASOR_INTEGRATIONS_ADAPTERS_PHASORD_RANKER_H_
