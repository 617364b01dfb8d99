// Candidates given as servers (SPEC section 5: "servers": {"job": ["s1", ...]})
// turned into the link form the ranker needs, by the traffic model of SPEC
// section 6 (ring all-reduce over the servers in rank order, ECMP routes;
// topology/traffic.h). Used by `phasor rank --topology` and by phasord.
//
// Not thread-safe with respect to `request` (it is modified in place); the
// topology and router are only read.
#ifndef PHASOR_PLACER_CANDIDATE_ROUTING_H_
#define PHASOR_PLACER_CANDIDATE_ROUTING_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "placer/candidates.h"
#include "placer/ranker.h"
#include "topology/router.h"
#include "topology/topology.h"

namespace phasor::placer {

// For every candidate that gives "servers", routes each job's ring on `router`
// and sets candidate.links[job] = link id -> share (an empty map for a job
// that loads no link), then clears candidate.servers. Every directed link a
// routed candidate uses is added to request.links with the fabric's capacity,
// unless the request already defines that link id (the request's capacity
// wins, e.g. to model a degraded link).
//
// A candidate that cannot be routed (unknown server, a switch given as a
// server, a server with no route to the next one of its job, or a job given
// both as "links" and as "servers") is removed from request.candidates and
// appended to `unrouted` with the reason; the others are unaffected.
//
// request.running's servers are routed once and become running.links (its
// new links are added in the order the first routed candidate and running
// together name them, so a request gives the same links with the running
// jobs in every candidate or once in running). When a running job cannot be
// routed, every candidate is unrouted with that reason (or its own first
// failing job's, whichever job id comes first), and running is unchanged; a
// job in both running.links and running.servers is left for
// ValidateRankRequest.
//
// Shares can exceed 1 when several hops of one job's ring cross the same
// directed link; they are passed on as they are (the ranker multiplies).
//
// `routed`, when given, is RouteRunning(router, request) made earlier for the
// same request (AddOwnCandidates reads it too); its shares are moved into
// running.links.
void RouteCandidates(const topology::Topology& fabric, const topology::Router& router,
                     RankRequest& request, std::vector<RejectedCandidate>& unrouted,
                     RoutedRunning* routed = nullptr);

// The same on the topology YAML at `topology_path` (even ECMP split).
// Errors: the file cannot be read or is invalid (NotFound or InvalidArgument,
// "<file>:<line>: ..."); `request` is unchanged then.
absl::Status RouteCandidatesFromFile(const std::string& topology_path, RankRequest& request,
                                     std::vector<RejectedCandidate>& unrouted);

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_CANDIDATE_ROUTING_H_
