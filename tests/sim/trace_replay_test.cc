#include "sim/trace_replay.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/model_catalog.h"
#include "sim/host_scheduler.h"
#include "sim/poisson_workload.h"

namespace phasor::sim {
namespace trace_replay_test {
namespace {

using ::testing::HasSubstr;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("phasor_sim_test_" + name)).string();
  std::ofstream(path) << text;
  return path;
}

SchedulingRound TwoRacks() {
  SchedulingRound round;
  for (int i = 1; i <= 4; ++i) {
    round.servers.push_back({absl::StrCat("s", i), i <= 2 ? "leaf1" : "leaf2", 4, 4});
  }
  return round;
}

TEST(HostSchedulerTest, ConsolidateFirstPacksInOneRackAndBackfills) {
  auto scheduler = MakeReferenceScheduler("consolidate", nullptr);
  ASSERT_TRUE(scheduler.ok());
  SchedulingRound round = TwoRacks();
  round.servers[0].free_gpus = 1;  // s1 nearly full
  round.pending = {{"big", "bert", 8, 0, 1e6}, {"huge", "bert", 64, 0, 1e6},
                   {"small", "bert", 1, 0, 1e6}};
  auto candidates = (*scheduler)->Propose(round, 1);
  ASSERT_TRUE(candidates.ok());
  ASSERT_EQ(candidates->size(), 1u);
  const auto& c = (*candidates)[0].servers;
  // 8 GPUs cannot fit in leaf1 (s1 has 1 free): leaf2's two servers.
  EXPECT_THAT(c.at("big"), ::testing::ElementsAre("s3", "s3", "s3", "s3", "s4", "s4", "s4", "s4"));
  EXPECT_FALSE(c.contains("huge"));  // never fits; later jobs still run (backfill)
  EXPECT_THAT(c.at("small"), ::testing::ElementsAre("s1"));  // best fit
}

TEST(HostSchedulerTest, ThemisOrdersByFinishTimeFairnessAndOffersSeveralCandidates) {
  auto scheduler = MakeReferenceScheduler("themis", nullptr);
  ASSERT_TRUE(scheduler.ok());
  SchedulingRound round = TwoRacks();
  round.now_us = 100e6;
  // Both want 12 of the 16 GPUs: only one can run. "short" waited 90 s for a
  // 10 s job (rho 10), "long" 100 s for a 1000 s job (rho 1.1): short wins.
  round.pending = {{"long", "bert", 12, 0, 1000e6}, {"short", "bert", 12, 10e6, 10e6}};
  auto candidates = (*scheduler)->Propose(round, 4);
  ASSERT_TRUE(candidates.ok());
  ASSERT_GE(candidates->size(), 2u);
  for (const CandidateAllocation& c : *candidates) {
    EXPECT_TRUE(c.servers.contains("short"));
    EXPECT_FALSE(c.servers.contains("long"));
  }
  EXPECT_NE((*candidates)[0].servers, (*candidates)[1].servers);
}

TEST(HostSchedulerTest, PolluxPicksTheShapeWithTheBestMeasuredStep) {
  absl::StatusOr<ModelCatalog> models = ModelCatalog::Load("data/models");
  ASSERT_TRUE(models.ok());
  auto scheduler = MakeReferenceScheduler("pollux", &*models);
  ASSERT_TRUE(scheduler.ok());
  SchedulingRound round = TwoRacks();
  round.pending = {{"j", "cifar10", 4, 0, 1e6}};
  auto candidates = (*scheduler)->Propose(round, 1);
  ASSERT_TRUE(candidates.ok());
  ASSERT_EQ(candidates->size(), 1u);
  // The shape the measurements favour among "4", "22" and "1111".
  const std::string placement = PlacementString((*candidates)[0].servers.at("j"));
  double best = 1e18;
  std::string best_shape;
  for (const char* shape : {"4", "22", "1111"}) {
    absl::StatusOr<ModelTiming> t = models->Lookup("cifar10", shape);
    ASSERT_TRUE(t.ok());
    if (t->compute_us + t->sync_us < best) {
      best = t->compute_us + t->sync_us;
      best_shape = shape;
    }
  }
  EXPECT_EQ(placement, best_shape);
  EXPECT_EQ(MakeReferenceScheduler("slurm", nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostSchedulerTest, PlacementStringCountsGpusPerServerInOrder) {
  EXPECT_EQ(PlacementString({"s2", "s2", "s1", "s2", "s3"}), "311");
  EXPECT_EQ(PlacementString({}), "");
}

TEST(TraceTest, LoadsPhillyAndPolluxTracesSortedByArrival) {
  const std::string philly = WriteTemp("philly.csv",
                                       "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                       "2017-10-09 07:01:55,66.0,1,66.0,x\n"
                                       "2017-10-09 06:13:03,2951.0,8,2951.0,y\n");
  TraceLoadOptions options;
  options.models = {"bert", "ncf"};
  auto jobs = LoadTrace(philly, options);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].gpus, 8u);
  EXPECT_EQ((*jobs)[0].arrival_us, 0);
  EXPECT_EQ((*jobs)[1].arrival_us, (48 * 60 + 52) * 1e6);  // 07:01:55 - 06:13:03
  EXPECT_EQ((*jobs)[0].duration_s, 2951);
  const std::string pollux = WriteTemp("pollux.csv",
                                       "name,time,application,num_replicas,batch_size\n"
                                       "b,200,bert,4,32\na,107,cifar10,6,2048\n");
  jobs = LoadTrace(pollux, options);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].id, "a");
  EXPECT_EQ((*jobs)[0].model, "cifar10");
  EXPECT_EQ((*jobs)[1].arrival_us, 93e6);
  EXPECT_GE((*jobs)[0].duration_s, 0.2 * 600);
  EXPECT_LE((*jobs)[0].duration_s, 5 * 600);
}

