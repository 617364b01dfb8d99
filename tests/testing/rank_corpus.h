// Ranking requests shared by the placer's benchmarks, its golden test and
// bench/rank_digest (which bench/regress.sh builds at two commits to check
// that a change to the ranking path changes no reply), and a digest of a
// ranking: every field of every ranked and rejected candidate and the
// ranking policy's decision, doubles by their bits.
//
// Every generator is a pure function of its seed (std::mt19937_64 and the
// standard distributions used here are specified bit for bit).
#ifndef PHASOR_TESTS_TESTING_RANK_CORPUS_H_
#define PHASOR_TESTS_TESTING_RANK_CORPUS_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "placer/ranker.h"
#include "placer/ranking_policy.h"
#include "placer/traffic_profile.h"

namespace phasor::testing {

inline constexpr double kCorpusCapacity = 50.0;

// A training-like profile: compute (idle), then an all-reduce burst of
// `up_fraction` of the period at `gbps` (each bin jittered by 0.9-1.0), with
// 1 ms bins.
inline placer::TrafficProfile Burst(uint32_t period_ms, double up_fraction, double gbps, std::mt19937_64& rng) {
  placer::TrafficProfile p;
  p.period_us = period_ms * 1000;
  p.bin_us = 1000;
  p.gbps.assign(period_ms, 0.0);
  const uint32_t up = std::max<uint32_t>(1, static_cast<uint32_t>(period_ms * up_fraction));
  std::uniform_real_distribution<double> jitter(0.9, 1.0);
  for (uint32_t k = period_ms - up; k < period_ms; ++k) p.gbps[k] = gbps * jitter(rng);
  return p;
}

// Bursts with periods uniform in 100-500 ms, Up fractions 0.2-0.5, 30-50 Gbit/s.
inline std::vector<placer::TrafficProfile> RandomJobs(size_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<uint32_t> period(100, 500);
  std::uniform_real_distribution<double> up(0.2, 0.5), gbps(30, 50);
  std::vector<placer::TrafficProfile> jobs;
  for (size_t j = 0; j < count; ++j) jobs.push_back(Burst(period(rng), up(rng), gbps(rng), rng));
  return jobs;
}

// Iteration times (ms) measured for imagenet, yolov3 and bert, deepspeech2
// at two batch sizes each (data/models, from the Pollux traces): a cluster
// runs a handful of models, so periods repeat.
inline constexpr uint32_t kCatalogueMs[] = {147, 208, 267, 451, 455, 558};

inline std::vector<placer::TrafficProfile> CatalogueJobs(size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> up(0.2, 0.5), gbps(30, 50);
  std::vector<placer::TrafficProfile> jobs;
  for (size_t j = 0; j < count; ++j) {
    jobs.push_back(Burst(kCatalogueMs[rng() % std::size(kCatalogueMs)], up(rng), gbps(rng), rng));
  }
  return jobs;
}

// 16 candidates x 64 contended links x 3 jobs per link, the plugin's everyday
// request: 128 running jobs hold 64 links, two per link; the host scheduler
// proposes 16 placements for two arriving jobs, each crossing 32 of the
// links, so every link carries 3 jobs. Link contents repeat across
// candidates (the running jobs do not move), which the ranker's per-request
// memo exploits. `catalogue`: periods from kCatalogueMs instead of uniform.
inline placer::RankRequest ArrivalInstance(uint64_t seed, bool catalogue) {
  std::mt19937_64 rng(seed);
  placer::RankRequest r;
  const std::vector<placer::TrafficProfile> profiles = catalogue ? CatalogueJobs(130, rng) : RandomJobs(130, rng);
  for (size_t j = 0; j < profiles.size(); ++j) {
    r.jobs.push_back({.id = absl::StrCat("job", j), .profile = profiles[j], .pinned_shift_us = {}});
  }
  for (int l = 0; l < 64; ++l) {
    r.links.push_back({.id = absl::StrCat("link", l), .capacity_gbps = kCorpusCapacity});
  }
  for (int c = 0; c < 16; ++c) {
    placer::Candidate cand;  // (not designated: the corpus builds against older placers too)
    cand.id = absl::StrCat("cand", c);
    for (int l = 0; l < 64; ++l) {
      const std::string link = absl::StrCat("link", l);
      cand.links[r.jobs[2 * l].id][link] = 1.0;
      cand.links[r.jobs[2 * l + 1].id][link] = 1.0;
    }
    // The arriving jobs 128 and 129 split the links between them.
    std::vector<int> order(64);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int i = 0; i < 64; ++i) {
      const std::string link = absl::StrCat("link", order[i]);
      cand.links[r.jobs[i < 32 ? 128 : 129].id][link] = 1.0;
    }
    r.candidates.push_back(std::move(cand));
  }
  return r;
}

