// The jobs already running, as the ranking of a new job takes them: each
// pinned at the shift phasord published for it (SPEC section 4, "pinned
// jobs"), its placement given once, in the request's running part, common to
// every candidate. Whoever builds that part of a request builds it here, so
// the rule lives once: the Slurm controller from its own record of placed
// jobs, and phasord from its committed placement for a request that asks
// for it (RankRequest.running_committed; the Kubernetes extender's).
//
// Pure functions; thread-safe.
#ifndef PHASOR_PROTOCOL_RUNNING_JOBS_H_
#define PHASOR_PROTOCOL_RUNNING_JOBS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "protocol/phasor.pb.h"

namespace phasor::protocol {

struct RunningJob {
  std::string id;
  placer::TrafficProfile profile;   // the latest known (a probe's, else the committed one)
  std::optional<uint32_t> shift_us;  // phasord's shift for it; none: not pinned
  // Where it runs, in one of the two forms of a candidate: its servers in
  // ring order (server form; phasord routes them), or its link shares.
  std::vector<std::string> servers;
  std::map<std::string, double> links;
};

// Appends each running job to request.jobs, pinned at its shift (modulo its
// profile's period), and its placement to request.running (servers or
// links). A job named `except` (the one being placed) is left out.
void AddRunningJobs(const std::vector<RunningJob>& running, placer::RankRequest& request,
                    const std::string& except = "");

// The same rule for a request that already names its own jobs (phasord's
// RankRequest.running_committed): the running jobs the request does not name
// go before its jobs, in `running`'s order, their placements into
// request.running, and the capacities of `links` the request does not give
// before its links. Returns how many jobs went in.
size_t PrependRunningJobs(const std::vector<RunningJob>& running, const std::vector<placer::Link>& links,
                          placer::RankRequest& request);

// phasord's committed placement (a GetSnapshot reply) as running jobs in link
// form, at the shifts of their offsets: the jobs the snapshot has a profile
// and committed link shares for. The links' capacities go to `links`.
// InvalidArgument when the snapshot's placement does not convert.
absl::StatusOr<std::vector<RunningJob>> RunningJobsOfSnapshot(const v1::Snapshot& snapshot,
                                                              std::vector<placer::Link>& links);

}  // namespace phasor::protocol

#endif  // PHASOR_PROTOCOL_RUNNING_JOBS_H_