TEST(TraceTest, RejectsMalformedTraces) {
  TraceLoadOptions options;
  options.models = {"bert"};
  EXPECT_THAT(std::string(LoadTrace(WriteTemp("bad1.csv", "a,b\n1,2\n"), options).status().message()),
              HasSubstr(":1: unknown trace header"));
  EXPECT_THAT(std::string(LoadTrace(WriteTemp("bad2.csv",
                                              "timestamp,duration,num_gpus\nyesterday,1,1\n"),
                                    options)
                              .status()
                              .message()),
              HasSubstr(":2: timestamp"));
  EXPECT_THAT(std::string(LoadTrace(WriteTemp("bad3.csv",
                                              "name,time,application,num_replicas\nx,1,bert,0\n"),
                                    options)
                              .status()
                              .message()),
              HasSubstr(":2: num_replicas: '0' is not a GPU count in 1..65536"));
  EXPECT_EQ(LoadTrace("/nonexistent.csv", options).status().code(), absl::StatusCode::kNotFound);
}

// Regression (sim_inputs_fuzz): a Philly row with an infinite duration and a
// GPU count over 2^32 loaded as a job of 4290967297 GPUs running forever.
TEST(TraceTest, RegressionFieldsOutOfRangeNameTheField) {
  TraceLoadOptions options;
  options.models = {"bert"};
  auto error = [&](const char* name, const char* text) {
    return std::string(LoadTrace(WriteTemp(name, text), options).status().message());
  };
  EXPECT_THAT(error("r1.csv", "timestamp,duration,num_gpus\n2017-10-09 07:01:55,1e400,1\n"),
              HasSubstr(":2: duration: '1e400' is not a number of seconds in 0..3.1536e+07"));
  EXPECT_THAT(error("r2.csv", "timestamp,duration,num_gpus\n2017-10-09 07:01:55,5,4290967297\n"),
              HasSubstr(":2: num_gpus: '4290967297' is not a GPU count in 1..65536"));
  EXPECT_THAT(error("r3.csv", "timestamp,duration,num_gpus\n2017-10-09 07:01:55,-1,2\n"),
              HasSubstr(":2: duration: '-1'"));
  EXPECT_THAT(error("r4.csv", "name,time,application,num_replicas\nx,1e300,bert,2\n"),
              HasSubstr(":2: time: '1e300' is not a number of seconds in 0..1e+09"));
  EXPECT_THAT(error("r5.csv", "name,time,application,num_replicas\nx,nan,bert,2\n"), HasSubstr(":2: time: 'nan'"));
  // The bounds themselves are valid.
  absl::StatusOr<std::vector<TraceJob>> edge =
      LoadTrace(WriteTemp("r6.csv", "timestamp,duration,num_gpus\n2017-10-09 07:01:55,31536000,65536\n"), options);
  ASSERT_TRUE(edge.ok()) << edge.status().message();
  EXPECT_EQ((*edge)[0].gpus, 65536u);
  EXPECT_EQ((*edge)[0].duration_s, 31536000);
}

TEST(TraceTest, LoadsItp2021TracesPlainOrGzip) {
  TraceLoadOptions options;
  options.models = {"bert", "ncf"};
  const std::string plain = WriteTemp("itp.csv",
                                      "job_id,submission_time,duration,num_gpu\n"
                                      "j2,5016,2066,8\r\n"
                                      "j1,5010,1265.5,1\n");
  auto jobs = LoadTrace(plain, options);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "itp-j1");
  EXPECT_EQ((*jobs)[0].arrival_us, 0);
  EXPECT_EQ((*jobs)[0].duration_s, 1265.5);
  EXPECT_EQ((*jobs)[0].gpus, 1u);
  EXPECT_EQ((*jobs)[1].id, "itp-j2");
  EXPECT_EQ((*jobs)[1].arrival_us, 6e6);
  EXPECT_EQ((*jobs)[1].gpus, 8u);
  EXPECT_TRUE((*jobs)[1].model == "bert" || (*jobs)[1].model == "ncf");
  // The bundled real trace, gzip-compressed and unsorted, read as it is.
  jobs = LoadTrace("data/traces/itp2021/cluster01.csv.gz", options);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1595u);
  EXPECT_EQ((*jobs)[0].id, "itp-965d744f-0445-c1a8-12af-97e4c536c66e");
  EXPECT_EQ((*jobs)[0].gpus, 64u);
  EXPECT_EQ((*jobs)[0].duration_s, 2429);
  EXPECT_EQ((*jobs)[1].arrival_us, (2000581 - 1932025) * 1e6);
  EXPECT_EQ(jobs->back().arrival_us, (4848400 - 1932025) * 1e6);
  options.max_gpus = 8;
  options.max_jobs = 10;
  jobs = LoadTrace("data/traces/itp2021/cluster01.csv.gz", options);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->size(), 10u);
  EXPECT_EQ((*jobs)[0].id, "itp-fb10987f-20ac-3703-eb67-146a77a6e17c");
}

