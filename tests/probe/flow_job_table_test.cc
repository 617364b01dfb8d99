#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "probe/profile_report.h"
#include "probe/roce_parser.h"

namespace phasor::probe {
namespace flow_job_table_test {
namespace {

using ::testing::ElementsAre;

FlowKey Key(const std::string& src, const std::string& dst, uint32_t qp) {
  FlowKey k;
  EXPECT_TRUE(ParseIp(src, &k.src)) << src;
  EXPECT_TRUE(ParseIp(dst, &k.dst)) << dst;
  k.dest_qp = qp;
  return k;
}

TEST(FlowJobTableTest, FirstMatchingRuleNamesTheJob) {
  auto table = FlowJobTable::Parse(
      "# job  src       dst       qp\n"
      "a 10.0.0.1 10.0.0.2 0x11   # one queue pair\n"
      "b 10.0.0.1 * \n"
      "\n"
      "c * fd00::2 17\n"
      "a * * *\n",
      "t");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 4u);
  EXPECT_EQ(table->JobOf(Key("10.0.0.1", "10.0.0.2", 0x11)), "a");
  EXPECT_EQ(table->JobOf(Key("10.0.0.1", "10.0.0.2", 0x12)), "b");  // qp differs: the next rule
  EXPECT_EQ(table->JobOf(Key("fd00::1", "fd00::2", 17)), "c");
  EXPECT_EQ(table->JobOf(Key("10.9.9.9", "10.9.9.8", 1)), "a");  // the catch-all
  EXPECT_THAT(table->Jobs(), ElementsAre("a", "b", "c"));        // sorted, each once
}

TEST(FlowJobTableTest, NoRuleNoJob) {
  auto table = FlowJobTable::Parse("a 10.0.0.1 10.0.0.2\n", "t");
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->JobOf(Key("10.0.0.2", "10.0.0.1", 0)), "");
  EXPECT_THAT(FlowJobTable::Parse("", "t")->Jobs(), ElementsAre());
}

TEST(FlowJobTableTest, BadLinesAreNamed) {
  auto fields = FlowJobTable::Parse("a 10.0.0.1\n", "jobs.txt");
  EXPECT_EQ(fields.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fields.status().message(),
            "flow table 'jobs.txt' line 1: want '<job> <src_ip|*> <dst_ip|*> [<dest_qp>|*]', got 2 "
            "fields");
  auto ip = FlowJobTable::Parse("a * *\nb 10.0.0.300 *\n", "jobs.txt");
  EXPECT_EQ(ip.status().message(),
            "flow table 'jobs.txt' line 2: src_ip: '10.0.0.300' is not an IP address");
  auto qp = FlowJobTable::Parse("a * * 0x1000000\n", "jobs.txt");
  EXPECT_EQ(qp.status().message(),
            "flow table 'jobs.txt' line 1: dest_qp: '0x1000000' is not a 24-bit queue pair number");
  EXPECT_EQ(FlowJobTable::Load("/nonexistent/jobs.txt").status().code(),
            absl::StatusCode::kNotFound);
}

FlowKey L4(const std::string& src, const std::string& dst, Transport t, uint16_t sport,
           uint16_t dport) {
  FlowKey k = Key(src, dst, 0);
  k.transport = t;
  k.src_port = sport;
  k.dst_port = dport;
  return k;
}

TEST(FlowJobTableTest, TcpAndUdpRules) {
  auto table = FlowJobTable::Parse(
      "rdma 10.0.0.1 10.0.0.2 0x11\n"
      "gloo 10.0.0.1 10.0.0.2 tcp:29500\n"
      "dns * * udp:53\n"
      "nccl 10.0.0.1 10.0.0.2 tcp\n"
      "any 10.0.0.1 10.0.0.2\n",
      "t");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->JobOf(Key("10.0.0.1", "10.0.0.2", 0x11)), "rdma");
  EXPECT_EQ(table->JobOf(L4("10.0.0.1", "10.0.0.2", Transport::kTcp, 40000, 29500)), "gloo");
  EXPECT_EQ(table->JobOf(L4("10.0.0.1", "10.0.0.2", Transport::kTcp, 29500, 40000)), "gloo");
  EXPECT_EQ(table->JobOf(L4("10.0.0.1", "10.0.0.2", Transport::kTcp, 40000, 40001)), "nccl");
  EXPECT_EQ(table->JobOf(L4("10.9.0.1", "10.9.0.2", Transport::kUdp, 5353, 53)), "dns");
  EXPECT_EQ(table->JobOf(L4("10.0.0.1", "10.0.0.2", Transport::kUdp, 1, 2)), "any");
  // A queue pair rule matches RoCE flows only, even when the numbers agree.
  EXPECT_EQ(table->JobOf(L4("10.0.0.1", "10.0.0.2", Transport::kTcp, 0x11, 0x11)), "nccl");
  EXPECT_EQ(FlowJobTable::Parse("a * * tcp:0\n", "t").status().message(),
            "flow table 't' line 1: transport: 'tcp:0' is not tcp or tcp:<port 1-65535>");
  EXPECT_EQ(FlowJobTable::Parse("a * * udp53\n", "t").status().message(),
            "flow table 't' line 1: transport: 'udp53' is not udp or udp:<port 1-65535>");
}

