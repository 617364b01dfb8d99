// The diagnosis' numbers against the placer's and against hand computation.
#include "diagnose/diagnosis.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/link_score.h"
#include "placer/rank_json.h"
#include "tests/testing/subprocess.h"

namespace phasor::diagnose {
namespace diagnosis_test {
namespace {

using ::testing::ElementsAre;

placer::RankRequest Example() {
  const std::string text =
      testing::ReadFileOrEmpty(std::string(PHASOR_SOURCE_DIR) + "/data/examples/diagnose.json");
  absl::StatusOr<placer::RankRequest> r = placer::ParseRankRequest(text);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

// One link of capacity 10 and two jobs of period 4 ms in 1 ms bins:
// a = [8, 8, 0, 0], b = [6, 0, 0, 0].
placer::RankRequest Tiny() {
  placer::RankRequest r;
  r.links = {{"l", 10.0}};
  placer::TrafficProfile a{4000, 1000, {8, 8, 0, 0}, std::nullopt, std::nullopt};
  placer::TrafficProfile b{4000, 1000, {6, 0, 0, 0}, std::nullopt, std::nullopt};
  r.jobs = {{"a", a, std::nullopt}, {"b", b, std::nullopt}};
  r.candidates = {{"c", {{"a", {{"l", 1.0}}}, {"b", {{"l", 1.0}}}}, {}, {}, false}};
  return r;
}

TEST(DiagnosisTest, NumbersAreThePlacers) {
  const placer::RankRequest request = Example();
  const placer::Ranking ranking = placer::Rank(request);
  ASSERT_EQ(ranking.ranked.size(), 1u);
  const placer::RankedCandidate& ranked = ranking.ranked[0];
  absl::StatusOr<Diagnosis> d = Diagnose(request, "");
  ASSERT_TRUE(d.ok()) << d.status();

  EXPECT_EQ(d->candidate, "running");
  EXPECT_EQ(d->achievable_score, ranked.score);
  EXPECT_EQ(d->min_link_score, ranked.min_link_score);
  EXPECT_EQ(d->cycle, ranked.cycle);
  EXPECT_TRUE(d->cycle);  // the example has a loop
  EXPECT_EQ(d->exact, ranked.exact);
  ASSERT_EQ(d->links.size(), ranked.links.size());
  std::map<std::string, uint32_t> shifts(ranked.shifts_us.begin(), ranked.shifts_us.end());
  ASSERT_EQ(d->jobs.size(), 5u);
  for (const JobSummary& j : d->jobs) EXPECT_EQ(j.recommended_shift_us, shifts.at(j.id)) << j.id;

  std::map<std::string, const placer::Job*> jobs;
  for (const placer::Job& j : request.jobs) jobs[j.id] = &j;
  const placer::Candidate& candidate = request.candidates[0];
  double current_sum = 0;
  for (const placer::LinkResult& r : ranked.links) {
    auto it = std::find_if(d->links.begin(), d->links.end(),
                           [&](const LinkDiagnosis& l) { return l.id == r.id; });
    ASSERT_NE(it, d->links.end()) << r.id;
    const LinkDiagnosis& l = *it;
    EXPECT_EQ(l.achievable_score, r.score) << r.id;
    EXPECT_EQ(l.optimal_score, r.optimal_score) << r.id;
    EXPECT_EQ(l.capacity_gbps, r.capacity_gbps);
    EXPECT_EQ(l.quantum_us, r.quantum_us);
    EXPECT_EQ(l.bins, r.circle_bins);
    ASSERT_EQ(l.jobs.size(), r.jobs.size());

    // The same circle, built here from the request, at the current phases
    // (t0 relative to the earliest t0; dlrm has none) and at the ranker's shifts.
    std::vector<placer::LinkDemand> demands;
    std::vector<uint32_t> now, after;
    for (size_t p = 0; p < r.jobs.size(); ++p) {
      const placer::Job& job = *jobs.at(r.jobs[p]);
      EXPECT_EQ(l.jobs[p].job, job.id);
      demands.push_back({&job.profile, candidate.links.at(job.id).at(r.id)});
      EXPECT_EQ(l.jobs[p].share, demands.back().share);
    }
    auto circle = placer::BuildUnifiedCircle(demands, request.options.circle);
    ASSERT_TRUE(circle.ok());
    for (size_t p = 0; p < r.jobs.size(); ++p) {
      const placer::Job& job = *jobs.at(r.jobs[p]);
      const int64_t t0 = job.profile.t0_epoch_us.value_or(1764400000000000);
      const uint32_t now_us =
          static_cast<uint32_t>((t0 - 1764400000000000) % job.profile.period_us);
      EXPECT_EQ(l.jobs[p].current_shift_us, now_us) << job.id;
      EXPECT_EQ(l.jobs[p].phase_source,
                job.profile.t0_epoch_us ? PhaseSource::kT0 : PhaseSource::kAssumedZero);
      EXPECT_EQ(l.jobs[p].recommended_shift_us, shifts.at(job.id));
      const uint32_t b = circle->JobBins(p);
      now.push_back(static_cast<uint32_t>((now_us + 500) / 1000 % b));
      after.push_back(static_cast<uint32_t>((shifts.at(job.id) + 500) / 1000 % b));
    }
    EXPECT_EQ(l.current_score, placer::LinkScore(*circle, r.capacity_gbps, now)) << r.id;
    EXPECT_NEAR(l.achievable_score, placer::LinkScore(*circle, r.capacity_gbps, after), 1e-12);
    EXPECT_EQ(l.load_before, placer::LoadOnCircle(*circle, now));
    EXPECT_EQ(l.load_after, placer::LoadOnCircle(*circle, after));
    EXPECT_DOUBLE_EQ(l.excess_bytes_per_hour_after,
                     (1 - r.score) * r.capacity_gbps * 1e9 / 8 * 3600);
    current_sum += l.current_score;
  }
  EXPECT_DOUBLE_EQ(d->current_score, current_sum / 4);
  // Largest gain first.
  for (size_t i = 1; i < d->links.size(); ++i) {
    EXPECT_GE(d->links[i - 1].gain(), d->links[i].gain() - 1e-9);
  }
  EXPECT_EQ(d->links[0].id, "leaf1->spine1");
}

TEST(DiagnosisTest, TinyInstanceByHand) {
  absl::StatusOr<Diagnosis> d = Diagnose(Tiny(), "c");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->links.size(), 1u);
  const LinkDiagnosis& l = d->links[0];
  EXPECT_EQ(l.bins, 4u);
  // Both start together: load [14, 8, 0, 0], excess 4 over 4 bins = 1 Gbit/s
  // on average, score 1 - 1/10, 1 Gbit/s x 3600 s / 8 = 450 GB per hour.
  EXPECT_THAT(l.load_before, ElementsAre(14, 8, 0, 0));
  EXPECT_DOUBLE_EQ(l.current_score, 0.9);
  EXPECT_DOUBLE_EQ(l.excess_bytes_per_hour_before, 450e9);
  // b moved behind a: nothing above 10.
  EXPECT_DOUBLE_EQ(l.achievable_score, 1.0);
  EXPECT_EQ(l.excess_bytes_per_hour_after, 0.0);
  EXPECT_GE(l.jobs[1].recommended_shift_us, 2000u);
  EXPECT_DOUBLE_EQ(l.gain(), 0.1);
  EXPECT_DOUBLE_EQ(d->excess_bytes_per_hour_before(), 450e9);
  EXPECT_FALSE(d->epoch_us.has_value());
  EXPECT_EQ(l.jobs[0].phase_source, PhaseSource::kAssumedZero);
}

TEST(DiagnosisTest, CurrentPhasesComeFromT0) {
  placer::RankRequest r = Tiny();
  r.jobs[0].profile.t0_epoch_us = 1'000'000;
  // Three whole periods and 2 ms later: b is already interleaved.
  r.jobs[1].profile.t0_epoch_us = 1'000'000 + 3 * 4000 + 2000;
  absl::StatusOr<Diagnosis> d = Diagnose(r, "c");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->epoch_us, 1'000'000);
  const LinkDiagnosis& l = d->links[0];
  EXPECT_EQ(l.jobs[1].current_shift_us, 2000u);
  EXPECT_EQ(l.jobs[1].current_shift_bins, 2u);
  EXPECT_EQ(l.jobs[1].phase_source, PhaseSource::kT0);
  EXPECT_THAT(l.load_before, ElementsAre(8, 8, 6, 0));
  EXPECT_DOUBLE_EQ(l.current_score, 1.0);
  EXPECT_DOUBLE_EQ(l.gain(), 0.0);
}

TEST(DiagnosisTest, UpArcsFollowTheShiftAroundTheCircle) {
  JobOnLink j;
  j.gbps = {0, 10, 10, 0.2};  // Up in pattern bins 1 and 2 (0.2 is below 5% of the swing)
  j.peak_gbps = 10;
  auto pairs = [](const std::vector<Arc>& arcs) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const Arc& a : arcs) out.emplace_back(a.begin, a.end);
    return out;
  };
  using P = std::pair<uint64_t, uint64_t>;
  // The pattern twice around a circle of 8 bins.
  EXPECT_THAT(pairs(UpArcs(j, 8, 0, 0.05)), ElementsAre(P{1, 3}, P{5, 7}));
  EXPECT_THAT(pairs(UpArcs(j, 8, 3, 0.05)), ElementsAre(P{0, 2}, P{4, 6}));
  // An arc across bin 0 is split in two.
  EXPECT_THAT(pairs(UpArcs(j, 8, 2, 0.05)), ElementsAre(P{0, 1}, P{3, 5}, P{7, 8}));
  // Threshold 0: any demand above the minimum is Up.
  EXPECT_THAT(pairs(UpArcs(j, 4, 0, 0.0)), ElementsAre(P{1, 4}));
  // Steady background traffic is not an Up phase; a flat pattern is Up throughout.
  j.gbps = {2, 12, 12, 2.5};
  EXPECT_THAT(pairs(UpArcs(j, 4, 0, 0.1)), ElementsAre(P{1, 3}));
  j.gbps = {5, 5, 5, 5};
  EXPECT_THAT(pairs(UpArcs(j, 4, 1, 0.1)), ElementsAre(P{0, 4}));
  j.gbps = {0, 0, 0, 0};
  EXPECT_TRUE(UpArcs(j, 4, 0, 0.1).empty());
}

