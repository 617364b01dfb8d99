// Candidate server sets, leaf switch by leaf switch: one enumeration for
// every caller that proposes placements on a tree of switches (SPEC
// section 5): the Slurm controller (as topology/tree would pick), the
// Kubernetes extender's gang plans, the simulator's slurm-tree host, and
// phasor's own candidates (OwnCandidates, below).
//
// Assumptions (those of topology/tree): the fabric is a tree of switches; a
// server hangs off one leaf switch (Topology::LeafOf, its rack); free servers
// under one leaf differ only in their own server links, which no other job
// shares, so candidates differ in which leaves they use and how many servers
// they take from each.
//
// Pure functions; thread-safe.
#ifndef PHASOR_PLACER_CANDIDATES_H_
#define PHASOR_PLACER_CANDIDATES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "topology/router.h"
#include "topology/topology.h"

namespace phasor::placer {

struct ServerSet {
  std::vector<std::string> servers;  // in the fabric's order
  uint32_t racks = 0;                // leaf switches used
};

// Up to `max_candidates` sets of `count` servers among `free_servers`:
//   1. one per leaf with enough free servers, best fit first (fewest free,
//      then the fabric's order), as topology/tree does;
//   2. spanning sets, fewest leaves first: from each leaf in turn, filling
//      from the leaves with the most free servers.
// Within a leaf, servers are taken in the fabric's order; duplicates are
// dropped. InvalidArgument for count 0 or max_candidates 0;
// FailedPrecondition ("N free servers, the job needs M") when fewer than
// `count` free servers sit under a leaf of `fabric`. Free servers the fabric
// does not know are ignored.
absl::StatusOr<std::vector<ServerSet>> LeafCandidates(const topology::Topology& fabric,
                                                      const std::set<std::string>& free_servers,
                                                      uint32_t count, uint32_t max_candidates);

// The same on servers given with their racks, in the fabric's order (for a
// caller that holds no Topology: a host scheduler's view of the cluster).
struct RackedServer {
  std::string id;
  std::string rack;  // its leaf switch ("" : no rack; such a server is left out)
};
absl::StatusOr<std::vector<ServerSet>> LeafCandidates(const std::vector<RackedServer>& servers,
                                                      const std::set<std::string>& free_servers,
                                                      uint32_t count, uint32_t max_candidates);

// The same among the free servers a job may use (`eligible`: what its
// partition, constraints, reservation... allow); the error counts the
// eligible free servers.
absl::StatusOr<std::vector<ServerSet>> LeafCandidates(const topology::Topology& fabric,
                                                      const std::set<std::string>& free_servers,
                                                      const std::set<std::string>& eligible,
                                                      uint32_t count, uint32_t max_candidates);

// phasor's own candidates for the jobs of `host_first` (the host's first
// candidate, server form: job -> one entry per GPU or replica), on the
// servers wholly free (`free_servers`), each job on as many whole servers as
// the host gave it with the same entries per server:
//   - fewest racks: one rack when one has room (best fit: the fullest rack
//     that has room, so whole racks stay whole), else the racks with the most
//     free servers, all but at most `max_partial_racks` of them used whole
//     (MonkeyTree, 2026: rings that cross few, whole racks keep
//     oversubscribed uplinks free);
//   - among racks equal in that, those whose uplinks (the leaf's links to and
//     from the switches above it) the running jobs load least
//     (`running_load`: mean Gbit/s per directed link by link index, e.g.
//     RunningLoad below);
//   - the k-th candidate starts from the k-th choice of the first job, and
//     places the others after it.
// Up to `count` candidates, ids "phasor-1", "phasor-2", ..., marked
// proposed_by_phasor, none equal to `host_first` or to another; fewer (none)
// when the free servers do not hold the jobs. Jobs not in server form, or
// whose servers the fabric does not know, make it propose nothing. The ring
// order of each is left to the router (RankOptions::ring_order).
struct OwnCandidateOptions {
  uint32_t count = 2;              // candidates at most (RankOptions::own_candidates)
  uint32_t max_partial_racks = 2;  // racks a multi-rack job may use in part
};
std::vector<Candidate> OwnCandidates(const topology::Topology& fabric, const Candidate& host_first,
                                     const std::vector<std::string>& free_servers,
                                     const std::vector<double>& running_load,
                                     const OwnCandidateOptions& options);

// A placement in server form as a set per job (its servers sorted): two
// candidates with equal keys place every job on the same servers.
std::map<std::string, std::vector<std::string>> PlacementKey(
    const std::map<std::string, std::vector<std::string>>& servers);

// For a request with free_servers whose first candidate (the host's) gives
// servers: appends OwnCandidates for its jobs (request.options.own_candidates
// of them; the running part's load from request.running, its servers routed
// on `router`), ids made unique against the host's. Nothing without
// free_servers, with own_candidates 0 or when the first candidate gives links;
// none that repeats a placement already proposed (same servers per job).
//
// `running`, when given and complete, is the running part already routed
// (RouteRunning) and is used instead of routing it again.
struct RoutedRunning;
void AddOwnCandidates(const topology::Topology& fabric, const topology::Router& router,
                      RankRequest& request, RoutedRunning* running = nullptr);

// Jobs' servers (job -> servers in rank order) routed one by one on the
// ring traffic model (topology::JobLinkShares): the first failing job, in job
// id order, stops it, as topology::PlacementShares does.
struct RoutedServers {
  // By job, in job id order up to the first job that does not route.
  std::map<std::string, std::map<std::string, double>> shares;
  // The same rings as the router keeps them (also by link index).
  std::map<std::string, std::shared_ptr<const topology::Router::RingShares>> rings;
  std::string failed_job;  // the first job that did not route; empty when none
  std::string reason;      // "job '<id>': ..." as topology::PlacementShares words it
};
RoutedServers RouteServers(const topology::Router& router,
                           const std::map<std::string, std::vector<std::string>>& servers);

// request.running's server-form jobs routed once for a request: phasor's own
// candidates (AddOwnCandidates) and the candidates' routing (RouteCandidates,
// placer/candidate_routing.h) both read them and their load. `shares` is
// empty when the servers were not routed.
struct RoutedRunning : RoutedServers {
  // The servers were routed: there are some, and no job is given in both
  // running forms (that is left for ValidateRankRequest).
  bool routed = false;
  // `shares` holds every server-form running job (also when there are none).
  bool complete = false;
  // RunningLoad(fabric, request, shares), set by RunningLoadOf on first use.
  std::optional<std::vector<double>> load;
};
RoutedRunning RouteRunning(const topology::Router& router, const RankRequest& request);
// running.load, computed on first use (the request's jobs and running.links
// must not change in between).
const std::vector<double>& RunningLoadOf(const topology::Topology& fabric, const RankRequest& request,
                                         RoutedRunning& running);

// The mean load (Gbit/s, by link index of `fabric`) of the request's running
// jobs: for each, its mean rate times its share of each link, from
// request.running.links and `routed` (running jobs routed from server form).
std::vector<double> RunningLoad(
    const topology::Topology& fabric, const RankRequest& request,
    const std::map<std::string, std::map<std::string, double>>& routed = {});

}  // namespace phasor::placer

#endif  // PHASOR_PLACER_CANDIDATES_H_