TEST(TraceTest, RejectsBadItp2021RowsNamingTheFieldAndRow) {
  TraceLoadOptions options;
  options.models = {"bert"};
  const std::string header = "job_id,submission_time,duration,num_gpu\nok,1,10,1\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a,-1,10,1", ":3: submission_time: '-1' is not a number of seconds in 0..1e+09"},
      {"a,soon,10,1", ":3: submission_time: 'soon' is not a number of seconds in 0..1e+09"},
      {"a,1,0,1", ":3: duration: '0': a job runs for some time"},
      {"a,1,nan,1", ":3: duration: 'nan' is not a number of seconds in 0..3.1536e+07"},
      {"a,1,4e7,1", ":3: duration: '4e7' is not a number of seconds in 0..3.1536e+07"},
      {"a,1,10,0", ":3: num_gpu: '0' is not a GPU count in 1..65536"},
      {"a,1,10,2.5", ":3: num_gpu: '2.5' is not a GPU count in 1..65536"},
      {"a,1,10,100001", ":3: num_gpu: '100001' is not a GPU count in 1..65536"},
      {",1,10,1", ":3: job_id: empty"},
      {"a,1,10", ":3: expected 4 fields, found 3"},
  };
  for (const auto& [row, message] : cases) {
    const absl::StatusOr<std::vector<TraceJob>> jobs =
        LoadTrace(WriteTemp("itp_bad.csv", header + row + "\n"), options);
    EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument) << row;
    EXPECT_THAT(std::string(jobs.status().message()), HasSubstr(message)) << row;
  }
  // A gzip header followed by garbage.
  const std::string corrupt = WriteTemp("itp_bad.csv.gz", std::string("\x1f\x8b\x08\x00garbage", 11));
  EXPECT_THAT(std::string(LoadTrace(corrupt, options).status().message()), HasSubstr("corrupt gzip"));
}

// Two 12-GPU deepspeech2 jobs (measured "444": Up is 33% of the iteration) on
// 3 leaves of 2 servers: consolidation puts one on leaf1 + 1 server of leaf2,
// the other on leaf2's other server + leaf3, so both rings cross leaf2's
// links to the spines (2:1 oversubscribed: 25 Gbit/s, each job alone fills
// it). Both arrive together; without the plugin they start together and
// collide; with it the placer's shifts interleave their Up phases.
TEST(TraceReplayTest, PluginRemovesCollisionsOnASharedUplink) {
  const std::string trace = WriteTemp("two_jobs.csv",
                                      "name,time,application,num_replicas,batch_size\n"
                                      "a,0,deepspeech2,12,32\nb,0,deepspeech2,12,32\n");
  TraceReplayOptions options;
  options.trace_path = trace;
  options.models_dir = "data/models";
  options.scheduler = "consolidate";
  options.fabric = "leaf-spine:6:2:2";
  options.workload_median_duration_s = 60;
  options.top_k = 1;
  options.plugin = false;
  absl::StatusOr<TraceReport> off = ReplayTrace(options);
  ASSERT_TRUE(off.ok()) << off.status();
  options.plugin = true;
  absl::StatusOr<TraceReport> on = ReplayTrace(options);
  ASSERT_TRUE(on.ok()) << on.status();
  ASSERT_EQ(off->jobs.size(), 2u);
  ASSERT_EQ(on->jobs.size(), 2u);
  EXPECT_TRUE(off->jobs[0].networked);
  EXPECT_EQ(off->jobs[0].placement, "444");
  EXPECT_EQ(off->servers, 6u);
  EXPECT_EQ(off->gpus, 24u);
  EXPECT_GT(off->iteration_slowdown.mean, 1.05);
  EXPECT_GT(off->excess_bytes, 0);
  EXPECT_NEAR(on->iteration_slowdown.p99, 1.0, 0.01);
  EXPECT_LT(on->excess_bytes, off->excess_bytes / 10);
  EXPECT_EQ(on->ranked_rounds, 1u);
  // The noise control: plugin off, each networked job starts after a seeded
  // random delay under its period (the same seed gives the same delays).
  options.plugin = false;
  options.random_start = true;
  absl::StatusOr<TraceReport> control = ReplayTrace(options);
  ASSERT_TRUE(control.ok()) << control.status();
  ASSERT_EQ(control->jobs.size(), 2u);
  for (const TraceJobResult& j : control->jobs) {
    EXPECT_GT(j.start_us, 0) << j.id;
    EXPECT_LT(j.start_us, j.isolated_iteration_us) << j.id;
  }
  EXPECT_NE(control->jobs[0].start_us, control->jobs[1].start_us);
  EXPECT_EQ(TraceReportToJson(*control)["plugin"], "random");
  EXPECT_EQ(ReplayTrace(options)->jobs[1].start_us, control->jobs[1].start_us);
  const nlohmann::ordered_json json = TraceReportToJson(*on);
  EXPECT_EQ(json["plugin"], "on");
  EXPECT_EQ(json["jobs_completed"], 2);
  EXPECT_TRUE(json["jct_s"].contains("p99"));
}

// Two jobs "a" and "b" of the catalogue's gradient model ("grad": 150 MB of
// gradients per iteration), alike but for their arrivals.
std::vector<TraceJob> GradientPair(uint32_t gpus, double compute_us, double duration_s, double a_arrival_us,
                                   double b_arrival_us) {
  TraceJob a{.id = "a", .arrival_us = a_arrival_us, .gpus = gpus, .model = "grad", .duration_s = duration_s,
             .compute_us = compute_us, .gradient_bytes = 150e6};
  TraceJob b = a;
  b.id = "b";
  b.arrival_us = b_arrival_us;
  return {a, b};
}

