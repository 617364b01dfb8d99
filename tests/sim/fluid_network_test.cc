#include "sim/fluid_network.h"

#include <memory>
#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace phasor::sim {
namespace fluid_network_test {
namespace {

using ::testing::HasSubstr;

// 500 MB at 50 Gbit/s: 80 ms.
constexpr double kVggBytes = 500e6;
constexpr double kVggComputeUs = 120000;

SimJob Job(std::string id, std::map<std::string, double> links, double start_us = 0,
           uint64_t iterations = 10) {
  SimJob job;
  job.id = std::move(id);
  job.compute_us = kVggComputeUs;
  job.comm_bytes = kVggBytes;
  job.nic_gbps = 50;
  job.links = std::move(links);
  job.iterations = iterations;
  job.start_us = start_us;
  return job;
}

TEST(FluidNetworkTest, LoneJobRunsAtItsIsolatedIterationTime) {
  FluidNetwork net({{"l1", 50}});
  ASSERT_TRUE(net.AddJob(Job("a", {{"l1", 1.0}}, 5000)).ok());
  net.RunToCompletion();
  const JobStats& a = net.job_stats()[0];
  ASSERT_TRUE(a.finished);
  ASSERT_EQ(a.iteration_us.size(), 10u);
  for (double t : a.iteration_us) EXPECT_NEAR(t, 200000, 1e-3);
  EXPECT_NEAR(a.finish_us, 5000 + 10 * 200000.0, 1e-2);
}

// A one-shot shift (Cassini's agents moving a running job): the iteration
// after the current one waits for the next slot anchor + n x period; later
// ones run free.
TEST(FluidNetworkTest, ShiftNextIterationDelaysOneIterationToTheSlot) {
  FluidNetwork net({{"l1", 50}});
  ASSERT_TRUE(net.AddJob(Job("a", {{"l1", 1.0}}, 0, 4)).ok());  // 200 ms iterations
  EXPECT_TRUE(net.AdvanceUntil(250000).empty());                // in its second iteration
  ASSERT_TRUE(net.ShiftNextIteration("a", 30000, 200000).ok());
  net.RunToCompletion();
  const JobStats& a = net.job_stats()[0];
  ASSERT_EQ(a.iteration_us.size(), 4u);
  EXPECT_NEAR(a.iteration_us[0], 200000, 1e-3);
  EXPECT_NEAR(a.iteration_us[1], 200000, 1e-3);
  EXPECT_NEAR(a.iteration_us[2], 230000, 1e-3);  // ends at 400 ms, waits for the slot at 430 ms
  EXPECT_NEAR(a.iteration_us[3], 200000, 1e-3);
  EXPECT_EQ(a.shifts, 1u);
  // A job whose first iteration has not started moves its start.
  FluidNetwork later({{"l1", 50}});
  ASSERT_TRUE(later.AddJob(Job("b", {{"l1", 1.0}}, 1000, 1)).ok());
  ASSERT_TRUE(later.ShiftNextIteration("b", 50000, 200000).ok());
  later.RunToCompletion();
  EXPECT_NEAR(later.job_stats()[0].start_us, 50000, 1e-6);
  EXPECT_NEAR(later.job_stats()[0].finish_us, 250000, 1e-3);
  EXPECT_EQ(later.ShiftNextIteration("b", 0, 200000).code(), absl::StatusCode::kNotFound);
  FluidNetwork bad({{"l1", 50}});
  ASSERT_TRUE(bad.AddJob(Job("c", {{"l1", 1.0}})).ok());
  EXPECT_THAT(std::string(bad.ShiftNextIteration("c", 0, 0).message()), HasSubstr("period_us must be > 0"));
}

TEST(FluidNetworkTest, NicCapBindsBelowTheLinkCapacity) {
  FluidNetwork net({{"l1", 100}});
  SimJob job = Job("a", {{"l1", 1.0}}, 0, 3);
  job.nic_gbps = 25;  // 500 MB at 25 Gbit/s: 160 ms
  ASSERT_TRUE(net.AddJob(job).ok());
  net.RunToCompletion();
  for (double t : net.job_stats()[0].iteration_us) EXPECT_NEAR(t, 280000, 1e-3);
}

TEST(FluidNetworkTest, BytesAreConserved) {
  FluidNetwork net({{"l1", 50}, {"l2", 40}, {"l3", 10}});
  ASSERT_TRUE(net.AddJob(Job("a", {{"l1", 1.0}, {"l2", 0.5}}, 0, 7)).ok());
  ASSERT_TRUE(net.AddJob(Job("b", {{"l1", 1.0}, {"l3", 0.25}}, 30000, 5)).ok());
  SimJob c = Job("c", {{"l2", 1.0}}, 1000, 4);
  c.comm_bytes = 123456789;
  ASSERT_TRUE(net.AddJob(c).ok());
  net.RunToCompletion();
  const auto& jobs = net.job_stats();
  EXPECT_NEAR(jobs[0].bytes_delivered, 7 * kVggBytes, 1);
  EXPECT_NEAR(jobs[1].bytes_delivered, 5 * kVggBytes, 1);
  EXPECT_NEAR(jobs[2].bytes_delivered, 4 * 123456789.0, 1);
  const std::vector<LinkStats> links = net.link_stats();
  EXPECT_NEAR(links[0].bytes, 12 * kVggBytes, 10);
  EXPECT_NEAR(links[1].bytes, 0.5 * 7 * kVggBytes + 4 * 123456789.0, 10);
  EXPECT_NEAR(links[2].bytes, 0.25 * 5 * kVggBytes, 10);
}

// Three flows on two links, by hand. l1 = 10, l2 = 20 Gbit/s; a crosses both,
// b only l1, c only l2. Progressive filling: l1 saturates first at 5 each
// (a, b frozen at 5); c then takes what a leaves on l2: 20 - 5 = 15.
TEST(FluidNetworkTest, MaxMinMatchesHandComputedThreeFlowsTwoLinks) {
  FluidNetwork net({{"l1", 10}, {"l2", 20}});
  SimJob a = Job("a", {{"l1", 1.0}, {"l2", 1.0}});
  SimJob b = Job("b", {{"l1", 1.0}});
  SimJob c = Job("c", {{"l2", 1.0}});
  for (SimJob* job : {&a, &b, &c}) {
    job->compute_us = 0;
    job->nic_gbps = 100;
    ASSERT_TRUE(net.AddJob(*job).ok());
  }
  net.AdvanceUntil(1);
  EXPECT_NEAR(net.CurrentRateGbps("a"), 5, 1e-9);
  EXPECT_NEAR(net.CurrentRateGbps("b"), 5, 1e-9);
  EXPECT_NEAR(net.CurrentRateGbps("c"), 15, 1e-9);
}

// Same links, but c is NIC-capped at 2 and a sends only half its flow over
// l1. Levels: c freezes at 2 (NIC); l1 holds 0.5a + b = 10 and l2 holds
// a + 2 = 20 at equal rates x: l1 gives x = 6.67, l2 gives x = 18, so a and b
// freeze at 20/3 and l2 ends with 20/3 + 2.
TEST(FluidNetworkTest, MaxMinMatchesHandComputedWithNicCapAndShares) {
  FluidNetwork net({{"l1", 10}, {"l2", 20}});
  SimJob a = Job("a", {{"l1", 0.5}, {"l2", 1.0}});
  SimJob b = Job("b", {{"l1", 1.0}});
  SimJob c = Job("c", {{"l2", 1.0}});
  a.nic_gbps = b.nic_gbps = 100;
  c.nic_gbps = 2;
  for (SimJob* job : {&a, &b, &c}) {
    job->compute_us = 0;
    ASSERT_TRUE(net.AddJob(*job).ok());
  }
  net.AdvanceUntil(1);
  EXPECT_NEAR(net.CurrentRateGbps("a"), 20.0 / 3, 1e-9);
  EXPECT_NEAR(net.CurrentRateGbps("b"), 20.0 / 3, 1e-9);
  EXPECT_NEAR(net.CurrentRateGbps("c"), 2, 1e-9);
}

// Rates follow flows as they start and end: b joins a on l1 (both at 5),
// c alone on l2 stays at its NIC cap; when b ends, a is back at 10.
TEST(FluidNetworkTest, RatesFollowFlowsStartingAndEnding) {
  FluidNetwork net({{"l1", 10}, {"l2", 20}});
  SimJob a = Job("a", {{"l1", 1.0}}, 0, 1);
  SimJob b = Job("b", {{"l1", 1.0}}, 100, 1);
  SimJob c = Job("c", {{"l2", 1.0}}, 0, 1);
  a.compute_us = b.compute_us = c.compute_us = 0;
  a.nic_gbps = b.nic_gbps = 100;
  c.nic_gbps = 12;
  a.comm_bytes = 10e9;  // 8 s at 10 Gbit/s
  b.comm_bytes = 1e6;   // 1.6 ms at 5 Gbit/s
  c.comm_bytes = 10e9;
  for (const SimJob* job : {&a, &b, &c}) ASSERT_TRUE(net.AddJob(*job).ok());
  net.AdvanceUntil(50);
  EXPECT_DOUBLE_EQ(net.CurrentRateGbps("a"), 10);
  EXPECT_DOUBLE_EQ(net.CurrentRateGbps("c"), 12);
  net.AdvanceUntil(200);
  EXPECT_DOUBLE_EQ(net.CurrentRateGbps("a"), 5);
  EXPECT_DOUBLE_EQ(net.CurrentRateGbps("b"), 5);
  EXPECT_DOUBLE_EQ(net.CurrentRateGbps("c"), 12);
  net.AdvanceUntil(3000);  // b has delivered its 8 Mbit
  EXPECT_DOUBLE_EQ(net.CurrentRateGbps("b"), 0);
  EXPECT_DOUBLE_EQ(net.CurrentRateGbps("a"), 10);
  EXPECT_DOUBLE_EQ(net.CurrentRateGbps("c"), 12);
}

// Two VGG19-like jobs on one 50 Gbit/s link (Up 80 ms of a 200 ms iteration).
// Offset by 100 ms their Up phases never meet; offset by 40 ms they overlap:
// the leader's Up takes 40 + 2 * 40 = 120 ms and both settle at
// 280 - 40 = 240 ms per iteration (the offset is preserved, see docs).
TEST(FluidNetworkTest, InterleavedJobsRunAtIsolatedSpeedOverlappingOnesDoNot) {
  {
    FluidNetwork net({{"l1", 50}});
    ASSERT_TRUE(net.AddJob(Job("a", {{"l1", 1.0}}, 0)).ok());
    ASSERT_TRUE(net.AddJob(Job("b", {{"l1", 1.0}}, 100000)).ok());
    net.RunToCompletion();
    for (const JobStats& job : net.job_stats()) {
      for (double t : job.iteration_us) EXPECT_NEAR(t, 200000, 1e-3);
    }
    EXPECT_EQ(net.link_stats()[0].overload_us, 0);
    EXPECT_EQ(net.link_stats()[0].excess_bytes, 0);
  }
  {
    FluidNetwork net({{"l1", 50}});
    ASSERT_TRUE(net.AddJob(Job("a", {{"l1", 1.0}}, 0)).ok());
    ASSERT_TRUE(net.AddJob(Job("b", {{"l1", 1.0}}, 40000)).ok());
    net.RunToCompletion();
    const auto& a = net.job_stats()[0].iteration_us;
    const auto& b = net.job_stats()[1].iteration_us;
    EXPECT_NEAR(a[0], 240000, 1e-3);  // Up from 120 to 240 ms
    EXPECT_NEAR(b[0], 240000, 1e-3);  // Up from 160 to 280 ms
    for (size_t i = 1; i + 1 < a.size(); ++i) EXPECT_NEAR(a[i], 240000, 1e-3) << i;
    // Overload: 80 ms per iteration while both send (each at 25 Gbit/s).
    const LinkStats l1 = net.link_stats()[0];
    EXPECT_GT(l1.overload_us, 9 * 80000 - 1);
    EXPECT_NEAR(l1.excess_bytes, l1.overload_us * 50e3 / 8, 1);
  }
}

TEST(FluidNetworkTest, PacedJobWaitsForItsNextSlot) {
  FluidNetwork net({{"l1", 50}});
  SimJob a = Job("a", {{"l1", 1.0}}, 1000, 4);
  a.pace_period_us = 250000;
  ASSERT_TRUE(net.AddJob(a).ok());
  net.RunToCompletion();
  const auto& t = net.job_stats()[0].iteration_us;
  EXPECT_NEAR(t[0], 200000, 1e-3);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i], 250000, 1e-3);
}

