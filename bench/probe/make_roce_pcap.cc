// Writes a synthetic RoCEv2 capture for the end-to-end benchmark:
//   probe_make_pcap FILE PACKETS [FRAME_BYTES=256] [FLOWS=64]
// Packets 0.1 us apart (10 Mpps of capture time), flows round-robin.
#include <cstdio>
#include <cstdlib>

#include "probe/packet_builder.h"
#include "probe/pcap_file.h"

int main(int argc, char** argv) {
  using namespace phasor::probe;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FILE PACKETS [FRAME_BYTES] [FLOWS]\n", argv[0]);
    return 2;
  }
  const long packets = std::atol(argv[2]);
  const int frame = argc > 3 ? std::atoi(argv[3]) : 256;
  const int flows = argc > 4 ? std::atoi(argv[4]) : 64;
  if (packets <= 0 || frame < 60 || flows <= 0) {
    std::fprintf(stderr, "bad PACKETS, FRAME_BYTES (>= 60) or FLOWS\n");
    return 2;
  }
  auto w = PcapWriter::Create(argv[1]);
  if (!w.ok()) {
    std::fprintf(stderr, "%s\n", std::string(w.status().message()).c_str());
    return 1;
  }
  std::vector<std::vector<uint8_t>> frames;
  for (int f = 0; f < flows; ++f) {
    FrameSpec s;
    s.dest_qp = 0x100 + f;
    s.payload_bytes = frame - 54;
    frames.push_back(BuildFrame(s));
  }
  const int64_t t0 = 1'700'000'000'000'000;
  for (long i = 0; i < packets; ++i) {
    if (!(*w)->Write(t0 + i / 10, frames[i % flows]).ok()) return 1;
  }
  return (*w)->Close().ok() ? 0 : 1;
}