// Two generated 3-GPU jobs on 3 leaves of 2 one-GPU servers: consolidation
// puts a on s1, s2 + s3 and b on s4 + s5, s6, so both rings cross leaf2's
// spine links. a arrives at 0.5 s (its iterations of 72 ms then end at
// 32 ms modulo 72 ms, not at the solver's shift 0), b at 10 s.
TraceReplayOptions TwoGradientJobs() {
  TraceReplayOptions options;
  options.models_dir = "data/models";
  options.scheduler = "consolidate";
  options.fabric = "leaf-spine:6:2:2:1";
  options.top_k = 2;
  options.jobs = GradientPair(3, 40000, 60, 0.5e6, 10e6);
  return options;
}

// The closed loop with phasord's commit modelled (realign_regrid): a and b
// (Up 62 % of each iteration: they cannot interleave) share leaf2's spine
// links and drift; when c's round is ranked at 20 s, their grids move to
// the phases they hold and their measured periods, so the loop stops pulling
// them back to the slots they were planned on: fewer corrections, and the
// two stay where they drifted to, colliding more.
TEST(TraceReplayTest, RegridReanchorsRunningJobsWhereTheyAre) {
  TraceReplayOptions options = TwoGradientJobs();
  options.fabric = "leaf-spine:8:2:2:1";
  options.jobs = GradientPair(3, 20000, 60, 0.5e6, 10e6);
  TraceJob c = options.jobs[1];
  c.id = "c";
  c.gpus = 2;
  c.arrival_us = 20e6;  // on leaf4's two free servers: a ranked round, no shared link
  options.jobs.push_back(c);
  options.realign = true;
  options.realign_threshold_us = 0;
  options.realign_min_interval_s = 0;
  options.start_delay_min_gain = -1;  // every new job starts at its slot, with a grid
  absl::StatusOr<TraceReport> first_grid = ReplayTrace(options);
  ASSERT_TRUE(first_grid.ok()) << first_grid.status();
  options.realign_regrid = true;
  absl::StatusOr<TraceReport> regrid = ReplayTrace(options);
  ASSERT_TRUE(regrid.ok()) << regrid.status();
  auto slowdown = [](const TraceReport& r, const std::string& id) {
    for (const auto& j : r.jobs) {
      if (j.id == id) return j.slowdown;
    }
    return 0.0;
  };
  EXPECT_GT(first_grid->realignments, 0u);
  EXPECT_LT(regrid->realignments, first_grid->realignments);
  for (const char* id : {"a", "b"}) {
    EXPECT_GT(slowdown(*first_grid, id), 1.1) << id;
    EXPECT_GT(slowdown(*regrid, id), slowdown(*first_grid, id)) << id;
  }
  EXPECT_EQ(slowdown(*regrid, "c"), 1);
}

// Cassini mode is phasor's path with options: once mode whatever `pace`
// says, no re-alignment, running jobs not pinned but shifted.
TEST(TraceReplayTest, CassiniModeShiftsRunningJobsAndNeverRealigns) {
  TraceReplayOptions options = TwoGradientJobs();
  options.realign = true;
  options.realign_threshold_us = 0;
  options.realign_min_interval_s = 0;
  absl::StatusOr<TraceReport> phasor = ReplayTrace(options);
  ASSERT_TRUE(phasor.ok()) << phasor.status();
  const TraceReplayOptions cassini_options = CassiniMode(options);
  EXPECT_FALSE(cassini_options.realign);
  EXPECT_FALSE(cassini_options.pin_running);
  EXPECT_TRUE(cassini_options.ranking_policy.discard_loops);
  EXPECT_LT(cassini_options.ranking_policy.min_gain, 0);
  options.pace = true;  // ignored by Cassini mode
  absl::StatusOr<TraceReport> cassini = ReplayTrace(CassiniMode(options));
  ASSERT_TRUE(cassini.ok()) << cassini.status();
  ASSERT_EQ(phasor->jobs.size(), 2u);
  ASSERT_EQ(cassini->jobs.size(), 2u);
  EXPECT_EQ(phasor->jobs[0].placement, "111");
  EXPECT_TRUE(phasor->jobs[0].networked);
  EXPECT_EQ(phasor->plugin_label, "on");
  EXPECT_EQ(cassini->plugin_label, "cassini");
  EXPECT_FALSE(cassini->pace);
  EXPECT_EQ(cassini->reslots, 0u);
  EXPECT_EQ(cassini->realignments, 0u);
  // phasor pins the running job a; Cassini moves it to the solver's slot.
  EXPECT_EQ(phasor->running_shifts, 0u);
  EXPECT_EQ(cassini->running_shifts, 1u);
  EXPECT_EQ(TraceReportToJson(*cassini)["plugin"], "cassini");
  EXPECT_EQ(TraceReportToJson(*cassini)["running_shifts"], 1);
}

TEST(TraceReplayTest, CompareModesRunsOffCassiniAndPhasorOnTheSameJobs) {
  absl::StatusOr<ModeComparison> c = CompareModes(TwoGradientJobs());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->off.plugin_label, "off");
  EXPECT_EQ(c->cassini.plugin_label, "cassini");
  EXPECT_EQ(c->phasor.plugin_label, "on");
  EXPECT_GT(c->off.excess_bytes, 0);
  EXPECT_LT(c->phasor.excess_bytes, c->off.excess_bytes);
  const nlohmann::ordered_json json = ModeComparisonToJson(*c);
  EXPECT_EQ(json["modes"], nlohmann::ordered_json({"off", "cassini", "phasor"}));
  EXPECT_EQ(json["gain_over_off"]["phasor"]["jct_mean"],
            c->off.jct_s.mean / c->phasor.jct_s.mean);
  EXPECT_THAT(ModeComparisonTable(*c), HasSubstr("iteration slowdown p99"));
}

