// libFuzzer target: Slurm topology.conf (the tree plugin's format) on
// arbitrary text. Every input gives a Status or a fabric, never a crash or a
// host list expanded past kMaxNodes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "topology/slurm_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<phasor::topology::Topology> t =
      phasor::topology::ParseSlurmTopology(text, phasor::topology::SlurmImportOptions{}, "fuzz.conf");
  if (t.ok() && t->nodes().size() > phasor::topology::kMaxNodes) std::abort();
  return 0;
}
