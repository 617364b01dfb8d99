// The joint solver against brute force: on small loops and pin sets every
// combination of the free jobs' shifts is enumerated and scored with the same
// objective (JointObjective, the sum of the links' normalised excesses).
#include "placer/joint_solver.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "placer/affinity_graph.h"
#include "placer/link_score.h"
#include "placer/shift_solver.h"
#include "placer/traffic_profile.h"

namespace phasor::placer {
namespace joint_solver_test {
namespace {

constexpr uint32_t kQ = 1000;

TrafficProfile RandomProfile(std::mt19937_64& rng, uint32_t bins) {
  std::uniform_real_distribution<double> unit(0, 1);
  TrafficProfile p;
  p.period_us = bins * kQ;
  p.bin_us = kQ;
  for (uint32_t k = 0; k < bins; ++k) p.gbps.push_back(unit(rng) < 0.5 ? 0.0 : 40 * unit(rng));
  p.gbps[rng() % bins] = 30;  // never idle throughout
  return p;
}

// A small candidate: jobs, links (each solved alone, exactly) and its graph.
struct Problem {
  std::vector<TrafficProfile> profiles;
  std::vector<std::optional<uint32_t>> pins;
  std::vector<std::vector<size_t>> link_jobs;
  double capacity = 40;
  std::vector<std::unique_ptr<SolvedLink>> solved;
  std::vector<JointLink> links;
  std::vector<JointJob> jobs;
  std::unique_ptr<AffinityGraph> graph;

  void Build() {
    for (size_t j = 0; j < profiles.size(); ++j) jobs.push_back({profiles[j].period_us, pins[j]});
    for (const std::vector<size_t>& on : link_jobs) {
      std::vector<LinkDemand> demands;
      std::vector<std::optional<uint32_t>> fixed;
      size_t pinned = 0;
      for (size_t j : on) pinned += pins[j].has_value();
      for (size_t j : on) {
        demands.push_back({&profiles[j], 1.0});
        fixed.push_back(pinned >= 2 ? pins[j] : std::nullopt);
      }
      solved.push_back(std::make_unique<SolvedLink>(
          *SolveLinkDemands(demands, capacity, fixed, CircleOptions{.quantum_us = kQ}, {})));
      JointLink link;
      link.circle = &solved.back()->circle;
      link.solution = &solved.back()->solution;
      link.capacity_gbps = capacity;
      link.jobs = on;
      link.gain = 1.0 - solved.back()->solution.score;  // any positive weight will do
      links.push_back(link);
    }
    graph = std::make_unique<AffinityGraph>(profiles.size(), link_jobs);
  }

  std::vector<int64_t> Start() const {
    std::vector<int64_t> t(profiles.size(), 0);
    for (size_t j = 0; j < pins.size(); ++j) t[j] = pins[j].value_or(0);
    return t;
  }

  // The minimum of the objective over every shift (multiples of the quantum
  // below each period) of the free jobs.
  double BruteForceMinimum(const AffinityGraph::Component& component) const {
    std::vector<size_t> free;
    for (size_t j : component.jobs) {
      if (!pins[j]) free.push_back(j);
    }
    std::vector<int64_t> t = Start();
    double best = std::numeric_limits<double>::infinity();
    std::function<void(size_t)> visit = [&](size_t i) {
      if (i == free.size()) {
        best = std::min(best, JointObjective(component, links, t));
        return;
      }
      for (int64_t s = 0; s < profiles[free[i]].period_us; s += kQ) {
        t[free[i]] = s;
        visit(i + 1);
      }
    };
    visit(0);
    return best;
  }

