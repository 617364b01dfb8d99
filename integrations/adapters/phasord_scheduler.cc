#include "integrations/adapters/phasord_scheduler.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "protocol/convert.h"

namespace phasor::adapters {

namespace v1 = ::phasor::v1;

PhasordRankedScheduler::PhasordRankedScheduler(std::unique_ptr<host_scheduler::HostSchedulerAdapter> engine,
                                               client::Client* client, ProfileSource profiles,
                                               PhasordSchedulerOptions options)
    : engine_(std::move(engine)),
      client_(client),
      profiles_(std::move(profiles)),
      options_(options),
      name_(std::string(engine_->name()) + "+phasord") {}

v1::RankRequest PhasordRankedScheduler::BuildRequest(const host_scheduler::SchedulingRound& round,
                                                     const std::vector<host_scheduler::CandidateAllocation>& candidates) const {
  std::set<std::string> placed;
  for (const host_scheduler::CandidateAllocation& c : candidates) {
    for (const auto& [job, servers] : c.servers) placed.insert(job);
  }
  v1::RankRequest request;
  *request.mutable_options() = options_.rank_options;
  for (const host_scheduler::PendingJob& job : round.pending) {  // arrival order
    if (placed.count(job.id) == 0) continue;
    v1::Job* j = request.add_jobs();
    j->set_id(job.id);
    if (profiles_) {
      if (std::optional<placer::TrafficProfile> p = profiles_(job)) *j->mutable_profile() = protocol::ToProto(*p);
    }
  }
  for (const host_scheduler::CandidateAllocation& c : candidates) {
    v1::Candidate* out = request.add_candidates();
    out->set_id(c.id);
    for (const auto& [job, servers] : c.servers) {
      v1::ServerList& list = (*out->mutable_servers())[job];
      for (const std::string& s : servers) list.add_servers(s);
    }
  }
  return request;
}

absl::StatusOr<std::vector<host_scheduler::CandidateAllocation>> PhasordRankedScheduler::Propose(const host_scheduler::SchedulingRound& round,
                                                                                      uint32_t k) {
  absl::StatusOr<std::vector<host_scheduler::CandidateAllocation>> proposed = engine_->Propose(round, k);
  if (!proposed.ok() || proposed->empty()) return proposed;
  last_commit_.reset();
  absl::StatusOr<WireRanking> wire = RankAndCommit(client_, BuildRequest(round, *proposed), options_.commit);
  if (!wire.ok()) return wire.status();
  last_reply_ = std::move(wire->reply);
  last_commit_ = std::move(wire->commit);

  std::map<std::string, const host_scheduler::CandidateAllocation*> by_id;
  for (const host_scheduler::CandidateAllocation& c : *proposed) by_id[c.id] = &c;
  std::vector<host_scheduler::CandidateAllocation> ordered;
  std::set<std::string> taken;
  for (const v1::RankedCandidate& r : last_reply_.ranked()) {
    auto it = by_id.find(r.candidate());
    if (it != by_id.end() && taken.insert(r.candidate()).second) ordered.push_back(*it->second);
  }
  for (const host_scheduler::CandidateAllocation& c : *proposed) {
    if (taken.insert(c.id).second) ordered.push_back(c);  // rejected: after the ranked, engine order
  }
  return ordered;
}

}  // namespace phasor::adapters
