#include "models/model_catalog.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace phasor::models {
namespace {

std::vector<std::string> SplitCsv(absl::string_view line) {
  std::vector<std::string> out;
  for (absl::string_view cell : absl::StrSplit(line, ',')) {
    out.emplace_back(absl::StripAsciiWhitespace(cell));
  }
  return out;
}

}  // namespace

std::string CanonicalPlacement(const std::string& placement) {
  std::string out = placement;
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<ModelCatalog> ModelCatalog::Load(const std::string& dir) {
  namespace fs = std::filesystem;
  ModelCatalog catalog;
  std::error_code ec;
  const fs::path pollux = fs::path(dir) / "pollux";
  if (!fs::is_directory(pollux, ec)) {
    return absl::NotFoundError(absl::StrCat("model data: no folder '", pollux.string(), "'"));
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(pollux, ec)) {
    const fs::path file = entry.path() / "placements.csv";
    if (!fs::is_regular_file(file, ec)) continue;
    std::ifstream in(file);
    std::string line;
    if (!std::getline(in, line)) {
      return absl::InvalidArgumentError(absl::StrCat(file.string(), ":1: empty file"));
    }
    const std::vector<std::string> header = SplitCsv(line);
    int placement_col = -1, bsz_col = -1, step_col = -1, sync_col = -1;
    for (size_t c = 0; c < header.size(); ++c) {
      if (header[c] == "placement") placement_col = static_cast<int>(c);
      if (header[c] == "local_bsz") bsz_col = static_cast<int>(c);
      if (header[c] == "step_time") step_col = static_cast<int>(c);
      if (header[c] == "sync_time") sync_col = static_cast<int>(c);
    }
    if (placement_col < 0 || bsz_col < 0 || step_col < 0 || sync_col < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          file.string(), ":1: header needs placement, local_bsz, step_time, sync_time"));
    }
    auto& model = catalog.measured_[entry.path().filename().string()];
    int number = 1;
    while (std::getline(in, line)) {
      ++number;
      if (absl::StripAsciiWhitespace(line).empty()) continue;
      const std::vector<std::string> cells = SplitCsv(line);
      Row row;
      const size_t need = static_cast<size_t>(
          std::max({placement_col, bsz_col, step_col, sync_col}));
      if (cells.size() <= need || cells[placement_col].empty() ||
          cells[placement_col].find_first_not_of("0123456789") != std::string::npos ||
          !absl::SimpleAtoi(cells[bsz_col], &row.local_bsz) ||
          !absl::SimpleAtod(cells[step_col], &row.step_s) ||
          !absl::SimpleAtod(cells[sync_col], &row.sync_s) || !(row.step_s > 0) ||
          !(row.sync_s >= 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat(file.string(), ":", number, ": malformed row '", line, "'"));
      }
      row.placement = cells[placement_col];
      // A few rows measure a sync longer than the step (overlap): cap it.
      row.sync_s = std::min(row.sync_s, row.step_s);
      model[CanonicalPlacement(row.placement)].push_back(row);
    }
  }
  if (catalog.measured_.empty()) {
    return absl::NotFoundError(absl::StrCat("model data: no placements.csv under '",
                                            pollux.string(), "'"));
  }
  const fs::path sizes = fs::path(dir) / "tiresias_model_tensor_sizes_MB.csv";
  if (fs::is_regular_file(sizes, ec)) {
    std::ifstream in(sizes);
    std::string line;
    std::getline(in, line);
    int number = 1;
    while (std::getline(in, line)) {
      ++number;
      const std::vector<std::string> cells = SplitCsv(line);
      double total_mb = 0;
      if (cells.size() < 3 || !absl::SimpleAtod(cells[2], &total_mb) || !(total_mb > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat(sizes.string(), ":", number, ": malformed row"));
      }
      catalog.gradient_bytes_[cells[0]] = total_mb * 1e6;
    }
  }
  return catalog;
}

std::vector<std::string> ModelCatalog::MeasuredModels() const {
  std::vector<std::string> out;
  for (const auto& [name, unused] : measured_) out.push_back(name);
  return out;
}

absl::StatusOr<ModelTiming> ModelCatalog::Lookup(const std::string& model,
                                                 const std::string& placement,
                                                 std::optional<uint32_t> local_bsz) const {
  auto it = measured_.find(model);
  if (it == measured_.end()) {
    return absl::NotFoundError(absl::StrCat("model '", model, "' is not among the measured models"));
  }
  if (placement.empty() || placement.find_first_not_of("123456789") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement '", placement, "': one digit 1-9 per node expected"));
  }
  const std::string canonical = CanonicalPlacement(placement);
  const size_t nodes = canonical.size();
  double sync_scale = 1;
  auto rows = it->second.find(canonical);
  if (rows == it->second.end()) {
    // Unmeasured: the measured placement with the most nodes whose GPUs per
    // node are the largest digit of the request, else the largest of all.
    const char per_node = canonical.back();
    const std::vector<Row>* best = nullptr;
    std::string best_key;
    for (const auto& [key, candidate] : it->second) {
      const bool uniform = key.find_first_not_of(per_node) == std::string::npos;
      if (!uniform) continue;
      if (best == nullptr || key.size() > best_key.size()) {
        best = &candidate;
        best_key = key;
      }
    }
    if (best == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("model '", model, "' has no measurement for placement '", placement, "'"));
    }
    rows = it->second.find(best_key);
    const double m = static_cast<double>(best_key.size());
    const double n = static_cast<double>(nodes);
    if (m > 1 && n > 1) sync_scale = ((n - 1) / n) / ((m - 1) / m);
  }
  const Row* chosen = nullptr;
  for (const Row& row : rows->second) {
    if (local_bsz.has_value()) {
      if (row.local_bsz == *local_bsz) chosen = &row;
    } else if (chosen == nullptr || row.local_bsz < chosen->local_bsz) {
      chosen = &row;
    }
  }
  if (chosen == nullptr) {
    return absl::NotFoundError(absl::StrCat("model '", model, "' placement '", placement,
                                            "' has no measurement with local_bsz ", *local_bsz));
  }
  ModelTiming timing;
  timing.placement = chosen->placement;
  timing.local_bsz = chosen->local_bsz;
  timing.sync_us = chosen->sync_s * 1e6 * sync_scale;
  timing.compute_us = (chosen->step_s - chosen->sync_s) * 1e6;
  timing.comm_bytes = nodes > 1 ? timing.sync_us * kMeasuredNicGbps * 1e3 / 8 : 0;
  return timing;
}

absl::StatusOr<double> ModelCatalog::GradientBytes(const std::string& model) const {
  auto it = gradient_bytes_.find(model);
  if (it == gradient_bytes_.end()) {
    return absl::NotFoundError(absl::StrCat("model '", model, "' has no gradient size"));
  }
  return it->second;
}

placer::TrafficProfile JobProfile(double compute_us, double comm_bytes, double nic_gbps,
                                  uint32_t round_up_to_us) {
  const uint32_t compute = static_cast<uint32_t>(std::llround(compute_us));
  const double comm_us = comm_bytes * 8 / (nic_gbps * 1e3);
  const uint32_t up = std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(comm_us - 1e-9)));
  uint32_t period = compute + up;
  if (round_up_to_us > 0) period = (period + round_up_to_us - 1) / round_up_to_us * round_up_to_us;
  placer::TrafficProfile profile;
  profile.period_us = period;
  profile.square = placer::SquareWave{.up_us = up, .up_gbps = nic_gbps, .start_us = compute % period, .down_gbps = 0};
  return profile;
}

}  // namespace phasor::models
