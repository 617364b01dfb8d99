#include "protocol/running_jobs.h"

#include <set>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "protocol/convert.h"

namespace phasor::protocol {

namespace {

placer::Job PinnedJob(const RunningJob& r) {
  placer::Job job{r.id, r.profile, std::nullopt};
  if (r.shift_us) job.pinned_shift_us = r.profile.period_us > 0 ? *r.shift_us % r.profile.period_us : *r.shift_us;
  return job;
}

void AddPlacement(const RunningJob& r, placer::RankRequest& request) {
  if (!r.servers.empty()) {
    request.running.servers[r.id] = r.servers;
  } else {
    request.running.links[r.id] = r.links;
  }
}

}  // namespace

void AddRunningJobs(const std::vector<RunningJob>& running, placer::RankRequest& request, const std::string& except) {
  for (const RunningJob& r : running) {
    if (r.id == except) continue;
    request.jobs.push_back(PinnedJob(r));
    AddPlacement(r, request);
  }
}

size_t PrependRunningJobs(const std::vector<RunningJob>& running, const std::vector<placer::Link>& links,
                          placer::RankRequest& request) {
  absl::flat_hash_set<std::string_view> named, given;
  for (const placer::Job& j : request.jobs) named.insert(j.id);
  for (const placer::Link& l : request.links) given.insert(l.id);
  std::vector<placer::Job> jobs;
  jobs.reserve(running.size() + request.jobs.size());
  for (const RunningJob& r : running) {
    if (named.contains(r.id)) continue;
    jobs.push_back(PinnedJob(r));
    AddPlacement(r, request);
  }
  const size_t added = jobs.size();
  std::vector<placer::Link> all;
  all.reserve(links.size() + request.links.size());
  for (const placer::Link& l : links) {
    if (!given.contains(l.id)) all.push_back(l);
  }
  // The sets hold views into request's strings: moved only now.
  for (placer::Job& j : request.jobs) jobs.push_back(std::move(j));
  for (placer::Link& l : request.links) all.push_back(std::move(l));
  request.jobs = std::move(jobs);
  request.links = std::move(all);
  return added;
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

}  // namespace phasor::protocol