TEST(DiagnosisTest, OnlyLinkAndErrors) {
  DiagnoseOptions only;
  only.only_link = "leaf2->spine2";
  absl::StatusOr<Diagnosis> d = Diagnose(Example(), "running", only);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->links.size(), 1u);
  EXPECT_EQ(d->links[0].id, "leaf2->spine2");
  EXPECT_EQ(d->jobs.size(), 5u);

  only.only_link = "nowhere";
  d = Diagnose(Example(), "", only);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(d.status().message(), "link 'nowhere' is not a contended link of candidate 'running'");

  d = Diagnose(Example(), "other");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(d.status().message(), "candidate 'other' is not in the input");

  placer::RankRequest two = Tiny();
  two.candidates.push_back(two.candidates[0]);
  two.candidates[1].id = "c2";
  d = Diagnose(two, "");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(),
            "candidates: exactly one placement is diagnosed, got 2 (name one)");
  EXPECT_TRUE(Diagnose(two, "c2").ok());

  placer::RankRequest unknown = Tiny();
  unknown.candidates[0].links["z"] = {{"l", 1.0}};
  d = Diagnose(unknown, "");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(), "candidate 'c': job 'z' is not defined");

  placer::RankRequest bad = Tiny();
  bad.links[0].capacity_gbps = -1;
  d = Diagnose(bad, "");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(), "links[0].capacity_gbps: must be > 0, got -1");

  DiagnoseOptions threshold;
  threshold.up_threshold = 1.5;
  EXPECT_EQ(Diagnose(Tiny(), "", threshold).status().message(),
            "up_threshold: must be in [0, 1), got 1.5");
}

TEST(DiagnosisTest, QuietLinksAndJobsWithoutContention) {
  placer::RankRequest r = Tiny();
  r.links.push_back({"spare", 40.0});
  r.candidates[0].links["a"]["spare"] = 0.5;
  absl::StatusOr<Diagnosis> d = Diagnose(r, "");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->quiet_links.size(), 1u);
  EXPECT_EQ(d->quiet_links[0].id, "spare");
  EXPECT_THAT(d->quiet_links[0].jobs, ElementsAre("a"));
  EXPECT_THAT(d->jobs[0].links, ElementsAre("l"));
}

}  // namespace
}  // namespace diagnosis_test
}  // namespace phasor::diagnose