// a is paced at its isolated 200 ms; b's one iteration shares l1 with a's
// first Up phase, which ends at 240 ms, after a's second slot (200 ms).
std::vector<double> OverrunPaced(bool reslot, uint64_t* reslots) {
  FluidNetwork net({{"l1", 50}});
  SimJob a = Job("a", {{"l1", 1.0}}, 0, 4);
  a.pace_period_us = 200000;
  a.pace_reslot = reslot;
  EXPECT_TRUE(net.AddJob(a).ok());
  EXPECT_TRUE(net.AddJob(Job("b", {{"l1", 1.0}}, 40000, 1)).ok());
  net.RunToCompletion();
  *reslots = net.job_stats()[0].reslots;
  return net.job_stats()[0].iteration_us;
}

TEST(FluidNetworkTest, AnOverrunningPacedIterationReslotsInsteadOfLosingAPeriod) {
  uint64_t reslots = 0;
  std::vector<double> t = OverrunPaced(true, &reslots);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_NEAR(t[0], 240000, 1e-3);
  for (size_t i = 1; i < 4; ++i) EXPECT_NEAR(t[i], 200000, 1e-3) << i;  // grid re-anchored at 240 ms
  EXPECT_EQ(reslots, 1u);
  // Without re-slotting the job waits for its 400 ms slot: 160 ms lost.
  t = OverrunPaced(false, &reslots);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_NEAR(t[0], 240000, 1e-3);
  EXPECT_NEAR(t[1], 360000, 1e-3);
  EXPECT_NEAR(t[2], 200000, 1e-3);
  EXPECT_EQ(reslots, 0u);
}

