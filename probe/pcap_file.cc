#include "probe/pcap_file.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace phasor::probe {
namespace {

constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;

uint32_t Get32(const uint8_t* p, bool swapped) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swapped ? __builtin_bswap32(v) : v;
}

void Put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void Put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

}  // namespace

PcapReader::PcapReader(std::FILE* file, std::string path, PcapHeader header)
    : file_(file), path_(std::move(path)), header_(header) {}

PcapReader::~PcapReader() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::StatusOr<std::unique_ptr<PcapReader>> PcapReader::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("pcap file '", path, "': ", std::strerror(errno)));
  }
  uint8_t raw[24];
  if (std::fread(raw, 1, sizeof(raw), file) != sizeof(raw)) {
    std::fclose(file);
    return absl::InvalidArgumentError(
        absl::StrCat("pcap file '", path, "': shorter than the 24-byte global header"));
  }
  PcapHeader header;
  uint32_t magic;
  std::memcpy(&magic, raw, 4);
  if (magic == kMagicMicro || magic == kMagicNano) {
    header.swapped = false;
  } else if (__builtin_bswap32(magic) == kMagicMicro || __builtin_bswap32(magic) == kMagicNano) {
    header.swapped = true;
    magic = __builtin_bswap32(magic);
  } else {
    std::fclose(file);
    return absl::InvalidArgumentError(
        absl::StrCat("pcap file '", path, "': bad magic 0x", absl::Hex(magic),
                     " (not a classic pcap file; pcapng is not supported)"));
  }
  header.nanosecond = magic == kMagicNano;
  header.snaplen = Get32(raw + 16, header.swapped);
  header.link_type = Get32(raw + 20, header.swapped) & 0x0fffffff;
  if (header.link_type != kLinkTypeEthernet) {
    std::fclose(file);
    return absl::InvalidArgumentError(absl::StrCat("pcap file '", path, "': link type ",
                                                   header.link_type, " is not Ethernet (1)"));
  }
  return std::unique_ptr<PcapReader>(new PcapReader(file, path, header));
}

absl::StatusOr<bool> PcapReader::Next(PacketView* packet) {
  uint8_t rec[16];
  const size_t got = std::fread(rec, 1, sizeof(rec), file_);
  if (got == 0 && std::feof(file_)) return false;
  const auto where = [&] {
    return absl::StrCat("pcap file '", path_, "': record ", records_ + 1, " at byte ", offset_);
  };
  if (got != sizeof(rec)) {
    return absl::InvalidArgumentError(absl::StrCat(where(), ": record header cut short"));
  }
  const uint32_t sec = Get32(rec, header_.swapped);
  const uint32_t frac = Get32(rec + 4, header_.swapped);
  const uint32_t incl = Get32(rec + 8, header_.swapped);
  const uint32_t orig = Get32(rec + 12, header_.swapped);
  if (incl > kMaxPcapRecord) {
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": captured length ", incl, " exceeds ", kMaxPcapRecord));
  }
  if (incl > orig) {
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": captured length ", incl, " exceeds wire length ", orig));
  }
  if (frac >= (header_.nanosecond ? 1000000000u : 1000000u)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": sub-second timestamp ", frac, " out of range"));
  }
  buffer_.resize(incl);
  if (incl > 0 && std::fread(buffer_.data(), 1, incl, file_) != incl) {
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": packet data cut short (", incl, " bytes claimed)"));
  }
  ++records_;
  offset_ += 16 + incl;
  packet->data = buffer_.data();
  packet->captured_len = incl;
  packet->wire_len = orig;
  packet->timestamp_us =
      static_cast<int64_t>(sec) * 1000000 + (header_.nanosecond ? frac / 1000 : frac);
  return true;
}

absl::StatusOr<uint64_t> CountPcapPackets(const std::string& path) {
  auto reader = PcapReader::Open(path);
  if (!reader.ok()) return reader.status();
  uint64_t n = 0;
  PacketView packet;
  while (true) {
    auto more = (*reader)->Next(&packet);
    if (!more.ok()) return more.status();
    if (!*more) return n;
    ++n;
  }
}