// The second noise control: durations times a seeded factor in [1-F, 1+F].
std::vector<TraceJob> ThreeJobs() {
  return {{.id = "a", .arrival_us = 0, .gpus = 2, .model = "cifar10", .duration_s = 100},
          {.id = "b", .arrival_us = 1e6, .gpus = 2, .model = "cifar10", .duration_s = 200},
          {.id = "c", .arrival_us = 2e6, .gpus = 4, .model = "cifar10", .duration_s = 1.001}};
}

TEST(DurationJitterTest, ZeroLeavesJobsUntouchedAndOtherwiseStaysWithinTheBound) {
  std::vector<TraceJob> jobs = ThreeJobs();
  ASSERT_TRUE(ApplyDurationJitter(0, 6, jobs).ok());
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].duration_s, ThreeJobs()[i].duration_s);

  ASSERT_TRUE(ApplyDurationJitter(0.01, 6, jobs).ok());
  // Exact factors of seed 6 (FNV-1a of the id, SplitMix64): the same on every platform.
  EXPECT_DOUBLE_EQ(jobs[0].duration_s, 100 * 1.0043048830502326);
  EXPECT_DOUBLE_EQ(jobs[1].duration_s, 200 * 0.9945851457942901);
  EXPECT_EQ(jobs[2].duration_s, 1.0);  // 1.001 x 0.9939: LoadTrace's floor of 1 s
  for (size_t i = 0; i < 2; ++i) {
    const double factor = jobs[i].duration_s / ThreeJobs()[i].duration_s;
    EXPECT_GE(factor, 0.99) << i;
    EXPECT_LE(factor, 1.01) << i;
    EXPECT_NE(factor, 1.0) << i;
    EXPECT_EQ(jobs[i].arrival_us, ThreeJobs()[i].arrival_us);
  }
  // Deterministic per seed; another seed draws other factors.
  std::vector<TraceJob> again = ThreeJobs(), other = ThreeJobs();
  ASSERT_TRUE(ApplyDurationJitter(0.01, 6, again).ok());
  ASSERT_TRUE(ApplyDurationJitter(0.01, 8, other).ok());
  EXPECT_EQ(again[0].duration_s, jobs[0].duration_s);
  EXPECT_EQ(again[1].duration_s, jobs[1].duration_s);
  EXPECT_NE(other[0].duration_s, jobs[0].duration_s);

  for (double bad : {-0.01, 0.51, std::nan("")}) {
    const absl::Status status = ApplyDurationJitter(bad, 6, jobs);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()), HasSubstr("duration_jitter: ")) << bad;
  }
}

// In a replay the jittered durations are what runs (one-server jobs run
// exactly their duration), every mode alike; F = 0 is the run without it.
TEST(DurationJitterTest, ReplayRunsTheJitteredDurationsInEveryMode) {
  TraceReplayOptions options;
  options.models_dir = "data/models";
  options.scheduler = "consolidate";
  options.fabric = "leaf-spine:2:1:2";
  options.jobs = ThreeJobs();
  options.seed = 6;
  options.plugin = false;
  absl::StatusOr<TraceReport> plain = ReplayTrace(options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  options.duration_jitter = 0;
  options.duration_jitter_seed = 3;
  absl::StatusOr<TraceReport> zero = ReplayTrace(options);
  ASSERT_TRUE(zero.ok()) << zero.status();
  nlohmann::ordered_json plain_json = TraceReportToJson(*plain), zero_json = TraceReportToJson(*zero);
  plain_json.erase("wall_s");
  zero_json.erase("wall_s");
  EXPECT_EQ(plain_json.dump(), zero_json.dump());
  EXPECT_FALSE(zero_json.contains("duration_jitter"));

  options.duration_jitter = 0.01;
  options.duration_jitter_seed = 0;  // --seed's factors
  std::vector<TraceJob> expected = ThreeJobs();
  ASSERT_TRUE(ApplyDurationJitter(0.01, 6, expected).ok());
  for (bool plugin : {false, true}) {
    options.plugin = plugin;
    absl::StatusOr<TraceReport> jittered = ReplayTrace(options);
    ASSERT_TRUE(jittered.ok()) << jittered.status();
    ASSERT_EQ(jittered->jobs.size(), 3u);
    for (const TraceJobResult& j : jittered->jobs) {  // in completion order
      const size_t i = static_cast<size_t>(j.id[0] - 'a');
      ASSERT_LT(i, 3u) << j.id;
      EXPECT_FALSE(j.networked);
      EXPECT_NEAR((j.finish_us - j.start_us) / 1e6, expected[i].duration_s, 1e-6) << j.id;
      EXPECT_EQ(j.arrival_us, expected[i].arrival_us) << j.id;
    }
    const nlohmann::ordered_json json = TraceReportToJson(*jittered);
    EXPECT_EQ(json["duration_jitter"]["fraction"], 0.01);
    EXPECT_EQ(json["duration_jitter"]["seed"], 6);
  }
  // A targeted factor after the jitter; a bad one names the job.
  options.duration_factors = {{"b", 0.5}};
  absl::StatusOr<TraceReport> targeted = ReplayTrace(options);
  ASSERT_TRUE(targeted.ok()) << targeted.status();
  for (const TraceJobResult& j : targeted->jobs) {
    if (j.id == "b") {
      EXPECT_NEAR((j.finish_us - j.start_us) / 1e6, expected[1].duration_s * 0.5, 1e-6);
    }
  }
  options.duration_factors = {{"b", 0}};
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()),
              HasSubstr("duration_factors[b]: 0 is not a factor in (0, 10]"));
  options.duration_factors = {{"zz", 0.5}};
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()), HasSubstr("duration_factors[zz]: no job of that id"));
  options.duration_factors.clear();
  options.duration_jitter = 0.6;
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()),
              HasSubstr("duration_jitter: 0.6 is not a fraction in [0, 0.5]"));
}