// A stress test: a pool of 64 jobs; every candidate puts each job on 3 links
// with different partners, so each candidate's affinity graph is one tangled
// component with 65 independent loops and no link content repeats.
inline placer::RankRequest ShuffledInstance(uint64_t seed) {
  std::mt19937_64 rng(seed);
  placer::RankRequest r;
  const std::vector<placer::TrafficProfile> profiles = RandomJobs(64, rng);
  for (size_t j = 0; j < profiles.size(); ++j) {
    r.jobs.push_back({.id = absl::StrCat("job", j), .profile = profiles[j], .pinned_shift_us = {}});
  }
  for (int l = 0; l < 64; ++l) {
    r.links.push_back({.id = absl::StrCat("link", l), .capacity_gbps = kCorpusCapacity});
  }
  for (int c = 0; c < 16; ++c) {
    placer::Candidate cand;  // (not designated: the corpus builds against older placers too)
    cand.id = absl::StrCat("cand", c);
    std::vector<size_t> slots;  // 192 slots: every job three times
    for (size_t j = 0; j < 64; ++j) slots.insert(slots.end(), 3, j);
    // Shuffle until no link gets the same job twice.
    for (bool clash = true; clash;) {
      std::shuffle(slots.begin(), slots.end(), rng);
      clash = false;
      for (int l = 0; l < 64 && !clash; ++l) {
        clash = slots[3 * l] == slots[3 * l + 1] || slots[3 * l] == slots[3 * l + 2] ||
                slots[3 * l + 1] == slots[3 * l + 2];
      }
    }
    for (int l = 0; l < 64; ++l) {
      for (int k = 0; k < 3; ++k) {
        cand.links[r.jobs[slots[3 * l + k]].id][absl::StrCat("link", l)] = 1.0;
      }
    }
    r.candidates.push_back(std::move(cand));
  }
  return r;
}

// A small request of every kind the ranker meets: 2-6 jobs (square waves,
// jittered bursts, equal or commensurate or random periods), 1-4 links of
// 20-60 Gbit/s, 1-5 candidates sharing them with random shares (some jobs
// pinned, some in the request's running part, some links looping), so that
// every solver path runs: exact best-first and depth-first, the descent,
// the joint solver, centring, pins.
inline placer::RankRequest SmallInstance(uint64_t seed) {
  std::mt19937_64 rng(seed);
  placer::RankRequest r;
  const int jobs = 2 + static_cast<int>(rng() % 5);
  const int links = 1 + static_cast<int>(rng() % 4);
  const int candidates = 1 + static_cast<int>(rng() % 5);
  const int period_kind = static_cast<int>(rng() % 3);  // 0 equal, 1 commensurate, 2 random
  const uint32_t base_ms = 20 + static_cast<uint32_t>(rng() % 200);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int j = 0; j < jobs; ++j) {
    uint32_t period_ms = base_ms;
    if (period_kind == 1) period_ms = base_ms * (1 + static_cast<uint32_t>(rng() % 3));
    if (period_kind == 2) period_ms = 20 + static_cast<uint32_t>(rng() % 400);
    placer::Job job;
    job.id = absl::StrCat("j", j);
    if (rng() % 2 == 0) {
      job.profile.period_us = period_ms * 1000;
      job.profile.square = placer::SquareWave{.up_us = static_cast<uint32_t>(period_ms * 1000 * (0.1 + 0.6 * unit(rng))),
                                              .up_gbps = 10 + 40 * unit(rng),
                                              .start_us = static_cast<uint32_t>(rng() % (period_ms * 1000)),
                                              .down_gbps = rng() % 4 == 0 ? 2.0 : 0.0};
    } else {
      const double up = 0.1 + 0.6 * unit(rng);
      const double gbps = 10 + 40 * unit(rng);
      job.profile = Burst(period_ms, up, gbps, rng);
    }
    if (rng() % 5 == 0) job.pinned_shift_us = static_cast<uint32_t>(rng() % job.profile.period_us);
    r.jobs.push_back(std::move(job));
  }
  for (int l = 0; l < links; ++l) {
    r.links.push_back({.id = absl::StrCat("l", l), .capacity_gbps = 20 + 40 * unit(rng)});
  }
  const bool with_running = rng() % 3 == 0 && jobs > 2;
  if (with_running) {
    for (int l = 0; l < links; ++l) r.running.links["j0"][absl::StrCat("l", l)] = rng() % 2 == 0 ? 1.0 : 0.5;
  }
  for (int c = 0; c < candidates; ++c) {
    placer::Candidate cand;
    cand.id = absl::StrCat("c", c);
    for (int j = with_running ? 1 : 0; j < jobs; ++j) {
      for (int l = 0; l < links; ++l) {
        if (rng() % 3 != 0) cand.links[absl::StrCat("j", j)][absl::StrCat("l", l)] = rng() % 2 == 0 ? 1.0 : unit(rng);
      }
    }
    r.candidates.push_back(std::move(cand));
  }
  r.options.solver.seed = seed;
  return r;
}