TEST(FlowJobTableTest, FromAPlacementAndServerAddresses) {
  auto addresses = ServerAddresses::Parse(
      "# server  ips\n"
      "s1 10.0.0.1\n"
      "s2 10.0.0.2 fd00::2   # two NICs\n"
      "s3 10.0.0.3\n",
      "servers.txt");
  ASSERT_TRUE(addresses.ok()) << addresses.status();
  auto table = FlowJobTable::FromPlacement({{"a", {"s1", "s2"}}, {"b", {"s2", "s3"}}}, *addresses);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 8u);  // per job: 1 x 2 addresses each way
  EXPECT_EQ(table->JobOf(Key("10.0.0.1", "10.0.0.2", 0x11)), "a");
  EXPECT_EQ(table->JobOf(Key("fd00::2", "10.0.0.1", 7)), "a");
  EXPECT_EQ(table->JobOf(L4("10.0.0.3", "10.0.0.2", Transport::kTcp, 1, 2)), "b");
  EXPECT_EQ(table->JobOf(Key("10.0.0.1", "10.0.0.3", 0x11)), "");
  EXPECT_EQ(FlowJobTable::FromPlacement({{"a", {"s1", "s9"}}}, *addresses).status().message(),
            "job 'a': server 's9' has no address");
  EXPECT_EQ(ServerAddresses::Parse("s1 10.0.0.1\ns1 10.0.0.2\n", "f").status().message(),
            "servers 'f' line 2: server 's1' is given twice");
  EXPECT_EQ(ServerAddresses::Parse("s1 10.0.0.x\n", "f").status().message(),
            "servers 'f' line 1: ip: '10.0.0.x' is not an IP address");
  EXPECT_EQ(ServerAddresses::Parse("s1\n", "f").status().message(),
            "servers 'f' line 1: want '<server> <ip> [<ip>...]', server 's1' has no ip");
}

TEST(FlowJobTableTest, ConcatKeepsTheFirstTablesPrecedence) {
  auto fixed = FlowJobTable::Parse("pinned 10.0.0.1 10.0.0.2 tcp\n", "flows.txt");
  auto addresses = ServerAddresses::Parse("s1 10.0.0.1\ns2 10.0.0.2\n", "servers.txt");
  ASSERT_TRUE(fixed.ok() && addresses.ok());
  auto placed = FlowJobTable::FromPlacement({{"placed", {"s1", "s2"}}}, *addresses);
  ASSERT_TRUE(placed.ok());
  const FlowJobTable both = FlowJobTable::Concat(*fixed, *placed);
  EXPECT_EQ(both.size(), 3u);
  EXPECT_EQ(both.JobOf(L4("10.0.0.1", "10.0.0.2", Transport::kTcp, 1, 2)), "pinned");
  EXPECT_EQ(both.JobOf(Key("10.0.0.1", "10.0.0.2", 0x11)), "placed");  // RoCE: not the tcp rule
  EXPECT_EQ(both.JobOf(L4("10.0.0.2", "10.0.0.1", Transport::kTcp, 2, 1)), "placed");
  EXPECT_THAT(both.Jobs(), ElementsAre("pinned", "placed"));
  EXPECT_EQ(FlowJobTable::Concat(FlowJobTable(), *placed).size(), 2u);
}

}  // namespace
}  // namespace flow_job_table_test
}  // namespace phasor::probe