TEST(PoissonWorkloadTest, OffersTheLoadWithTheModelMix) {
  absl::StatusOr<ModelCatalog> models = ModelCatalog::Load("data/models");
  ASSERT_TRUE(models.ok()) << models.status();
  PoissonWorkloadOptions options;
  options.jobs = 400;
  options.load = 0.5;
  options.cluster_gpus = 24;
  absl::StatusOr<std::vector<TraceJob>> jobs = GeneratePoissonWorkload(options, *models);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 400u);
  EXPECT_EQ(jobs->front().arrival_us, 0);
  double gpu_s = 0;
  std::map<std::string, int> per_model;
  for (size_t i = 0; i < jobs->size(); ++i) {
    const TraceJob& j = (*jobs)[i];
    if (i > 0) {
      EXPECT_GE(j.arrival_us, (*jobs)[i - 1].arrival_us);
    }
    gpu_s += j.gpus * j.duration_s;
    ++per_model[j.model];
    EXPECT_TRUE(j.gpus == 2 || j.gpus == 4 || j.gpus == 6 || j.gpus == 8) << j.gpus;
    if (j.model == "vgg19") {
      EXPECT_DOUBLE_EQ(j.gradient_bytes, 547.1e6);  // the catalogue's
    }
    if (j.model == "bert") {
      EXPECT_EQ(j.gradient_bytes, 0);  // measured timing
    }
  }
  EXPECT_EQ(per_model.size(), 5u);
  // Offered load = GPU-time / (cluster GPUs x span); the span of n Poisson
  // arrivals is n-1 mean gaps, so it is near (not exactly) the target.
  const double span_s = jobs->back().arrival_us / 1e6;
  EXPECT_NEAR(gpu_s / (24 * span_s), 0.5, 0.05);
  EXPECT_EQ(GeneratePoissonWorkload(options, *models)->back().arrival_us, jobs->back().arrival_us);
  options.load = 0;
  EXPECT_THAT(std::string(GeneratePoissonWorkload(options, *models).status().message()),
              HasSubstr("workload.load: 0 must be > 0"));
  options.load = 1;
  options.models = {{.name = "nosuch", .measured = true, .compute_us = 0, .gradient_mb = 0}};
  EXPECT_EQ(GeneratePoissonWorkload(options, *models).status().code(), absl::StatusCode::kNotFound);
}

// Any host scheduler behind the seam drives a replay: this one places every
// job on the first server with enough free GPUs and counts its rounds.
class FirstFitHost final : public host_scheduler::HostSchedulerAdapter {
 public:
  std::string_view name() const override { return "first-fit"; }
  absl::StatusOr<std::vector<host_scheduler::CandidateAllocation>> Propose(
      const host_scheduler::SchedulingRound& round, uint32_t k) override {
    ++calls;
    last_k = k;
    host_scheduler::CandidateAllocation c;
    c.id = "first-fit";
    std::map<std::string, uint32_t> free;
    for (const host_scheduler::ServerView& s : round.servers) free[s.id] = s.free_gpus;
    for (const host_scheduler::PendingJob& job : round.pending) {
      for (const host_scheduler::ServerView& s : round.servers) {
        if (free[s.id] >= job.gpus) {
          free[s.id] -= job.gpus;
          c.servers[job.id] = std::vector<std::string>(job.gpus, s.id);
          break;
        }
      }
    }
    if (c.servers.empty()) return std::vector<host_scheduler::CandidateAllocation>{};
    return std::vector<host_scheduler::CandidateAllocation>{c};
  }
  int calls = 0;
  uint32_t last_k = 0;
};

TEST(TraceReplayTest, TakesAnyHostSchedulerBehindTheSeam) {
  const std::string trace = WriteTemp("seam.csv",
                                      "name,time,application,num_replicas,batch_size\n"
                                      "a,0,bert,4,32\nb,10,bert,4,32\nc,10,bert,2,32\n");
  FirstFitHost host;
  TraceReplayOptions options;
  options.trace_path = trace;
  options.models_dir = "data/models";
  options.host = &host;
  options.scheduler = "not-used";  // the injected host replaces the reference policy
  options.fabric = "leaf-spine:2:2:2";
  options.workload_median_duration_s = 60;
  options.top_k = 3;
  absl::StatusOr<TraceReport> report = ReplayTrace(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->scheduler, "first-fit");
  ASSERT_EQ(report->jobs.size(), 3u);
  EXPECT_EQ(report->jobs[0].placement, "4");  // a on s1
  EXPECT_EQ(report->jobs[1].placement, "4");  // b on s2
  EXPECT_FALSE(report->jobs[2].networked);    // c waits for a server with 2 free
  EXPECT_EQ(report->ranked_rounds, 0u);       // one-server jobs load no link
  EXPECT_EQ(host.last_k, 3u);
  EXPECT_GE(host.calls, 3);
}

