// The classic libpcap file format (not pcapng): a 24-byte global header
// (magic 0xa1b2c3d4 for microsecond or 0xa1b23c4d for nanosecond timestamps,
// either byte order; version; snap length; link type) and per packet a
// 16-byte record header (seconds, micro/nanoseconds, captured length, wire
// length) followed by the captured bytes. Only link type 1 (Ethernet) is
// accepted: the parser starts at an Ethernet header.
//
// PcapReader and PcapWriter are single-threaded objects owning their FILE.
#ifndef PHASOR_PROBE_PCAP_FILE_H_
#define PHASOR_PROBE_PCAP_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "probe/capture_source.h"
#include "probe/packet.h"

namespace phasor::probe {

inline constexpr uint32_t kLinkTypeEthernet = 1;
// Largest record the reader accepts (libpcap's own limit for Ethernet).
inline constexpr uint32_t kMaxPcapRecord = 262144;

struct PcapHeader {
  bool nanosecond = false;
  bool swapped = false;  // the file's byte order differs from this machine's
  uint32_t snaplen = 0;
  uint32_t link_type = 0;
};

class PcapReader {
 public:
  // Opens and validates the global header. NotFound for a missing file,
  // InvalidArgument naming the path for a short file, a bad magic, or a link
  // type other than Ethernet.
  static absl::StatusOr<std::unique_ptr<PcapReader>> Open(const std::string& path);
  ~PcapReader();

  const PcapHeader& header() const { return header_; }

  // Reads the next packet into an internal buffer; `*packet` borrows it
  // until the next call. Returns false at a clean end of file. A record cut
  // short or with impossible lengths is InvalidArgument naming the record
  // number and byte offset.
  absl::StatusOr<bool> Next(PacketView* packet);

 private:
  PcapReader(std::FILE* file, std::string path, PcapHeader header);
  std::FILE* file_;
  std::string path_;
  PcapHeader header_;
  uint64_t records_ = 0;
  uint64_t offset_ = 24;
  std::vector<uint8_t> buffer_;
};

// Reads a whole file to check it: the number of packets, or the first error.
absl::StatusOr<uint64_t> CountPcapPackets(const std::string& path);

class PcapWriter {
 public:
  // Creates (truncates) `path` and writes a microsecond Ethernet header.
  static absl::StatusOr<std::unique_ptr<PcapWriter>> Create(const std::string& path,
                                                            uint32_t snaplen = 65535);
  ~PcapWriter();
  // Appends one packet; `wire_len` 0 means data.size(). Captured bytes beyond
  // the snap length are cut (wire_len keeps the full size).
  absl::Status Write(int64_t timestamp_us, std::span<const uint8_t> data, uint32_t wire_len = 0);
  absl::Status Close();

 private:
  PcapWriter(std::FILE* file, std::string path, uint32_t snaplen);
  std::FILE* file_;
  std::string path_;
  uint32_t snaplen_;
};

// CaptureSource over a pcap file read with PcapReader: one worker, bursts of
// `burst` packets, timestamps from the file.
class PcapFileSource : public CaptureSource {
 public:
  static absl::StatusOr<std::unique_ptr<PcapFileSource>> Open(const std::string& path,
                                                              int burst = 32);
  int workers() const override { return 1; }
  absl::Status Run(std::span<PacketSink* const> sinks, const std::atomic<bool>& stop) override;
  CaptureStats stats() const override { return stats_; }

 private:
  PcapFileSource(std::string path, int burst) : path_(std::move(path)), burst_(burst) {}
  std::string path_;
  int burst_;
  CaptureStats stats_;
};

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_PCAP_FILE_H_
