#include "probe/pcap_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "probe/packet_builder.h"

namespace phasor::probe {
namespace pcap_file_test {
namespace {

namespace fs = std::filesystem;

class PcapFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("phasor_pcap_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  std::vector<uint8_t> ReadBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

TEST_F(PcapFileTest, RoundTrip) {
  const std::string path = Path("a.pcap");
  {
    auto w = PcapWriter::Create(path, 100);
    ASSERT_TRUE(w.ok()) << w.status();
    const auto f = BuildFrame(FrameSpec{});
    ASSERT_TRUE((*w)->Write(1700000000123456, f).ok());
    ASSERT_TRUE((*w)->Write(1700000001000001, std::span(f.data(), 60)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto r = PcapReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->header().snaplen, 100u);
  PacketView p;
  ASSERT_TRUE(*(*r)->Next(&p));
  EXPECT_EQ(p.timestamp_us, 1700000000123456);
  EXPECT_EQ(p.captured_len, 100u);  // cut at the snap length
  EXPECT_EQ(p.wire_len, 14u + 20 + 8 + 12 + 1024);
  ASSERT_TRUE(*(*r)->Next(&p));
  EXPECT_EQ(p.timestamp_us, 1700000001000001);
  EXPECT_EQ(p.captured_len, 60u);
  EXPECT_EQ(p.wire_len, 60u);
  EXPECT_FALSE(*(*r)->Next(&p));
  EXPECT_EQ(*CountPcapPackets(path), 2u);
}

TEST_F(PcapFileTest, SwappedAndNanosecondFiles) {
  // Big-endian nanosecond header, one 4-byte record.
  std::vector<uint8_t> b = {0xa1, 0xb2, 0x3c, 0x4d, 0, 2, 0,    4,    0, 0, 0, 0,
                            0,    0,    0,    0,    0, 0, 0xff, 0xff, 0, 0, 0, 1};
  const std::vector<uint8_t> rec = {0, 0, 0, 10, 0x3b, 0x9a, 0xc9, 0xff, 0, 0,
                                    0, 4, 0, 0,  0,    4,    1,    2,    3, 4};
  b.insert(b.end(), rec.begin(), rec.end());
  WriteBytes(Path("be.pcap"), b);
  auto r = PcapReader::Open(Path("be.pcap"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)->header().swapped);
  EXPECT_TRUE((*r)->header().nanosecond);
  PacketView p;
  ASSERT_TRUE(*(*r)->Next(&p));
  EXPECT_EQ(p.timestamp_us, 10 * 1000000 + 999999);
  EXPECT_EQ(p.captured_len, 4u);
}

TEST_F(PcapFileTest, BadFiles) {
  auto missing = PcapReader::Open(Path("nope.pcap"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);

  WriteBytes(Path("short.pcap"), {0xd4, 0xc3, 0xb2});
  auto s = PcapReader::Open(Path("short.pcap"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("global header"), std::string::npos);

  std::vector<uint8_t> ng(24, 0);
  ng[0] = 0x0a;
  ng[1] = 0x0d;
  ng[2] = 0x0d;
  ng[3] = 0x0a;  // pcapng section header block
  WriteBytes(Path("ng.pcap"), ng);
  s = PcapReader::Open(Path("ng.pcap"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("bad magic"), std::string::npos);

  {
    auto w = PcapWriter::Create(Path("good.pcap"));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(1, BuildFrame(FrameSpec{})).ok());
  }
  auto bytes = ReadBytes(Path("good.pcap"));
  auto linux_sll = bytes;
  linux_sll[20] = 113;  // LINKTYPE_LINUX_SLL
  WriteBytes(Path("sll.pcap"), linux_sll);
  s = PcapReader::Open(Path("sll.pcap"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("link type 113 is not Ethernet"), std::string::npos);

  auto cut = bytes;
  cut.resize(cut.size() - 10);  // packet data cut short
  WriteBytes(Path("cut.pcap"), cut);
  auto n = CountPcapPackets(Path("cut.pcap"));
  EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(n.status().message().find("record 1 at byte 24: packet data cut short"),
            std::string::npos)
      << n.status();

  auto huge = bytes;
  huge[24 + 8] = 0xff;
  huge[24 + 9] = 0xff;
  huge[24 + 10] = 0xff;  // captured length > 256 KiB
  WriteBytes(Path("huge.pcap"), huge);
  n = CountPcapPackets(Path("huge.pcap"));
  EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(n.status().message().find("exceeds 262144"), std::string::npos);

  auto over = bytes;
  over[24 + 12] = 10;  // wire length 10 < captured length
  over[24 + 13] = 0;
  WriteBytes(Path("over.pcap"), over);
  n = CountPcapPackets(Path("over.pcap"));
  EXPECT_NE(n.status().message().find("exceeds wire length 10"), std::string::npos);
}

class CountingSink : public PacketSink {
 public:
  void OnBurst(std::span<const PacketView> burst) override {
    ++bursts;
    for (const auto& p : burst) {
      bytes += p.captured_len;
      first_bytes += p.data[0];
    }
  }
  int bursts = 0;
  uint64_t bytes = 0;
  uint64_t first_bytes = 0;
};

TEST_F(PcapFileTest, FileSourceDeliversBursts) {
  {
    auto w = PcapWriter::Create(Path("s.pcap"));
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 70; ++i) ASSERT_TRUE((*w)->Write(i, BuildFrame(FrameSpec{})).ok());
  }
  auto src = PcapFileSource::Open(Path("s.pcap"), 32);
  ASSERT_TRUE(src.ok());
  CountingSink sink;
  PacketSink* sinks[] = {&sink};
  std::atomic<bool> stop{false};
  ASSERT_TRUE((*src)->Run(sinks, stop).ok());
  EXPECT_EQ(sink.bursts, 3);
  EXPECT_EQ(sink.bytes, 70u * 1078);
  EXPECT_EQ(sink.first_bytes, 70u * 0x02);
  EXPECT_EQ((*src)->stats().packets, 70u);
  stop = true;
  CountingSink none;
  PacketSink* sinks2[] = {&none};
  ASSERT_TRUE((*src)->Run(sinks2, stop).ok());
  EXPECT_EQ(none.bursts, 0);
}

}  // namespace
}  // namespace pcap_file_test
}  // namespace phasor::probe