// A host that proposes fixed candidates per pending job (for the rounds of
// a scripted replay): job -> candidates, each the job's GPU servers.
class ScriptedHost final : public host_scheduler::HostSchedulerAdapter {
 public:
  explicit ScriptedHost(std::map<std::string, std::vector<std::vector<std::string>>> script)
      : script_(std::move(script)) {}
  std::string_view name() const override { return "scripted"; }
  absl::StatusOr<std::vector<host_scheduler::CandidateAllocation>> Propose(
      const host_scheduler::SchedulingRound& round, uint32_t k) override {
    std::vector<host_scheduler::CandidateAllocation> out;
    if (round.pending.empty()) return out;
    const std::string& job = round.pending.front().id;
    for (const std::vector<std::string>& servers : script_.at(job)) {
      if (out.size() == k) break;
      host_scheduler::CandidateAllocation c;
      c.id = absl::StrCat(job, "#", out.size());
      c.servers[job] = servers;
      out.push_back(std::move(c));
    }
    return out;
  }

 private:
  std::map<std::string, std::vector<std::vector<std::string>>> script_;
};

// Two 2-GPU gradient jobs on 8 servers of 2 GPUs (4 leaves of 2): a runs on
// s1 + s3; b may join it there (candidate 0: the free halves, sharing a's
// NICs; its Up phase is 70 % of its iteration, so the two cannot
// interleave) or take s5 + s7 (candidate 1: no shared link, two whole
// servers fewer left free).
TraceReplayOptions PackingScenario(ScriptedHost* host) {
  TraceReplayOptions options;
  options.models_dir = "data/models";
  options.host = host;
  options.fabric = "leaf-spine:8:2:2:2";
  options.top_k = 2;
  options.jobs = GradientPair(2, 10000, 30, 0, 1e6);
  options.own_candidates = 0;  // the host's candidates only (phasor's own: OwnCandidates* below)
  return options;
}

TEST(TraceReplayTest, KeepPackingDropsCandidatesThatLeaveFewerWholeServers) {
  ScriptedHost host({{"a", {{"s1", "s3"}}}, {"b", {{"s1", "s3"}, {"s5", "s7"}}}});
  TraceReplayOptions options = PackingScenario(&host);
  EXPECT_TRUE(options.ranking_policy.keep_packing);  // the default
  absl::StatusOr<TraceReport> kept = ReplayTrace(options);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->packing_dropped, 1u);
  EXPECT_EQ(kept->overtaken_rounds, 0u);
  EXPECT_EQ(TraceReportToJson(*kept)["packing_dropped"], 1);
  options.ranking_policy.keep_packing = false;
  absl::StatusOr<TraceReport> spread = ReplayTrace(options);
  ASSERT_TRUE(spread.ok()) << spread.status();
  EXPECT_EQ(spread->packing_dropped, 0u);
  EXPECT_EQ(spread->overtaken_rounds, 1u);  // the prediction prefers the whole servers
  ASSERT_EQ(spread->contested.size(), 1u);
  EXPECT_EQ(spread->contested[0].chosen, "1");
  for (const TraceJobResult& j : spread->jobs) EXPECT_DOUBLE_EQ(j.slowdown, 1.0) << j.id;
  // Cassini mode ranks every candidate.
  EXPECT_FALSE(CassiniMode(PackingScenario(&host)).ranking_policy.keep_packing);
}

// A running job's profile as its links see it: 10 ms of compute, then 5 ms
// of Up at 50 Gbit/s alone (31.25 MB); its last iterations took longer.
TEST(MeasuredProfileTest, TheRecentIterationsSetThePeriodAndTheBytesFillTheLongerUpPhase) {
  const placer::TrafficProfile isolated = models::JobProfile(10000, 31.25e6, 50, 0);
  ASSERT_EQ(isolated.period_us, 15000u);
  auto same = [](const placer::TrafficProfile& a, const placer::TrafficProfile& b) {
    return a.period_us == b.period_us && a.square.has_value() && b.square.has_value() &&
           a.square->up_us == b.square->up_us && a.square->up_gbps == b.square->up_gbps &&
           a.square->start_us == b.square->start_us;
  };
  EXPECT_TRUE(same(MeasuredProfile(isolated, {}), isolated));              // not iterated yet
  EXPECT_TRUE(same(MeasuredProfile(isolated, {15000, 15005}), isolated));  // within 0.1 % of alone
  const placer::TrafficProfile slowed = MeasuredProfile(isolated, {15000, 20000, 20000});
  EXPECT_EQ(slowed.period_us, 18334u);  // mean 18333.3 us: compute 10000 + Up 8333.3, rounded up
  ASSERT_TRUE(slowed.square.has_value());
  EXPECT_EQ(slowed.square->start_us, 10000u);
  EXPECT_EQ(slowed.square->up_us, 8334u);
  EXPECT_NEAR(slowed.square->up_gbps, 30.0, 1e-9);  // the same 31.25 MB over 8.33 ms
  // Only the last eight iterations count: an early slow one is forgotten.
  std::vector<double> history(8, 20000);
  history.insert(history.begin(), 90000);
  EXPECT_EQ(MeasuredProfile(isolated, history).period_us, 20000u);
  // phasor ranks running jobs so by default; Cassini mode with the catalogue's profiles.
  EXPECT_TRUE(TraceReplayOptions{}.measured_running_profiles);
  EXPECT_FALSE(CassiniMode(TraceReplayOptions{}).measured_running_profiles);
}

