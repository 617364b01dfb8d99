// libFuzzer target: the RoCEv2 parser and the flow counter on arbitrary
// frames. The parser must classify every input without reading past it
// (AddressSanitizer checks) and RoCE results must be self-consistent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "probe/roce_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into an exact-size heap buffer so that ASan sees any overread.
  std::vector<uint8_t> frame(data, data + size);
  const uint32_t wire = size >= 2 ? static_cast<uint32_t>(size + data[0]) : 0;
  const phasor::probe::RoceInfo info = phasor::probe::ParseRoce(frame.data(), frame.size(), wire);
  if (static_cast<int>(info.kind) >= phasor::probe::kPacketKinds) std::abort();
  if (info.kind == phasor::probe::PacketKind::kRoce) {
    if (info.key.dest_qp > 0xffffff || info.psn > 0xffffff) std::abort();
    if (info.frame_bytes < wire) std::abort();
    // snapped: fewer bytes captured than the headers claim.
    if (info.snapped && frame.size() >= info.frame_bytes) std::abort();
  }
  return 0;
}
