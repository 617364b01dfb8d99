#include "protocol/convert.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace phasor::protocol {

v1::TrafficProfile ToProto(const placer::TrafficProfile& profile) {
  v1::TrafficProfile out;
  out.set_period_us(profile.period_us);
  out.set_bin_us(profile.bin_us);
  for (double g : profile.gbps) out.add_gbps(g);
  if (profile.square) {
    v1::SquareWave* sq = out.mutable_square();
    sq->set_up_us(profile.square->up_us);
    sq->set_up_gbps(profile.square->up_gbps);
    sq->set_start_us(profile.square->start_us);
    sq->set_down_gbps(profile.square->down_gbps);
  }
  if (profile.t0_epoch_us) out.set_t0_epoch_us(*profile.t0_epoch_us);
  return out;
}

placer::TrafficProfile FromProto(const v1::TrafficProfile& profile) {
  placer::TrafficProfile out;
  out.period_us = profile.period_us();
  out.bin_us = profile.bin_us();
  out.gbps.assign(profile.gbps().begin(), profile.gbps().end());
  if (profile.has_square()) {
    out.square = placer::SquareWave{profile.square().up_us(), profile.square().up_gbps(),
                                    profile.square().start_us(), profile.square().down_gbps()};
  }
  if (profile.has_t0_epoch_us()) out.t0_epoch_us = profile.t0_epoch_us();
  return out;
}

v1::RankRequest ToProto(const placer::RankRequest& request) {
  v1::RankRequest out;
  ToProto(request, out);
  return out;
}

void ToProto(const placer::RankRequest& request, v1::RankRequest& out) {
  for (const placer::Link& link : request.links) {
    v1::Link* l = out.add_links();
    l->set_id(link.id);
    l->set_capacity_gbps(link.capacity_gbps);
  }
  for (const placer::Job& job : request.jobs) {
    v1::Job* j = out.add_jobs();
    j->set_id(job.id);
    *j->mutable_profile() = ToProto(job.profile);
    if (job.pinned_shift_us) j->set_pinned_shift_us(*job.pinned_shift_us);
  }
  for (const placer::Candidate& candidate : request.candidates) {
    v1::Candidate* c = out.add_candidates();
    c->set_id(candidate.id);
    for (const auto& [job, shares] : candidate.links) {
      auto& m = *(*c->mutable_links())[job].mutable_shares();
      for (const auto& [link, share] : shares) m[link] = share;
    }
    for (const auto& [job, servers] : candidate.servers) {
      v1::ServerList& list = (*c->mutable_servers())[job];
      for (const std::string& s : servers) list.add_servers(s);
    }
  }
  if (!request.running.empty()) {
    v1::RunningPlacement* running = out.mutable_running();
    for (const auto& [job, shares] : request.running.links) {
      auto& m = *(*running->mutable_links())[job].mutable_shares();
      for (const auto& [link, share] : shares) m[link] = share;
    }
    for (const auto& [job, servers] : request.running.servers) {
      v1::ServerList& list = (*running->mutable_servers())[job];
      for (const std::string& s : servers) list.add_servers(s);
    }
  }
  for (const std::string& s : request.free_servers) out.add_free_servers(s);
  const placer::RankOptions& o = request.options;
  v1::RankOptions* opts = out.mutable_options();
  opts->set_quantum_us(o.circle.quantum_us);
  opts->set_max_bins(o.circle.max_bins);
  opts->set_exact_max_evaluations(o.solver.exact_max_evaluations);
  opts->set_restarts(o.solver.restarts);
  opts->set_max_sweeps(o.solver.max_sweeps);
  opts->set_seed(o.solver.seed);
  opts->set_max_spanning_trees(o.joint.max_spanning_trees);
  opts->set_joint_max_sweeps(o.joint.max_sweeps);
  opts->set_ring_order(o.ring_order == placer::RingOrderMode::kHost ? v1::RankOptions::RING_ORDER_HOST
                                                                    : v1::RankOptions::RING_ORDER_PHASOR);
  opts->set_own_candidates(o.own_candidates);
}

