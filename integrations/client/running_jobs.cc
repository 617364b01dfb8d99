#include "integrations/client/running_jobs.h"

#include <utility>

#include "protocol/convert.h"

namespace phasor::client {

void AddRunningJobs(const std::vector<RunningJob>& running, placer::RankRequest& request, const std::string& except) {
  for (const RunningJob& r : running) {
    if (r.id == except) continue;
    placer::Job job{r.id, r.profile, std::nullopt};
    if (r.shift_us) {
      job.pinned_shift_us = r.profile.period_us > 0 ? *r.shift_us % r.profile.period_us : *r.shift_us;
    }
    request.jobs.push_back(std::move(job));
    if (!r.servers.empty()) {
      request.running.servers[r.id] = r.servers;
    } else {
      request.running.links[r.id] = r.links;
    }
  }
}

absl::StatusOr<std::vector<RunningJob>> RunningJobsOfSnapshot(const v1::Snapshot& snapshot,
                                                              std::vector<placer::Link>& links) {
  absl::StatusOr<placer::RankRequest> placement = protocol::FromProto(snapshot.placement());
  if (!placement.ok()) return placement.status();
  std::map<std::string, uint32_t> shifts;
  for (const v1::OffsetUpdate& o : snapshot.offsets()) shifts[o.job()] = o.shift_us();
  std::vector<RunningJob> out;
  const placer::Candidate* committed = placement->candidates.empty() ? nullptr : &placement->candidates[0];
  if (committed != nullptr) {
    for (placer::Job& j : placement->jobs) {
      auto shares = committed->links.find(j.id);
      if (shares == committed->links.end()) continue;
      RunningJob r;
      r.id = j.id;
      r.profile = std::move(j.profile);
      if (auto s = shifts.find(r.id); s != shifts.end()) r.shift_us = s->second;
      r.links = shares->second;
      out.push_back(std::move(r));
    }
  }
  links = std::move(placement->links);
  return out;
}

}  // namespace phasor::client
