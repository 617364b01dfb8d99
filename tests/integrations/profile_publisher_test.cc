// ProfilePublisher (integrations/client/profile_publisher.h) with several
// phasords: every profile goes to each endpoint (a standby drops it, the
// leader keeps it), and a bad endpoint in the list is named.
#include "integrations/client/profile_publisher.h"

#include <filesystem>
#include <sstream>

#include "gtest/gtest.h"
#include "protocol/framing.h"
#include "tests/daemon/daemon_harness.h"
#include "zmq_addon.hpp"

namespace phasor::client {
namespace {

TEST(ProfilePublisherTest, EveryEndpointOfAListGetsEachProfile) {
  const std::string dir = ::phasor::testing::MakeTempDir();
  zmq::context_t ctx;
  std::vector<zmq::socket_t> pulls;
  std::vector<std::string> endpoints;
  for (const char* name : {"a", "b"}) {
    pulls.emplace_back(ctx, zmq::socket_type::pull);
    pulls.back().set(zmq::sockopt::linger, 0);
    endpoints.push_back("ipc://" + dir + "/" + name);
    pulls.back().bind(endpoints.back());
  }
  PublisherOptions o;
  o.endpoint = endpoints[0] + ", " + endpoints[1];
  std::ostringstream diagnostics;
  absl::StatusOr<std::unique_ptr<ProfilePublisher>> p = ProfilePublisher::Create(o, diagnostics);
  ASSERT_TRUE(p.ok()) << p.status();
  v1::ProfileUpdate u;
  u.set_subject("job-a");
  u.set_period_us(1000);
  // The PUSH sockets connect in the background (immediate: nothing queued before).
  ASSERT_TRUE(::phasor::testing::DaemonHarness::WaitFor([&] { return (*p)->Publish(u); }));
  for (zmq::socket_t& pull : pulls) {
    zmq::pollitem_t item{pull.handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_GT(zmq::poll(&item, 1, std::chrono::milliseconds(3000)), 0);
    std::vector<zmq::message_t> frames;
    ASSERT_TRUE(zmq::recv_multipart(pull, std::back_inserter(frames)));
    ASSERT_EQ(frames.size(), 3u);
    v1::ProfileUpdate got;
    ASSERT_TRUE(got.ParseFromString(frames[2].to_string()));
    EXPECT_EQ(got.subject(), "job-a");
  }
  std::filesystem::remove_all(dir);
}

TEST(ProfilePublisherTest, ABadEndpointInTheListIsNamed) {
  PublisherOptions o;
  o.endpoint = "ipc:///tmp/x,http://phasord:7411";
  std::ostringstream diagnostics;
  absl::StatusOr<std::unique_ptr<ProfilePublisher>> p = ProfilePublisher::Create(o, diagnostics);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("http://phasord:7411"), absl::string_view::npos)
      << p.status();
}

}  // namespace
}  // namespace phasor::client
