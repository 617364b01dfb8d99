// A generated workload of network-heavy data-parallel jobs with Poisson
// arrivals: the shape of Cassini's testbed experiment (Rajasekaran et al.,
// NSDI 2024, section 6: VGG-, ResNet-, BERT-, GPT-2- and DLRM-like jobs),
// replayed by sim::ReplayTrace (TraceReplayOptions::jobs).
//
// Each job draws (seeded) a model from `models`, a size from `gpus`, and an
// isolated run time log-normal (sigma 0.8) around `median_duration_s`,
// clipped to [0.2, 5] x the median. Inter-arrival times are exponential with
// the rate that offers `load` x the cluster's GPU-time:
//   rate = load x cluster_gpus / mean(gpus x duration) over the drawn jobs.
//
// A model is either measured (its catalogue name: the Pollux data's step and
// sync times, e.g. "bert", "imagenet" = ResNet-50) or gradient-size: compute
// time per iteration plus the bytes its ring all-reduce carries (a catalogue
// gradient size such as Tiresias' "vgg19", or given in the options).
//
// Pure function of its options; thread-safe.
#ifndef PHASOR_SIM_POISSON_WORKLOAD_H_
#define PHASOR_SIM_POISSON_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/model_catalog.h"
#include "sim/trace_replay.h"

namespace phasor::sim {

struct WorkloadModel {
  std::string name;       // the job's model (a catalogue name when measured)
  bool measured = false;  // true: the catalogue's measured timing of `name`
  // Gradient-size models: compute per iteration, and the gradient bytes
  // (0: the catalogue's gradient size of `name`).
  double compute_us = 0;
  double gradient_mb = 0;
};

// The default mix, one of each paper family. Measured: "bert" (BERT, Pollux,
// 4x T4 per node, 50 Gbit/s) and "imagenet" (ResNet-50, same). Gradient-size,
// compute time assumed (no public measurement of these on this hardware):
// "vgg19" (Tiresias' 547.1 MB, 110 ms compute), "gpt2" (GPT-2 small, 124 M
// fp32 parameters = 498 MB, 200 ms), "dlrm" (the all-reduce of a DLRM-like
// model's dense part only, 200 MB, 50 ms; its embedding all-to-all is not
// modelled).
std::vector<WorkloadModel> CassiniModels();

struct PoissonWorkloadOptions {
  uint64_t seed = 1;
  uint32_t jobs = 40;                                   // jobs to generate, >= 1
  double load = 0.9;                                    // offered GPU-time / cluster GPU-time, > 0
  uint32_t cluster_gpus = 24;                           // the cluster the load refers to, >= 1
  double median_duration_s = 600;                       // isolated run time, > 0
  std::vector<uint32_t> gpus = {2, 4, 6, 8};            // job sizes, drawn uniformly; each >= 1
  std::vector<WorkloadModel> models = CassiniModels();  // drawn uniformly; not empty
};

// InvalidArgument naming the field for a bad option; NotFound when a model is
// not in `catalog` (a measured one, or a gradient-size one without gradient_mb).
absl::StatusOr<std::vector<TraceJob>> GeneratePoissonWorkload(const PoissonWorkloadOptions& options,
                                                              const models::ModelCatalog& catalog);

}  // namespace phasor::sim

#endif  // PHASOR_SIM_POISSON_WORKLOAD_H_