PcapWriter::PcapWriter(std::FILE* file, std::string path, uint32_t snaplen)
    : file_(file), path_(std::move(path)), snaplen_(snaplen) {}

PcapWriter::~PcapWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::StatusOr<std::unique_ptr<PcapWriter>> PcapWriter::Create(const std::string& path,
                                                               uint32_t snaplen) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot create pcap file '", path, "': ", std::strerror(errno)));
  }
  uint8_t raw[24] = {};
  Put32(raw, kMagicMicro);
  Put16(raw + 4, 2);
  Put16(raw + 6, 4);
  Put32(raw + 16, snaplen);
  Put32(raw + 20, kLinkTypeEthernet);
  if (std::fwrite(raw, 1, sizeof(raw), file) != sizeof(raw)) {
    std::fclose(file);
    return absl::UnavailableError(absl::StrCat("cannot write pcap file '", path, "'"));
  }
  return std::unique_ptr<PcapWriter>(new PcapWriter(file, path, snaplen));
}

absl::Status PcapWriter::Write(int64_t timestamp_us, std::span<const uint8_t> data,
                               uint32_t wire_len) {
  if (file_ == nullptr) return absl::FailedPreconditionError("pcap writer is closed");
  const uint32_t incl = static_cast<uint32_t>(data.size() < snaplen_ ? data.size() : snaplen_);
  uint8_t rec[16];
  Put32(rec, static_cast<uint32_t>(timestamp_us / 1000000));
  Put32(rec + 4, static_cast<uint32_t>(timestamp_us % 1000000));
  Put32(rec + 8, incl);
  Put32(rec + 12, wire_len != 0 ? wire_len : static_cast<uint32_t>(data.size()));
  if (std::fwrite(rec, 1, 16, file_) != 16 || std::fwrite(data.data(), 1, incl, file_) != incl) {
    return absl::UnavailableError(absl::StrCat("cannot write pcap file '", path_, "'"));
  }
  return absl::OkStatus();
}

absl::Status PcapWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) return absl::UnavailableError(absl::StrCat("cannot close pcap file '", path_, "'"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PcapFileSource>> PcapFileSource::Open(const std::string& path,
                                                                     int burst) {
  if (burst < 1) return absl::InvalidArgumentError("burst: must be at least 1");
  auto reader = PcapReader::Open(path);  // validates the header early
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<PcapFileSource>(new PcapFileSource(path, burst));
}

absl::Status PcapFileSource::Run(std::span<PacketSink* const> sinks,
                                 const std::atomic<bool>& stop) {
  if (sinks.size() != 1) return absl::FailedPreconditionError("PcapFileSource wants one sink");
  stats_ = {};
  const auto start = std::chrono::steady_clock::now();
  auto reader = PcapReader::Open(path_);
  if (!reader.ok()) return reader.status();
  // Packets of one burst are copied into one arena; views are built after
  // the burst is complete because the arena may grow while filling it.
  std::vector<uint8_t> arena;
  arena.reserve(static_cast<size_t>(burst_) * 2048);
  std::vector<PacketView> views(burst_);
  std::vector<size_t> offsets(burst_);
  absl::Status status;
  bool done = false;
  while (!done && !stop.load(std::memory_order_relaxed)) {
    arena.clear();
    int n = 0;
    while (n < burst_) {
      PacketView packet;
      auto more = (*reader)->Next(&packet);
      if (!more.ok()) {
        status = more.status();
        done = true;
        break;
      }
      if (!*more) {
        done = true;
        break;
      }
      offsets[n] = arena.size();
      arena.insert(arena.end(), packet.data, packet.data + packet.captured_len);
      views[n] = packet;
      ++n;
    }
    for (int i = 0; i < n; ++i) views[i].data = arena.data() + offsets[i];
    if (n > 0) {
      sinks[0]->OnBurst(std::span<const PacketView>(views.data(), n));
      stats_.packets += n;
      ++stats_.bursts;
    }
  }
  stats_.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return status;
}

}  // namespace phasor::probe
