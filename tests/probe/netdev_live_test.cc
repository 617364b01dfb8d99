// NetdevSource on a real interface: a veth pair whose far end lives in a
// network namespace this test creates (phasor-probe-<pid>), periodic UDP
// bursts sent into it every 200 ms, the near end's counters polled every
// 10 ms. Needs root (ip netns, ip link); skipped with a message otherwise.
// The namespace (and with it the veth pair) is deleted even on failure.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "probe/measure.h"
#include "probe/netdev_counters.h"

namespace phasor::probe {
namespace {

int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// Owns the namespace and the veth pair.
class VethInNamespace {
 public:
  VethInNamespace() {
    const std::string pid = std::to_string(::getpid());
    ns_ = "phasor-probe-" + pid;
    near_ = "php" + pid + "a";
    far_ = "php" + pid + "b";
    Clean();
    ok_ = Sh("ip netns add " + ns_) == 0 &&
          Sh("ip link add " + near_ + " type veth peer name " + far_) == 0 &&
          Sh("ip link set " + far_ + " netns " + ns_) == 0 &&
          Sh("ip addr add 198.18.213.1/30 dev " + near_) == 0 &&
          Sh("ip link set " + near_ + " up") == 0 &&
          Sh("ip -n " + ns_ + " addr add 198.18.213.2/30 dev " + far_) == 0 &&
          Sh("ip -n " + ns_ + " link set " + far_ + " up") == 0 &&
          Sh("ip -n " + ns_ + " link set lo up") == 0;
  }
  ~VethInNamespace() { Clean(); }
  void Clean() {
    Sh("ip link del " + near_);
    Sh("ip netns del " + ns_);
  }
  bool ok() const { return ok_; }
  const std::string& near() const { return near_; }

 private:
  std::string ns_, near_, far_;
  bool ok_ = false;
};

TEST(NetdevLiveTest, FindsThePeriodOfBurstsOnAVethPair) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace and a veth pair";
  // A missing program is a failure naming its package, not a skip.
  ASSERT_EQ(Sh("ip -V"), 0) << "needs the ip command: apt-get install iproute2 (scripts/install-deps.sh)";
  VethInNamespace veth;
  ASSERT_TRUE(veth.ok()) << "could not set up the namespace and veth pair";

  // The sender: 60 datagrams of 1400 bytes at the start of every 200 ms,
  // to the far end (198.18.213.2, inside the test's own namespace).
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    ::inet_pton(AF_INET, "198.18.213.2", &to.sin_addr);
    char payload[1400] = {};
    auto next = std::chrono::steady_clock::now();
    while (!stop.load()) {
      for (int i = 0; i < 60; ++i) {
        ::sendto(fd, payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
      }
      next += std::chrono::milliseconds(200);
      std::this_thread::sleep_until(next);
    }
    ::close(fd);
  });
  NetdevOptions o;
  o.interfaces = {veth.near()};
  o.interval_us = 10'000;
  o.duration_us = 6'000'000;
  auto source = NetdevSource::Create(o);
  absl::StatusOr<Measurement> m = source.ok() ? Measure(**source, MeasureOptions{})
                                              : absl::StatusOr<Measurement>(source.status());
  stop = true;
  sender.join();
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->profiles.size(), 2u);
  const MeasuredProfile& tx = m->profiles[0];
  EXPECT_EQ(tx.subject, veth.near() + "/tx");
  ASSERT_TRUE(tx.extracted.periodic) << tx.extracted.reason;
  EXPECT_NEAR(tx.extracted.period_exact_us, 200'000, 0.02 * 200'000);
  ASSERT_TRUE(tx.sampling.has_value());
  EXPECT_GT(tx.sampling->reads, 300u);  // of 601 slots, late ones dropped
  std::cerr << "jitter: mean " << tx.sampling->jitter_mean_us << " us, p99 "
            << tx.sampling->jitter_p99_us << " us, max " << tx.sampling->jitter_max_us
            << " us, late " << tx.sampling->late << " of " << tx.sampling->reads + tx.sampling->late
            << "\n";
}

}  // namespace
}  // namespace phasor::probe
