// The jobs already running, as the ranking of a new job takes them: each
// pinned at the shift phasord published for it (SPEC section 4, "pinned
// jobs"), its placement given once, in the request's running part, common to
// every candidate. Every host integration that asks phasord to place a job
// among running ones (the Slurm controller from its own record of placed
// jobs, the Kubernetes extender from phasord's committed placement) builds
// that part of its request here, so the rule lives once.
//
// Pure functions; thread-safe.
#ifndef PHASOR_INTEGRATIONS_CLIENT_RUNNING_JOBS_H_
#define PHASOR_INTEGRATIONS_CLIENT_RUNNING_JOBS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "protocol/phasor.pb.h"

namespace phasor::client {

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

// phasord's committed placement (a GetSnapshot reply) as running jobs in link
// form, at the shifts of their offsets: the jobs the snapshot has a profile
// and committed link shares for. The links' capacities go to `links`.
// InvalidArgument when the snapshot's placement does not convert.
absl::StatusOr<std::vector<RunningJob>> RunningJobsOfSnapshot(const v1::Snapshot& snapshot,
                                                              std::vector<placer::Link>& links);

}  // namespace phasor::client

#endif  // PHASOR_INTEGRATIONS_CLIENT_RUNNING_JOBS_H_
