#include "integrations/adapters/phasord_scheduler.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "protocol/convert.h"

namespace phasor::adapters {

namespace v1 = ::phasor::v1;

PhasordRankedScheduler::PhasordRankedScheduler(std::unique_ptr<sim::HostSchedulerAdapter> engine,
                                               client::Client* client, ProfileSource profiles,
                                               PhasordSchedulerOptions options)
    : engine_(std::move(engine)),
      client_(client),
      profiles_(std::move(profiles)),
      options_(options),
      name_(std::string(engine_->name()) + "+phasord") {}

v1::RankRequest PhasordRankedScheduler::BuildRequest(const sim::SchedulingRound& round,
                                                     const std::vector<sim::CandidateAllocation>& candidates) const {
  std::set<std::string> placed;
  for (const sim::CandidateAllocation& c : candidates) {
    for (const auto& [job, servers] : c.servers) placed.insert(job);
  }
  v1::RankRequest request;
  *request.mutable_options() = options_.rank_options;
  for (const sim::PendingJob& job : round.pending) {  // arrival order
    if (placed.count(job.id) == 0) continue;
    v1::Job* j = request.add_jobs();
    j->set_id(job.id);
    if (profiles_) {
      if (std::optional<placer::TrafficProfile> p = profiles_(job)) *j->mutable_profile() = protocol::ToProto(*p);
    }
  }
  for (const sim::CandidateAllocation& c : candidates) {
    v1::Candidate* out = request.add_candidates();
    out->set_id(c.id);
    for (const auto& [job, servers] : c.servers) {
      v1::ServerList& list = (*out->mutable_servers())[job];
      for (const std::string& s : servers) list.add_servers(s);
    }
  }
  return request;
}

absl::StatusOr<std::vector<sim::CandidateAllocation>> PhasordRankedScheduler::Propose(const sim::SchedulingRound& round,
                                                                                      uint32_t k) {
  absl::StatusOr<std::vector<sim::CandidateAllocation>> proposed = engine_->Propose(round, k);
  if (!proposed.ok() || proposed->empty()) return proposed;
  absl::StatusOr<v1::RankReply> reply = client_->Rank(BuildRequest(round, *proposed));
  if (!reply.ok()) return reply.status();
  last_reply_ = *std::move(reply);
  last_commit_.reset();

  std::map<std::string, const sim::CandidateAllocation*> by_id;
  for (const sim::CandidateAllocation& c : *proposed) by_id[c.id] = &c;
  std::vector<sim::CandidateAllocation> ordered;
  std::set<std::string> taken;
  for (const v1::RankedCandidate& r : last_reply_.ranked()) {
    auto it = by_id.find(r.candidate());
    if (it != by_id.end() && taken.insert(r.candidate()).second) ordered.push_back(*it->second);
  }
  for (const sim::CandidateAllocation& c : *proposed) {
    if (taken.insert(c.id).second) ordered.push_back(c);  // rejected: after the ranked, engine order
  }
  if (options_.commit && last_reply_.ranked_size() > 0) {
    absl::StatusOr<v1::CommitReply> commit =
        client_->Commit(last_reply_.ranking_id(), last_reply_.ranked(0).candidate());
    if (!commit.ok()) return commit.status();
    last_commit_ = *std::move(commit);
  }
  return ordered;
}

absl::StatusOr<std::unique_ptr<PhasordRankedScheduler>> MakePhasordScheduler(
    std::string_view engine, const sim::ModelCatalog* models, client::Client* client, ProfileSource profiles,
    PhasordSchedulerOptions options) {
  if (engine != "themis" && engine != "pollux") {
    return absl::InvalidArgumentError(absl::StrCat("engine: '", std::string(engine), "' is not themis or pollux"));
  }
  absl::StatusOr<std::unique_ptr<sim::HostSchedulerAdapter>> inner = sim::MakeReferenceScheduler(engine, models);
  if (!inner.ok()) return inner.status();
  return std::make_unique<PhasordRankedScheduler>(*std::move(inner), client, std::move(profiles), options);
}

}  // namespace phasor::adapters
