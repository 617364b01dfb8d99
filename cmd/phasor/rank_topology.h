// `phasor rank --topology FILE`: turns the server form of candidates
// (SPEC section 5: "servers": {"job": ["s1", ...]}) into the link form the
// ranker needs, by the traffic model of SPEC section 6 (topology/traffic.h).
//
// Not thread-safe with respect to `request` (it is modified in place).
#ifndef PHASOR_CMD_PHASOR_RANK_TOPOLOGY_H_
#define PHASOR_CMD_PHASOR_RANK_TOPOLOGY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "placer/ranker.h"

namespace phasor::cmd {

// Loads the topology YAML at `topology_path` and, for every candidate that
// gives "servers", routes each job's ring (even ECMP split) and sets
// candidate.links[job] = link id -> share (an empty map for a job that loads
// no link), then clears candidate.servers. Every directed link a routed
// candidate uses is added to request.links with the topology's capacity,
// unless the request already defines that link id (the request's capacity
// wins, e.g. to model a degraded link).
//
// A candidate that cannot be routed (unknown server, a switch given as a
// server, a server with no route to the next one of its job, or a job given
// both as "links" and as "servers") is removed from request.candidates and
// appended to `unrouted` with the reason; the others are unaffected.
//
// Shares can exceed 1 when several hops of one job's ring cross the same
// directed link (topology/traffic.h); they are passed on as they are.
//
// Errors: the topology file cannot be read or is invalid (NotFound or
// InvalidArgument, "<file>:<line>: ..."). `request` is unchanged then.
absl::Status RouteCandidates(const std::string& topology_path, placer::RankRequest& request,
                             std::vector<placer::RejectedCandidate>& unrouted);

}  // namespace phasor::cmd

#endif  // PHASOR_CMD_PHASOR_RANK_TOPOLOGY_H_