  double SumOfOwnOptima(const AffinityGraph::Component& component) const {
    double sum = 0;
    for (size_t l : component.links) {
      sum += links[l].solution->total_excess /
             (static_cast<double>(links[l].circle->bins) * links[l].capacity_gbps);
    }
    return sum;
  }
};

struct Tally {
  int trials = 0;
  int optimal_claims = 0;
  int at_brute_force_optimum = 0;
};

// Solves one problem and checks it against brute force; counts into `tally`.
void CheckAgainstBruteForce(Problem& p, Tally& tally, const std::string& label) {
  p.Build();
  ASSERT_EQ(p.graph->components().size(), 1u) << label;
  const AffinityGraph::Component& component = p.graph->components().front();
  std::vector<int64_t> shifts = p.Start();
  const JointResult result = SolveJoint(*p.graph, component, p.links, p.jobs, {}, shifts);
  EXPECT_FALSE(result.stopped) << label;
  const double found = JointObjective(component, p.links, shifts);
  const double brute = p.BruteForceMinimum(component);
  ++tally.trials;
  // Never better than the true minimum (the objective is the one it reports).
  EXPECT_GE(found, brute - 1e-12) << label;
  tally.at_brute_force_optimum += found <= brute + 1e-12;
  // Pins are kept and every shift lies in its period.
  for (size_t j : component.jobs) {
    if (p.pins[j]) {
      EXPECT_EQ(shifts[j], *p.pins[j]) << label << " job " << j;
    }
    EXPECT_GE(shifts[j], 0) << label;
    EXPECT_LT(shifts[j], p.profiles[j].period_us) << label;
  }
  // `optimal` is claimed exactly when every link sits at its own optimum,
  // and then it is the brute-force minimum.
  const bool every_link_at_optimum = std::abs(found - p.SumOfOwnOptima(component)) < 1e-9;
  EXPECT_EQ(result.optimal, every_link_at_optimum) << label;
  if (result.optimal) {
    ++tally.optimal_claims;
    EXPECT_NEAR(found, brute, 1e-9) << label;
  }
  // A local optimum: no single free job's shift lowers the objective (the
  // descent scans every shift on circles this small, until no job moves).
  for (size_t j : component.jobs) {
    if (p.pins[j]) continue;
    std::vector<int64_t> t = shifts;
    for (int64_t s = 0; s < p.profiles[j].period_us; s += kQ) {
      t[j] = s;
      EXPECT_GE(JointObjective(component, p.links, t), found - 1e-9) << label << " job " << j << " at " << s;
    }
  }
}

TEST(JointSolverTest, TrianglesMatchBruteForce) {
  std::mt19937_64 rng(11);
  static const uint32_t kPeriods[] = {4, 6, 8};
  Tally tally;
  for (int trial = 0; trial < 30; ++trial) {
    Problem p;
    for (int j = 0; j < 3; ++j) p.profiles.push_back(RandomProfile(rng, kPeriods[rng() % 3]));
    p.pins.assign(3, std::nullopt);
    p.link_jobs = {{0, 1}, {1, 2}, {0, 2}};
    CheckAgainstBruteForce(p, tally, "triangle " + std::to_string(trial));
  }
  EXPECT_EQ(tally.trials, 30);
  // On triangles this small the descent from the best spanning tree reaches
  // the true minimum every time.
  EXPECT_EQ(tally.at_brute_force_optimum, 30);
}

TEST(JointSolverTest, FourCyclesAndDoubleEdgesMatchBruteForce) {
  std::mt19937_64 rng(12);
  static const uint32_t kPeriods[] = {3, 4, 6};
  Tally tally;
  for (int trial = 0; trial < 20; ++trial) {
    Problem p;
    for (int j = 0; j < 4; ++j) p.profiles.push_back(RandomProfile(rng, kPeriods[rng() % 3]));
    p.pins.assign(4, std::nullopt);
    p.link_jobs = trial % 2 == 0 ? std::vector<std::vector<size_t>>{{0, 1}, {1, 2}, {2, 3}, {3, 0}}
                                 : std::vector<std::vector<size_t>>{{0, 1}, {0, 1}, {1, 2, 3}, {2, 3}};
    CheckAgainstBruteForce(p, tally, "loop " + std::to_string(trial));
  }
  EXPECT_EQ(tally.trials, 20);
  EXPECT_EQ(tally.at_brute_force_optimum, 20);
}

// Triangles of three jobs (periods of `bins` quanta), the first `pinned` of
// them pinned at random quanta, each checked against brute force.
Tally PinnedTriangles(uint64_t seed, uint32_t bins, size_t pinned, const std::string& label) {
  std::mt19937_64 rng(seed);
  Tally tally;
  for (int trial = 0; trial < 20; ++trial) {
    Problem p;
    for (int j = 0; j < 3; ++j) p.profiles.push_back(RandomProfile(rng, bins));
    p.pins.assign(3, std::nullopt);
    for (size_t j = 0; j < pinned; ++j) p.pins[j] = uint32_t(rng() % bins) * kQ;
    p.link_jobs = {{0, 1}, {1, 2}, {0, 2}};
    CheckAgainstBruteForce(p, tally, label + " " + std::to_string(trial));
  }
  return tally;
}

TEST(JointSolverTest, PinSetsMatchBruteForce) {
  // Jobs 0 and 1 pinned on one link; job 2 free, sharing a link with each.
  const Tally tally = PinnedTriangles(13, 6, 2, "pins");
  EXPECT_EQ(tally.trials, 20);
  // With one free job the full scan is the brute force itself.
  EXPECT_EQ(tally.at_brute_force_optimum, 20);
}

TEST(JointSolverTest, EveryJobPinnedKeepsThePinsProvenOptimal) {
  // A loop of running jobs whose shifts were committed: nothing moves
  // (CheckAgainstBruteForce: the brute force over no free job is the pins).
  // Each link, solved alone with two or more pinned jobs, keeps their pins
  // as its own optimum, so every link sits at it: proven optimal.
  const Tally tally = PinnedTriangles(15, 4, 3, "all pinned");
  EXPECT_EQ(tally.trials, 20);
  EXPECT_EQ(tally.at_brute_force_optimum, 20);
  EXPECT_EQ(tally.optimal_claims, 20);
}

TEST(JointSolverTest, ConsistentLoopIsProvenOptimal) {
  // Two jobs on two links with the same demands: both links agree on one
  // optimum, so the loop is harmless and the result is proven.
  Problem p;
  TrafficProfile a, b;
  a.period_us = b.period_us = 4 * kQ;
  a.bin_us = b.bin_us = kQ;
  a.gbps = {40, 40, 0, 0};
  b.gbps = {30, 30, 0, 0};
  p.profiles = {a, b};
  p.pins.assign(2, std::nullopt);
  p.link_jobs = {{0, 1}, {0, 1}};
  Tally tally;
  CheckAgainstBruteForce(p, tally, "consistent");
  EXPECT_EQ(tally.optimal_claims, 1);
}

TEST(JointSolverTest, StopsWhenOutOfTimeWithValidShifts) {
  std::mt19937_64 rng(14);
  Problem p;
  for (int j = 0; j < 3; ++j) p.profiles.push_back(RandomProfile(rng, 8));
  p.pins.assign(3, std::nullopt);
  p.link_jobs = {{0, 1}, {1, 2}, {0, 2}};
  p.Build();
  const AffinityGraph::Component& component = p.graph->components().front();
  // Find a problem the spanning trees alone do not solve, so the descent runs.
  std::vector<int64_t> shifts = p.Start();
  int asked = 0;
  const JointResult result =
      SolveJoint(*p.graph, component, p.links, p.jobs, {}, shifts, [&] { return ++asked >= 1; });
  if (result.optimal && asked == 0) GTEST_SKIP() << "the tree walk alone was optimal";
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(asked, 1);
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_GE(shifts[j], 0);
    EXPECT_LT(shifts[j], p.profiles[j].period_us);
  }
}

}  // namespace
}  // namespace joint_solver_test
}  // namespace phasor::placer