absl::StatusOr<placer::RankRequest> FromProto(const v1::RankRequest& request,
                                              const ProfileLookup& lookup) {
  placer::RankRequest out;
  out.links.reserve(request.links_size());
  for (const v1::Link& link : request.links()) out.links.push_back({link.id(), link.capacity_gbps()});
  out.jobs.reserve(request.jobs_size());
  for (int i = 0; i < request.jobs_size(); ++i) {
    const v1::Job& job = request.jobs(i);
    placer::Job j;
    j.id = job.id();
    if (job.has_profile()) {
      j.profile = FromProto(job.profile());
    } else {
      std::optional<placer::TrafficProfile> known = lookup ? lookup(job.id()) : std::nullopt;
      if (!known) {
        return absl::NotFoundError(absl::StrCat("jobs[", i, "].profile: no profile given and none known for job '",
                                                job.id(), "'"));
      }
      j.profile = *std::move(known);
    }
    if (job.has_pinned_shift_us()) j.pinned_shift_us = job.pinned_shift_us();
    out.jobs.push_back(std::move(j));
  }
  out.candidates.reserve(request.candidates_size());
  for (const v1::Candidate& candidate : request.candidates()) {
    placer::Candidate c;
    c.id = candidate.id();
    for (const auto& [job, shares] : candidate.links()) {
      auto& m = c.links[job];
      for (const auto& [link, share] : shares.shares()) m[link] = share;
    }
    for (const auto& [job, servers] : candidate.servers()) {
      c.servers[job].assign(servers.servers().begin(), servers.servers().end());
    }
    out.candidates.push_back(std::move(c));
  }
  for (const auto& [job, shares] : request.running().links()) {
    auto& m = out.running.links[job];
    for (const auto& [link, share] : shares.shares()) m[link] = share;
  }
  for (const auto& [job, servers] : request.running().servers()) {
    out.running.servers[job].assign(servers.servers().begin(), servers.servers().end());
  }
  out.free_servers.assign(request.free_servers().begin(), request.free_servers().end());
  const v1::RankOptions& o = request.options();
  placer::RankOptions& opts = out.options;
  if (o.has_quantum_us()) opts.circle.quantum_us = o.quantum_us();
  if (o.has_max_bins()) opts.circle.max_bins = o.max_bins();
  if (o.has_exact_max_evaluations()) opts.solver.exact_max_evaluations = o.exact_max_evaluations();
  if (o.has_restarts()) opts.solver.restarts = o.restarts();
  if (o.has_max_sweeps()) opts.solver.max_sweeps = o.max_sweeps();
  if (o.has_seed()) opts.solver.seed = o.seed();
  if (o.has_max_spanning_trees()) opts.joint.max_spanning_trees = o.max_spanning_trees();
  if (o.has_joint_max_sweeps()) opts.joint.max_sweeps = o.joint_max_sweeps();
  switch (o.ring_order()) {
    case v1::RankOptions::RING_ORDER_UNSET: break;
    case v1::RankOptions::RING_ORDER_HOST: opts.ring_order = placer::RingOrderMode::kHost; break;
    case v1::RankOptions::RING_ORDER_PHASOR: opts.ring_order = placer::RingOrderMode::kPhasor; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("options.ring_order: ", static_cast<int>(o.ring_order()), " is not HOST or PHASOR"));
  }
  if (o.has_own_candidates()) opts.own_candidates = o.own_candidates();
  return out;
}

namespace {

// Per shifted job of `candidate`, the quantum of the first contended link
// (in order) that names it and has one (0: none): the rule of ShiftPeriodUs,
// for every shift in one pass over the links, which ends once every shifted
// job has its link (at 10,000 servers after a few of 8,000).
absl::flat_hash_map<std::string_view, uint32_t> ShiftQuanta(const placer::RankedCandidate& candidate) {
  absl::flat_hash_map<std::string_view, uint32_t> quantum;
  for (const auto& [job, shift] : candidate.shifts_us) quantum.try_emplace(job, 0);
  size_t missing = quantum.size();
  for (auto link = candidate.links.begin(); missing > 0 && link != candidate.links.end(); ++link) {
    if (link->quantum_us == 0) continue;
    for (const std::string& j : link->jobs) {
      auto q = quantum.find(j);
      if (q != quantum.end() && q->second == 0) {
        q->second = link->quantum_us;
        --missing;
      }
    }
  }
  return quantum;
}

uint32_t PeriodOnQuantum(const placer::Job& job, uint32_t quantum_us) {
  return quantum_us == 0 ? job.profile.period_us : placer::QuantizedPeriodUs(job.profile.period_us, quantum_us);
}

}  // namespace

uint32_t ShiftPeriodUs(const placer::RankedCandidate& candidate, const placer::Job& job) {
  for (const placer::LinkResult& link : candidate.links) {
    if (link.quantum_us == 0) continue;
    if (std::find(link.jobs.begin(), link.jobs.end(), job.id) != link.jobs.end()) {
      return PeriodOnQuantum(job, link.quantum_us);
    }
  }
  return job.profile.period_us;
}