// The same rule one level up, where every server has one GPU (so every
// candidate leaves as many whole free servers): 12 servers in 3 leaves of 4,
// uplinks 4:1. a runs across leaves 1 and 2 (s1 + s5); b may take the free
// servers beside it (candidate 0: s2 + s6, sharing a's uplinks; leaf 3 stays
// whole) or two servers of leaf 3 (candidate 1: no uplink at all, but no
// whole leaf is left for the next job that needs one).
TEST(TraceReplayTest, KeepPackingDropsCandidatesThatLeaveFewerWholeLeaves) {
  ScriptedHost host({{"a", {{"s1", "s5"}}}, {"b", {{"s2", "s6"}, {"s9", "s10"}}}});
  TraceReplayOptions options = PackingScenario(&host);
  options.fabric = "leaf-spine:12:4:4:1";
  absl::StatusOr<TraceReport> kept = ReplayTrace(options);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->packing_dropped, 1u);
  EXPECT_EQ(kept->overtaken_rounds, 0u);
  ASSERT_EQ(kept->jobs.size(), 2u);
  options.ranking_policy.keep_packing = false;
  absl::StatusOr<TraceReport> spread = ReplayTrace(options);
  ASSERT_TRUE(spread.ok()) << spread.status();
  EXPECT_EQ(spread->packing_dropped, 0u);
  EXPECT_EQ(spread->overtaken_rounds, 1u);  // leaf 3 crosses no uplink: the prediction prefers it
  ASSERT_EQ(spread->contested.size(), 1u);
  EXPECT_EQ(spread->contested[0].chosen, "1");
}

// b shares only spine links with a, at 1:2 oversubscription (each spine link
// carries both Up phases at once): its shifts buy nothing, so it starts on
// arrival instead of waiting for its slot.
TEST(TraceReplayTest, ANewJobWaitsForItsSlotOnlyWhenTheShiftsGain) {
  ScriptedHost host({{"a", {{"s1", "s3"}}}, {"b", {{"s2", "s4"}}}});
  TraceReplayOptions options = PackingScenario(&host);
  options.fabric = "leaf-spine:8:0.5:2:2";
  options.top_k = 1;
  EXPECT_EQ(options.start_delay_min_gain, 0);  // the default
  absl::StatusOr<TraceReport> at_once = ReplayTrace(options);
  ASSERT_TRUE(at_once.ok()) << at_once.status();
  EXPECT_EQ(at_once->ranked_rounds, 2u);  // a alone, then b beside it
  EXPECT_EQ(at_once->undelayed_starts, 1u);
  EXPECT_EQ(at_once->excess_bytes, 0);
  for (const TraceJobResult& j : at_once->jobs) EXPECT_EQ(j.start_us, j.arrival_us) << j.id;
  options.start_delay_min_gain = -1;  // every shifted job waits (as before; Cassini)
  absl::StatusOr<TraceReport> waits = ReplayTrace(options);
  ASSERT_TRUE(waits.ok()) << waits.status();
  EXPECT_EQ(waits->undelayed_starts, 0u);
  EXPECT_LT(CassiniMode(options).start_delay_min_gain, 0);
  // With a's NICs shared (the packing scenario's candidate 0) the shifts gain: b waits.
  ScriptedHost shared({{"a", {{"s1", "s3"}}}, {"b", {{"s1", "s3"}}}});
  options = PackingScenario(&shared);
  options.top_k = 1;
  absl::StatusOr<TraceReport> gains = ReplayTrace(options);
  ASSERT_TRUE(gains.ok()) << gains.status();
  EXPECT_EQ(gains->undelayed_starts, 0u);
}

TEST(TraceReplayTest, RejectsBadOptions) {
  TraceReplayOptions options;
  options.trace_path = "data/traces/pollux_workload-1.csv";
  options.scheduler = "fifo";
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()), HasSubstr("scheduler 'fifo'"));
  options.scheduler = "themis";
  options.fabric = "torus:3";
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()), HasSubstr("--fabric"));
  options.fabric = "leaf-spine:8";
  options.top_k = 0;
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()), HasSubstr("--top-k"));
  options.top_k = 4;
  options.fabric = "leaf-spine:8:2:4:0";
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()),
              HasSubstr("is not leaf-spine:N[:OVERSUB[:PER_LEAF[:GPUS 1..9]]]"));
  options.fabric = "leaf-spine:8";
  options.arrival_scale = 0;
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()), HasSubstr("arrival_scale: 0 must be > 0"));
  options.arrival_scale = 1;
  options.duration_scale = -1;
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()), HasSubstr("duration_scale: -1 must be > 0"));
  options.duration_scale = 1;
  options.trace_path.clear();
  EXPECT_THAT(std::string(ReplayTrace(options).status().message()),
              HasSubstr("trace_path: no trace file and no generated jobs"));
  TraceReplayOptions generated = TwoGradientJobs();
  std::swap(generated.jobs[0], generated.jobs[1]);
  EXPECT_THAT(std::string(ReplayTrace(generated).status().message()),
              HasSubstr("jobs[1].arrival_us: before the previous job's"));
  generated = TwoGradientJobs();
  generated.jobs[0].compute_us = -1;
  EXPECT_THAT(std::string(ReplayTrace(generated).status().message()), HasSubstr("jobs[0].compute_us"));
}

}  // namespace
}  // namespace trace_replay_test
}  // namespace phasor::sim
