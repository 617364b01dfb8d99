// The traffic model of SPEC section 6: which directed links a data-parallel
// job loads, and with what share of its NIC-level profile.
//
// Model and assumptions:
//   - A job runs ring all-reduce over its servers in the order given (the
//     host scheduler's rank order). Repeated servers (one entry per GPU or
//     replica, e.g. ["s1", "s1", "s2"]) are collapsed to their first
//     appearance: GPUs on one server talk over NVLink and the ring visits each
//     server once. With n distinct servers S_1..S_n, each server sends to the
//     next: hops S_1->S_2, ..., S_{n-1}->S_n, S_n->S_1 (for n == 2 that is
//     S_1->S_2 and S_2->S_1).
//   - Every server sends the job's NIC-level profile (per iteration
//     2(n-1)/n times the gradient bytes) on its hop, all at once. A directed
//     link's share is the sum, over the hops crossing it, of the fraction of
//     that hop's traffic the router puts on it (RouterOptions::ecmp). So the
//     link carries share x the profile.
//   - A share is in (0, 1] whenever at most one hop crosses the link, which
//     holds for rings on the generators' fabrics whose order keeps each
//     leaf's servers together; a ring order that makes k hops cross the same
//     link gives that link share up to k (the link really carries k times the
//     profile); the placer takes such shares as they are (placer::kMaxShare).
//   - A job on one server (or with no servers) loads no link: empty map.
//   - Flow keys for kFlowHash are "<job>:<src>-><dst>", so each hop of each
//     job is hashed on its own, deterministically.
//
// Errors (the message names the job, and the server or pair):
//   NotFound            a server that is not in the topology;
//   InvalidArgument     a name that is a switch, not a server;
//   FailedPrecondition  one server of the job has no route to the next.
//
// All functions are pure given the router; thread-safe as the Router is.
#ifndef PHASOR_TOPOLOGY_TRAFFIC_H_
#define PHASOR_TOPOLOGY_TRAFFIC_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/router.h"
#include "topology/topology.h"

namespace phasor::topology {

// link id -> share of the job's NIC-level profile on that directed link.
using LinkShareMap = std::map<std::string, double>;
// job id -> its servers in rank order.
using Placement = std::map<std::string, std::vector<std::string>>;
// job id -> link id -> share.
using PlacementLinkShares = std::map<std::string, LinkShareMap>;

// One hop of a job's ring: `src` sends the job's profile to `dst`; `links` are
// the directed links it crosses with the fraction of the hop's traffic on each
// (Router::FlowLinkShares: sorted by link index).
struct RingHop {
  NodeIndex src = 0;
  NodeIndex dst = 0;
  std::vector<LinkShare> links;
};

// One hop of `job`'s ring, src -> dst (servers): the links its flow crosses
// with their shares. A ring's cost is the sum over its hops, so a caller that
// compares orders of the same servers (placer/ring_order.h) routes each hop
// once.
absl::StatusOr<std::vector<LinkShare>> HopLinkShares(const Router& router, std::string_view job,
                                                     NodeIndex src, NodeIndex dst);

// The ring's hops (empty for fewer than two distinct servers).
absl::StatusOr<std::vector<RingHop>> RingHops(const Router& router, std::string_view job,
                                              const std::vector<std::string>& servers);

// One job: link id -> share (see the model above).
absl::StatusOr<LinkShareMap> JobLinkShares(const Router& router, std::string_view job,
                                           const std::vector<std::string>& servers);
// The same, as the router keeps it (Router::RingShares, shared: no copy),
// also by link index.
absl::StatusOr<std::shared_ptr<const Router::RingShares>> JobRing(const Router& router, std::string_view job,
                                                                  const std::vector<std::string>& servers);

// A whole candidate placement: job -> link id -> share. Jobs that load no link
// map to an empty LinkShareMap. The first failing job's error is returned,
// its message prefixed with "job '<id>': ".
absl::StatusOr<PlacementLinkShares> PlacementShares(const Router& router,
                                                    const Placement& placement);

// One job's load on one link, for `phasor topology load`.
struct JobShare {
  std::string job;
  double share = 0;
};

// link id -> the jobs crossing it (in job-id order) with their shares.
using LinkLoads = std::map<std::string, std::vector<JobShare>>;

// Inverts PlacementLinkShares.
LinkLoads ToLinkLoads(const PlacementLinkShares& shares);

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_TRAFFIC_H_
