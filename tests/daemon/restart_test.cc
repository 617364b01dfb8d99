// phasord as a process: killed with SIGKILL at any moment and restarted on
// the same state, it keeps everything it acknowledged and re-publishes offsets.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "integrations/client/client.h"
#include "nlohmann/json.hpp"
#include "protocol/framing.h"
#include "tests/daemon/daemon_harness.h"
#include "zmq.hpp"
#include "zmq_addon.hpp"

namespace phasor {
namespace {

class PhasordProcess {
 public:
  explicit PhasordProcess(const std::string& dir) : dir_(dir) {
    std::ofstream(dir_ + "/phasord.yaml") << "request_endpoint: ipc://" << dir_ << "/requests\n"
                                          << "profile_endpoint: ipc://" << dir_ << "/profiles\n"
                                          << "offset_endpoint: ipc://" << dir_ << "/offsets\n"
                                          << "metrics_listen: ''\n"
                                          << "allow_plain: true\n"
                                          << "republish_interval_ms: 200\n"
                                          << "log_level: warn\n"
                                          << "state_path: " << dir_ << "/state.db\n";
  }
  ~PhasordProcess() { Kill(SIGKILL); }

  // Starts phasord and waits for its ready file.
  bool Start() {
    const std::string ready = dir_ + "/ready.json";
    std::filesystem::remove(ready);
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string config = dir_ + "/phasord.yaml";
      ::execl(PHASORD_PATH, "phasord", "--config", config.c_str(), "--ready-file", ready.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return ::phasor::testing::DaemonHarness::WaitFor([&] { return std::filesystem::exists(ready); });
  }

  // Sends `signal` and reaps the process; returns its wait status.
  int Kill(int signal) {
    if (pid_ <= 0) return 0;
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

  std::string endpoint(const std::string& name) const { return "ipc://" + dir_ + "/" + name; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

std::unique_ptr<client::Client> Connect(const PhasordProcess& p, int timeout_ms = 5000) {
  client::ClientOptions o;
  o.endpoint = p.endpoint("requests");
  o.timeout_ms = timeout_ms;
  return *client::Client::Connect(o);
}

class RestartTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ::phasor::testing::MakeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(RestartTest, KillNineKeepsStateAndRepublishes) {
  PhasordProcess p(dir_);
  ASSERT_TRUE(p.Start());
  auto c = Connect(p);
  absl::StatusOr<client::RankResult> ranked = c->Rank(::phasor::testing::SampleRankRequest());
  ASSERT_TRUE(ranked.ok()) << ranked.status().message();
  absl::StatusOr<v1::CommitReply> commit = c->Commit(ranked->ranking_id, ranked->reply.ranked(0).candidate());
  ASSERT_TRUE(commit.ok());
  absl::StatusOr<client::RankResult> pending = c->Rank(::phasor::testing::SampleRankRequest());
  ASSERT_TRUE(pending.ok());
  const int64_t epoch = (*c->Health()).epoch_us();

  const int status = p.Kill(SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  ASSERT_TRUE(p.Start());
  c = Connect(p);

  absl::StatusOr<v1::HealthReply> health = c->Health();
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->epoch_us(), epoch);  // the same epoch: offsets keep their meaning
  EXPECT_EQ(health->jobs(), 3u);
  for (const v1::OffsetUpdate& o : commit->offsets()) {
    absl::StatusOr<v1::OffsetUpdate> got = c->GetOffset(o.job());
    ASSERT_TRUE(got.ok()) << o.job();
    EXPECT_EQ(got->shift_us(), o.shift_us());
    EXPECT_EQ(got->period_us(), o.period_us());
    EXPECT_EQ(got->origin_epoch_us(), o.origin_epoch_us());
    EXPECT_EQ(got->version(), o.version());
  }
  // A ranking acknowledged before the kill can still be committed.
  absl::StatusOr<v1::CommitReply> late = c->Commit(pending->ranking_id, pending->reply.ranked(1).candidate());
  EXPECT_TRUE(late.ok()) << late.status().message();
  // Ranking ids are never reused.
  absl::StatusOr<client::RankResult> next = c->Rank(::phasor::testing::SampleRankRequest());
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->ranking_id, pending->ranking_id + 1);

  // Offsets are re-published: a fresh subscriber hears job a's.
  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::linger, 0);
  sub.set(zmq::sockopt::subscribe, "a");
  sub.connect(p.endpoint("offsets"));
  zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_GT(zmq::poll(&item, 1, std::chrono::milliseconds(3000)), 0);
  std::vector<zmq::message_t> frames;
  ASSERT_TRUE(zmq::recv_multipart(sub, std::back_inserter(frames)));
  ASSERT_EQ(frames.size(), 4u);
  v1::OffsetUpdate u;
  ASSERT_TRUE(u.ParseFromString(frames[3].to_string()));
  EXPECT_EQ(u.job(), "a");
  EXPECT_EQ(p.Kill(SIGTERM), 0);  // a clean stop exits 0
}

TEST_F(RestartTest, SnapshotAfterKillNineKeepsProfilesAndCapacities) {
  // No topology file and no probe: only the committing RankRequest gave the
  // jobs' profiles and the links' capacities. A restart must not forget them.
  PhasordProcess p(dir_);
  ASSERT_TRUE(p.Start());
  auto c = Connect(p);
  absl::StatusOr<client::RankResult> ranked = c->Rank(::phasor::testing::SampleRankRequest());
  ASSERT_TRUE(ranked.ok()) << ranked.status().message();
  ASSERT_TRUE(c->Commit(ranked->ranking_id, ranked->reply.ranked(0).candidate()).ok());
  absl::StatusOr<v1::Snapshot> before = c->GetSnapshot();
  ASSERT_TRUE(before.ok()) << before.status().message();
  ASSERT_EQ(before->placement().jobs_size(), 3);
  ASSERT_EQ(before->placement().links_size(), 2);

  ASSERT_TRUE(WIFSIGNALED(p.Kill(SIGKILL)));
  ASSERT_TRUE(p.Start());
  c = Connect(p);
  absl::StatusOr<v1::Snapshot> after = c->GetSnapshot();
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_TRUE(after->jobs_without_profile().empty());
  EXPECT_TRUE(after->links_without_capacity().empty());
  // Field by field (map fields serialise in no fixed order).
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(after->placement(), before->placement()))
      << after->placement().DebugString() << "\n---\n" << before->placement().DebugString();
  EXPECT_EQ(after->offsets_size(), before->offsets_size());
}

TEST_F(RestartTest, KilledMidStreamLosesNothingAcknowledged) {
  PhasordProcess p(dir_);
  ASSERT_TRUE(p.Start());
  // A scheduler ranks and commits new job pairs as fast as it can while
  // phasord is killed under it.
  std::mutex mu;
  std::map<std::string, v1::OffsetUpdate> acknowledged;
  std::atomic<bool> stop{false};
  std::thread scheduler([&] {
    auto c = Connect(p, 1000);
    for (int i = 0; !stop; ++i) {
      const std::string x = "x" + std::to_string(i), y = "y" + std::to_string(i);
      absl::StatusOr<client::RankResult> r = c->Rank(::phasor::testing::PairRequest(x, y));
      if (!r.ok()) break;
      absl::StatusOr<v1::CommitReply> commit = c->Commit(r->ranking_id, "c");
      if (!commit.ok()) break;
      std::lock_guard<std::mutex> lock(mu);
      for (const v1::OffsetUpdate& o : commit->offsets()) acknowledged[o.job()] = o;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  p.Kill(SIGKILL);
  stop = true;
  scheduler.join();
  ASSERT_GT(acknowledged.size(), 10u);

  ASSERT_TRUE(p.Start());
  auto c = Connect(p);
  for (const auto& [job, o] : acknowledged) {
    absl::StatusOr<v1::OffsetUpdate> got = c->GetOffset(job);
    ASSERT_TRUE(got.ok()) << job << ": " << got.status().message();
    EXPECT_EQ(got->shift_us(), o.shift_us()) << job;
    EXPECT_EQ(got->version(), o.version()) << job;
  }
}

TEST_F(RestartTest, BadConfigExitsTwoWithOneLine) {
  std::ofstream(dir_ + "/bad.yaml") << "allow_plain: true\nsolver_threads: -3\n";
  const std::string cmd = std::string(PHASORD_PATH) + " --config " + dir_ + "/bad.yaml 2>" + dir_ + "/err.txt";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::ifstream err(dir_ + "/err.txt");
  std::string line;
  std::getline(err, line);
  EXPECT_EQ(line, "phasord: " + dir_ + "/bad.yaml: solver_threads: wrong type");
}

}  // namespace
}  // namespace phasor
