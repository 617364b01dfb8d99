// Per-model iteration timings from real measurements, so a job description
// can name a model and a placement instead of raw numbers.
//
// Sources (copied into data/models/, attribution in data/README.md):
//   - pollux/<model>/placements.csv (petuum/adaptdl): measured step_time and
//     sync_time (seconds) per placement and local batch size on AWS
//     g4dn.12xlarge (4x T4 per node, 50 Gbit/s). A placement is a digit
//     string, one digit per node = GPUs on that node ("44" = 2 nodes x 4).
//   - tiresias_model_tensor_sizes_MB.csv (SymbioticLab/Tiresias): gradient
//     tensor sizes of vgg/resnet/inception/alexnet models.
//
// How a measured job becomes a fluid job: Down = step_time - sync_time; the
// Up phase carries the bytes that take sync_time at the measured NIC rate
// (50 Gbit/s), so a job alone in the simulator runs at exactly its measured
// step time. A gradient-size model has no measured timing: its Up bytes per
// server are the ring all-reduce's 2(n-1)/n x gradient bytes on n servers and
// its compute time must be given.
//
// Placements not measured (more than 4 nodes) take the measured placement
// with the most nodes and the same GPUs per node, its sync time scaled by the
// ring factor ((n-1)/n) / ((m-1)/m). A single-node placement has no network
// traffic in the simulator (NVLink/PCIe), whatever its sync_time.
//
// Immutable after Load; thread-safe.
#ifndef PHASOR_MODELS_MODEL_CATALOG_H_
#define PHASOR_MODELS_MODEL_CATALOG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "placer/traffic_profile.h"

namespace phasor::models {

// The NIC rate of the measurement cluster (g4dn.12xlarge).
inline constexpr double kMeasuredNicGbps = 50;

struct ModelTiming {
  std::string placement;      // the measured placement used
  uint32_t local_bsz = 0;
  double compute_us = 0;      // step_time - sync_time
  double sync_us = 0;         // sync_time (scaled for unmeasured placements)
  double comm_bytes = 0;      // bytes that take sync_us at kMeasuredNicGbps (0 on one node)
};

class ModelCatalog {
 public:
  // Reads `dir`/pollux/<model>/placements.csv for every model folder and, if
  // present, `dir`/tiresias_model_tensor_sizes_MB.csv. NotFound when `dir`
  // has no pollux models; InvalidArgument "<file>:<line>: <what>" for a
  // malformed file.
  static absl::StatusOr<ModelCatalog> Load(const std::string& dir);

  // Measured models, sorted.
  std::vector<std::string> MeasuredModels() const;

  // The timing of `model` on `placement` (GPUs per node, e.g. "44"; order of
  // nodes does not matter) with `local_bsz` (default: the smallest measured
  // for that placement). NotFound naming what is missing.
  absl::StatusOr<ModelTiming> Lookup(const std::string& model, const std::string& placement,
                                     std::optional<uint32_t> local_bsz = std::nullopt) const;

  // Gradient bytes per iteration of a gradient-size model (e.g. "vgg19").
  absl::StatusOr<double> GradientBytes(const std::string& model) const;

 private:
  struct Row {
    std::string placement;  // as measured
    uint32_t local_bsz = 0;
    double step_s = 0;
    double sync_s = 0;
  };
  // model -> sorted placement digits -> rows
  std::map<std::string, std::map<std::string, std::vector<Row>>> measured_;
  std::map<std::string, double> gradient_bytes_;
};

// "1414" -> "1144": the canonical form of a placement (digits sorted).
std::string CanonicalPlacement(const std::string& placement);

// The square-wave profile of a job as phasor sees it: period = compute +
// comm time at the NIC rate (rounded up to `round_up_to_us` when > 0), Up
// at the NIC rate from compute_us on.
placer::TrafficProfile JobProfile(double compute_us, double comm_bytes, double nic_gbps,
                                  uint32_t round_up_to_us = 0);

}  // namespace phasor::models

#endif  // PHASOR_MODELS_MODEL_CATALOG_H_