v1::RankReply ToProto(const placer::Ranking& ranking, const placer::RankRequest& request, bool links) {
  v1::RankReply out;
  absl::flat_hash_map<std::string_view, const placer::Job*> job_of;
  for (const placer::Job& j : request.jobs) job_of.try_emplace(j.id, &j);  // ids are unique (validated)
  for (const placer::RankedCandidate& rc : ranking.ranked) {
    const absl::flat_hash_map<std::string_view, uint32_t> quanta = ShiftQuanta(rc);  // ShiftPeriodUs's rule
    v1::RankedCandidate* c = out.add_ranked();
    c->set_candidate(rc.candidate);
    c->set_score(rc.score);
    c->set_min_link_score(rc.min_link_score);
    c->set_cycle(rc.cycle);
    c->set_exact(rc.exact);
    c->set_proposed_by_phasor(rc.proposed_by_phasor);
    for (const auto& [job, servers] : rc.rank_order) {
      v1::ServerList& list = (*c->mutable_rank_order())[job];
      for (const std::string& s : servers) list.add_servers(s);
    }
    for (const auto& [job, shift] : rc.shifts_us) {
      v1::JobShift* s = c->add_shifts();
      s->set_job(job);
      s->set_shift_us(shift);
      if (auto j = job_of.find(job); j != job_of.end()) s->set_period_us(PeriodOnQuantum(*j->second, quanta.at(job)));
    }
    if (!links) continue;
    for (const placer::LinkResult& lr : rc.links) {
      v1::LinkResult* l = c->add_links();
      l->set_id(lr.id);
      l->set_score(lr.score);
      l->set_optimal_score(lr.optimal_score);
      l->set_capacity_gbps(lr.capacity_gbps);
      for (const std::string& j : lr.jobs) l->add_jobs(j);
      l->set_quantum_us(lr.quantum_us);
      l->set_circle_bins(lr.circle_bins);
      l->set_exact(lr.exact);
      for (size_t i = 0; i < lr.jobs.size() && i < lr.rounding_error_us.size(); ++i) {
        (*l->mutable_rounding_error_us())[lr.jobs[i]] = lr.rounding_error_us[i];
      }
    }
  }
  for (const placer::RejectedCandidate& rj : ranking.rejected) {
    v1::RejectedCandidate* r = out.add_rejected();
    r->set_candidate(rj.candidate);
    r->set_reason(rj.reason);
  }
  return out;
}

placer::Ranking FromProto(const v1::RankReply& reply) {
  placer::Ranking out;
  for (const v1::RankedCandidate& c : reply.ranked()) {
    placer::RankedCandidate rc;
    rc.candidate = c.candidate();
    rc.score = c.score();
    rc.min_link_score = c.min_link_score();
    rc.cycle = c.cycle();
    rc.exact = c.exact();
    rc.proposed_by_phasor = c.proposed_by_phasor();
    for (const auto& [job, servers] : c.rank_order()) {
      rc.rank_order[job].assign(servers.servers().begin(), servers.servers().end());
    }
    for (const v1::JobShift& s : c.shifts()) rc.shifts_us.emplace_back(s.job(), s.shift_us());
    for (const v1::LinkResult& l : c.links()) {
      placer::LinkResult lr;
      lr.id = l.id();
      lr.score = l.score();
      lr.optimal_score = l.optimal_score();
      lr.capacity_gbps = l.capacity_gbps();
      lr.jobs.assign(l.jobs().begin(), l.jobs().end());
      lr.quantum_us = l.quantum_us();
      lr.circle_bins = l.circle_bins();
      lr.exact = l.exact();
      // Per job of `jobs`; a job the map leaves out: 0.
      for (const std::string& job : lr.jobs) {
        auto err = l.rounding_error_us().find(job);
        lr.rounding_error_us.push_back(err != l.rounding_error_us().end() ? err->second : 0);
      }
      rc.links.push_back(std::move(lr));
    }
    out.ranked.push_back(std::move(rc));
  }
  for (const v1::RejectedCandidate& r : reply.rejected()) out.rejected.push_back({r.candidate(), r.reason()});
  return out;
}

placer::TrafficProfile ProfileFromUpdate(const v1::ProfileUpdate& update) {
  placer::TrafficProfile out;
  out.period_us = update.period_us();
  out.bin_us = update.bin_us();
  out.gbps.assign(update.gbps().begin(), update.gbps().end());
  if (update.has_t0_epoch_us()) out.t0_epoch_us = update.t0_epoch_us();
  return out;
}

namespace {

absl::Status CheckId(const std::string& value, const char* field) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": must not be empty"));
  if (value.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", value.size(), " bytes is outside 1..", kMaxIdBytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateProfileUpdate(const v1::ProfileUpdate& update) {
  if (absl::Status s = CheckId(update.subject(), "subject"); !s.ok()) return s;
  if (!v1::ProfileUpdate::SubjectKind_IsValid(update.kind())) {
    return absl::InvalidArgumentError(absl::StrCat("kind: ", update.kind(), " is neither JOB (0) nor LINK (1)"));
  }
  if (!(update.confidence() >= 0 && update.confidence() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("confidence: ", update.confidence(), " is outside 0..1"));
  }
  if (update.source().size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("source: ", update.source().size(), " bytes is outside 0..", kMaxIdBytes));
  }
  return placer::ValidateProfile(ProfileFromUpdate(update));
}

absl::Status ValidateCommitPlacement(const v1::CommitPlacement& commit) {
  return CheckId(commit.candidate(), "candidate");
}

absl::Status ValidateGetOffset(const v1::GetOffset& get) { return CheckId(get.job(), "job"); }

}  // namespace phasor::protocol