// FNV-1a over the bytes of everything added.
class Digest {
 public:
  void Add(std::string_view s) {
    Add(static_cast<uint64_t>(s.size()));
    for (unsigned char c : s) Byte(c);
  }
  void Add(uint64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<unsigned char>(v >> (8 * i)));
  }
  void Add(double v) { Add(std::bit_cast<uint64_t>(v)); }
  void Add(bool v) { Byte(v ? 1 : 0); }
  uint64_t value() const { return h_; }

 private:
  void Byte(unsigned char c) {
    h_ ^= c;
    h_ *= 0x100000001b3ULL;
  }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

// Every field of `ranking` (the placer's reply) into `digest`.
inline void AddRanking(const placer::Ranking& ranking, Digest& digest) {
  digest.Add(static_cast<uint64_t>(ranking.ranked.size()));
  for (const placer::RankedCandidate& c : ranking.ranked) {
    digest.Add(c.candidate);
    digest.Add(c.score);
    digest.Add(c.min_link_score);
    digest.Add(c.cycle);
    digest.Add(c.exact);
    for (const auto& [job, shift] : c.shifts_us) {
      digest.Add(job);
      digest.Add(static_cast<uint64_t>(shift));
    }
    for (const placer::LinkResult& l : c.links) {
      digest.Add(l.id);
      digest.Add(l.score);
      digest.Add(l.optimal_score);
      digest.Add(l.capacity_gbps);
      for (const std::string& j : l.jobs) digest.Add(j);
      digest.Add(static_cast<uint64_t>(l.quantum_us));
      digest.Add(l.circle_bins);
      digest.Add(l.exact);
      // By job id, as when they were a map by id (digests compare across commits).
      std::vector<std::pair<std::string, int64_t>> errors;
      for (size_t i = 0; i < l.jobs.size() && i < l.rounding_error_us.size(); ++i) {
        errors.emplace_back(l.jobs[i], l.rounding_error_us[i]);
      }
      std::sort(errors.begin(), errors.end());
      for (const auto& [job, error] : errors) {
        digest.Add(job);
        digest.Add(static_cast<uint64_t>(error));
      }
    }
  }
  digest.Add(static_cast<uint64_t>(ranking.rejected.size()));
  for (const placer::RejectedCandidate& c : ranking.rejected) {
    digest.Add(c.candidate);
    digest.Add(c.reason);
  }
}

// The ranking of `request` and the ranking policy's (default: the shipped one) reordering of
// it, with its decision, as one digest (the decision's candidates, reasons
// and scores; not its effective scores, which the policy computes as S
// itself where they are R + (S - R), and no reply carries).
inline uint64_t RankAndPolicyDigest(const placer::RankRequest& request,
                                    const placer::RankingPolicyOptions& policy = placer::RankingPolicyOptions{}) {
  Digest digest;
  placer::Ranking ranking = placer::Rank(request);
  AddRanking(ranking, digest);
  const placer::PolicyDecision decision = placer::ApplyRankingPolicy(request, policy, ranking);
  AddRanking(ranking, digest);
  for (const std::string& s : {decision.host_first, decision.chosen, decision.reason, decision.score_best,
                               decision.blocked}) {
    digest.Add(s);
  }
  digest.Add(decision.score_best_score);
  digest.Add(decision.host_first_score);
  digest.Add(static_cast<uint64_t>(decision.discarded_loops));
  return digest.value();
}

}  // namespace phasor::testing

#endif  // PHASOR_TESTS_TESTING_RANK_CORPUS_H_