// A lone job of 200 ms iterations whose intended period is `period_us`.
JobStats Realigned(double period_us, double min_interval_us) {
  FluidNetwork net({{"l1", 50}});
  SimJob a = Job("a", {{"l1", 1.0}}, 0, 7);
  a.realign_period_us = period_us;
  a.realign_anchor_us = 0;
  a.realign_threshold_us = 2000;
  a.realign_min_interval_us = min_interval_us;
  EXPECT_TRUE(net.AddJob(a).ok());
  net.RunToCompletion();
  return net.job_stats()[0];
}

TEST(FluidNetworkTest, TheClosedLoopHoldsBackAJobThatDriftedEarly) {
  // Intended 201 ms: the job gains 1 ms per iteration; at 600 ms it is 3 ms
  // early (> 2 ms) and waits 3 ms, again at 1203 ms.
  JobStats a = Realigned(201000, 0);
  EXPECT_EQ(a.realignments, 2u);
  const std::vector<double> expected = {200000, 200000, 200000, 203000, 200000, 200000, 203000};
  ASSERT_EQ(a.iteration_us.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(a.iteration_us[i], expected[i], 1e-3) << i;
  // At most one re-alignment per second.
  a = Realigned(201000, 1e6);
  EXPECT_EQ(a.realignments, 1u);
  EXPECT_NEAR(a.finish_us, 7 * 200000 + 3000, 1e-3);
  // A job drifting late is not held back most of a period (it would wait 199 ms).
  a = Realigned(199000, 0);
  EXPECT_EQ(a.realignments, 0u);
  EXPECT_NEAR(a.finish_us, 7 * 200000, 1e-3);
}

// The grid moved mid-run (as a commit re-records a running job): the job
// then runs on it.
TEST(FluidNetworkTest, SetRealignGridMovesTheClosedLoopsGrid) {
  auto lone = [] {
    auto net = std::make_unique<FluidNetwork>(std::vector<SimLink>{{"l1", 50}});
    SimJob a = Job("a", {{"l1", 1.0}}, 0, 7);
    a.realign_period_us = 201000;
    a.realign_threshold_us = 2000;
    a.realign_min_interval_us = 0;
    EXPECT_TRUE(net->AddJob(a).ok());
    return net;
  };
  // Re-anchored at 400 ms on its own 200 ms: never early again (the old
  // grid held it back at 600 and 1203 ms).
  std::unique_ptr<FluidNetwork> net = lone();
  net->AdvanceUntil(500000);
  ASSERT_TRUE(net->SetRealignGrid("a", 400000, 200000).ok());
  net->RunToCompletion();
  EXPECT_EQ(net->job_stats()[0].realignments, 0u);
  EXPECT_NEAR(net->job_stats()[0].finish_us, 7 * 200000, 1e-3);
  // Moved at 500 ms onto 200 ms slots 4 ms after its own phase: at 600 ms
  // it is 4 ms early and waits 4 ms, once; then it runs on the grid.
  net = lone();
  net->AdvanceUntil(500000);
  ASSERT_TRUE(net->SetRealignGrid("a", 4000, 200000).ok());
  net->RunToCompletion();
  EXPECT_EQ(net->job_stats()[0].realignments, 1u);
  EXPECT_NEAR(net->job_stats()[0].finish_us, 7 * 200000 + 4000, 1e-3);
  // A job without a closed loop keeps none; bad calls are named.
  FluidNetwork plain({{"l1", 50}});
  ASSERT_TRUE(plain.AddJob(Job("b", {{"l1", 1.0}}, 0, 7)).ok());
  plain.AdvanceUntil(100000);
  ASSERT_TRUE(plain.SetRealignGrid("b", 0, 201000).ok());
  plain.RunToCompletion();
  EXPECT_EQ(plain.job_stats()[0].realignments, 0u);
  EXPECT_EQ(plain.SetRealignGrid("zz", 0, 1000).code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(plain.SetRealignGrid("b", 0, 0).message()), HasSubstr("period_us must be > 0"));
}

TEST(FluidNetworkTest, AdvanceStopsWhenAJobCompletes) {
  FluidNetwork net({{"l1", 50}});
  ASSERT_TRUE(net.AddJob(Job("a", {{"l1", 1.0}}, 0, 2)).ok());
  ASSERT_TRUE(net.AddJob(Job("b", {{"l1", 1.0}}, 100000, 5)).ok());
  EXPECT_TRUE(net.AdvanceUntil(100).empty());
  EXPECT_EQ(net.now_us(), 100);
  EXPECT_THAT(net.AdvanceUntil(1e12), ::testing::ElementsAre("a"));
  EXPECT_NEAR(net.now_us(), 400000, 1e-3);
  EXPECT_EQ(net.running_jobs(), 1u);
  ASSERT_TRUE(net.RemoveJob("b").ok());
  EXPECT_EQ(net.running_jobs(), 0u);
  EXPECT_EQ(net.RemoveJob("b").code(), absl::StatusCode::kNotFound);
}

TEST(FluidNetworkTest, RecordsTheLoadSeriesOfALink) {
  FluidNetworkOptions options;
  options.record_links = {"l1"};
  options.record_from_us = 200000;
  options.record_to_us = 400000;
  FluidNetwork net({{"l1", 50}}, options);
  ASSERT_TRUE(net.AddJob(Job("a", {{"l1", 1.0}}, 0, 3)).ok());
  net.RunToCompletion();
  const auto& series = net.load_series("l1");
  // The window opens idle (compute of iteration 2), the Up phase runs from
  // 320 ms to the window's end at 400 ms.
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].time_us, 200000);
  EXPECT_EQ(series[0].gbps, 0);
  EXPECT_NEAR(series[1].time_us, 320000, 1e-3);
  EXPECT_EQ(series[1].gbps, 50);
}

