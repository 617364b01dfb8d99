// libFuzzer target: topology YAML (docs/topology.md) on arbitrary text. Every
// input gives a Status or a fabric within the ranges of topology.h, never a
// crash or an exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "topology/topology_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<phasor::topology::Topology> t = phasor::topology::ParseTopologyYaml(text, "fuzz.yaml");
  if (!t.ok()) return 0;
  for (const auto& link : t->links()) {
    if (!(link.capacity_gbps >= phasor::topology::kMinLinkGbps &&
          link.capacity_gbps <= phasor::topology::kMaxLinkGbps)) {
      std::abort();
    }
  }
  // What the loader reads back, it writes and reads again: for fabrics of
  // modest size (a legal k = 62 fat tree has ~180,000 links, and writing and
  // re-reading its YAML under ASan outlasts bench/fuzz.sh's 25 s timeout).
  if (t->links().size() > 20000) return 0;
  if (!phasor::topology::ParseTopologyYaml(phasor::topology::ToYaml(*t), "again.yaml").ok()) std::abort();
  return 0;
}