TEST(FluidNetworkTest, RejectsBadLinksAndJobs) {
  EXPECT_THAT(std::string(FluidNetwork::ValidateLinks({{"l1", 0}}).message()),
              HasSubstr("links[0].capacity_gbps"));
  EXPECT_THAT(std::string(FluidNetwork::ValidateLinks({{"l1", 1}, {"l1", 2}}).message()),
              HasSubstr("links[1].id"));
  FluidNetwork net({{"l1", 50}});
  SimJob bad = Job("a", {{"nope", 1.0}});
  EXPECT_THAT(std::string(net.AddJob(bad).message()), HasSubstr("'nope' is not defined"));
  bad = Job("a", {{"l1", -0.5}});
  EXPECT_THAT(std::string(net.AddJob(bad).message()), HasSubstr("links['l1']: share -0.5"));
  bad = Job("a", {{"l1", 1.0}});
  bad.nic_gbps = 0;
  EXPECT_THAT(std::string(net.AddJob(bad).message()), HasSubstr("nic_gbps"));
  bad = Job("a", {{"l1", 1.0}});
  bad.iterations = 0;
  EXPECT_THAT(std::string(net.AddJob(bad).message()), HasSubstr("iterations"));
  bad = Job("a", {{"l1", 1.0}});
  bad.compute_us = -1;
  EXPECT_EQ(net.AddJob(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = Job("a", {{"l1", 1.0}});
  bad.realign_period_us = -1;
  EXPECT_THAT(std::string(net.AddJob(bad).message()), HasSubstr("jobs['a'].realign_period_us: must be >= 0"));
  bad = Job("a", {{"l1", 1.0}});
  bad.realign_max_wait_fraction = 1.5;
  EXPECT_THAT(std::string(net.AddJob(bad).message()), HasSubstr("realign_max_wait_fraction: must be in [0, 1]"));
  bad = Job("a", {{"l1", 1.0}});
  bad.realign_threshold_us = -1;
  EXPECT_THAT(std::string(net.AddJob(bad).message()), HasSubstr("realign_threshold_us: must be >= 0"));
  ASSERT_TRUE(net.AddJob(Job("a", {{"l1", 1.0}})).ok());
  EXPECT_THAT(std::string(net.AddJob(Job("a", {{"l1", 1.0}})).message()), HasSubstr("already"));
  net.AdvanceUntil(10);
  EXPECT_THAT(std::string(net.AddJob(Job("z", {{"l1", 1.0}}, 5)).message()),
              HasSubstr("start_us"));
}

}  // namespace
}  // namespace fluid_network_test
}  // namespace phasor::sim
