#include "placer/packing.h"

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/generators.h"

namespace phasor::placer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Three leaves of two servers: leaf1 {s1, s2}, leaf2 {s3, s4}, leaf3 {s5, s6}.
topology::Topology Fabric() {
  topology::LeafSpineOptions o;
  o.leaves = 3;
  o.spines = 1;
  o.servers_per_leaf = 2;
  o.gpus_per_server = 1;
  absl::StatusOr<topology::Topology> t = topology::MakeLeafSpine(o);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

Candidate OnServers(std::string id, std::vector<std::string> servers) {
  Candidate c;
  c.id = std::move(id);
  c.servers["j"] = std::move(servers);
  return c;
}

TEST(PackingTest, TheFabricsLeafSwitchesAreTheRacks) {
  const topology::Topology fabric = Fabric();
  absl::StatusOr<PackingView> view = PackingViewOf(fabric, {"s2", "s3", "s4"});
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->rack_of.size(), 6u);
  EXPECT_EQ(view->rack_of.at("s1"), "leaf1");
  EXPECT_EQ(view->rack_of.at("s4"), "leaf2");
  EXPECT_EQ(view->rack_of.at("s6"), "leaf3");
  EXPECT_THAT(std::vector<std::string>(view->free.begin(), view->free.end()), ElementsAre("s2", "s3", "s4"));
  EXPECT_EQ(fabric.LeafOf(*fabric.FindNode("leaf1")), std::nullopt);  // a switch has no leaf
}

TEST(PackingTest, BadFreeServersAreNamed) {
  const topology::Topology fabric = Fabric();
  absl::StatusOr<PackingView> v = PackingViewOf(fabric, {"s1", ""});
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(v.status().message(), HasSubstr("free_servers[1]: empty server id"));
  v = PackingViewOf(fabric, {"s1", "s2", "s1"});
  EXPECT_THAT(v.status().message(), HasSubstr("free_servers[2]: 's1' is given twice"));
  v = PackingViewOf(fabric, {"leaf1"});
  EXPECT_THAT(v.status().message(), HasSubstr("free_servers[0]: 'leaf1' is not a server of the fabric"));
}

TEST(PackingTest, WholeFreeAfterCountsServersAndRacksLeftWhole) {
  absl::StatusOr<PackingView> view = PackingViewOf(Fabric(), {"s2", "s3", "s4", "s5", "s6"});
  ASSERT_TRUE(view.ok());
  // Nothing placed: s2..s6 free, leaf2 and leaf3 whole (s1 is busy).
  WholeFree w = WholeFreeAfter(*view, {});
  EXPECT_EQ(w.servers, 5u);
  EXPECT_EQ(w.racks, 2u);
  // Two servers in the half-used leaf1 and leaf2: leaf3 stays whole.
  w = WholeFreeAfter(*view, {{"j", {"s2", "s3"}}});
  EXPECT_EQ(w.servers, 3u);
  EXPECT_EQ(w.racks, 1u);
  // A server already busy and one the view does not know change nothing.
  w = WholeFreeAfter(*view, {{"j", {"s1", "x9"}}});
  EXPECT_EQ(w.servers, 5u);
  EXPECT_EQ(w.racks, 2u);
  EXPECT_TRUE(LeavesLessPacked({.servers = 3, .racks = 2}, {.servers = 4, .racks = 1}));
  EXPECT_TRUE(LeavesLessPacked({.servers = 4, .racks = 0}, {.servers = 4, .racks = 1}));
  EXPECT_FALSE(LeavesLessPacked({.servers = 4, .racks = 1}, {.servers = 4, .racks = 1}));
}

TEST(PackingTest, CountsTakenOnceAnswerAsAWalkOfTheCluster) {
  // Racks of 1-6 servers (one server without a rack), random free sets and
  // placements (jobs sharing servers, servers the view does not know, busy
  // ones): each placement's counts from PackingCounts are those of walking
  // every server, as the rule defines them.
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    PackingView view;
    std::vector<std::string> servers;
    for (int r = 0; r < 5; ++r) {
      const int size = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < size; ++k) {
        const std::string id = absl::StrCat("r", r, "s", k);
        servers.push_back(id);
        view.rack_of[id] = absl::StrCat("rack", r);
      }
    }
    servers.push_back("loose");
    view.rack_of["loose"] = "";
    for (const std::string& s : servers) {
      if (rng() % 3 != 0) view.free.insert(s);
    }
    const PackingCounts counts(view);
    for (int p = 0; p < 10; ++p) {
      std::map<std::string, std::vector<std::string>> placement;
      for (int j = 0; j < 2; ++j) {
        for (int k = static_cast<int>(rng() % 5); k > 0; --k) {
          placement[absl::StrCat("j", j)].push_back(rng() % 8 == 0 ? "unknown" : servers[rng() % servers.size()]);
        }
      }
      std::set<std::string> used;
      for (const auto& [job, list] : placement) used.insert(list.begin(), list.end());
      WholeFree walked;
      std::map<std::string, bool> rack_whole;
      for (const auto& [server, rack] : view.rack_of) {
        const bool free = view.free.contains(server) && !used.contains(server);
        walked.servers += free;
        auto [it, fresh] = rack_whole.emplace(rack, free);
        if (!fresh) it->second = it->second && free;
      }
      for (const auto& [rack, whole] : rack_whole) walked.racks += whole;
      const WholeFree got = counts.After(placement);
      EXPECT_EQ(got.servers, walked.servers) << "trial " << trial;
      EXPECT_EQ(got.racks, walked.racks) << "trial " << trial;
      EXPECT_EQ(WholeFreeAfter(view, placement).racks, walked.racks);
    }
  }
}

TEST(PackingTest, KeepPackingSetsAsideWhatBreaksMoreThanTheHostsFirst) {
  absl::StatusOr<PackingView> view = PackingViewOf(Fabric(), {"s2", "s3", "s4", "s5", "s6"});
  ASSERT_TRUE(view.ok());
  RankRequest request;
  request.candidates = {OnServers("host", {"s2", "s3"}),    // leaves s4..s6, leaf3 whole
                        OnServers("breaks", {"s3", "s5"}),  // leaves s2, s4, s6: no leaf whole
                        OnServers("same", {"s2", "s4"}),    // leaves s3, s5, s6: leaf3 whole
                        OnServers("whole", {"s3", "s4"})};  // leaves s2, s5, s6: leaf3 whole
  Candidate links_only;
  links_only.id = "links";
  links_only.links["j"] = {{"s1->leaf1", 1.0}};
  request.candidates.push_back(links_only);
  std::vector<RejectedCandidate> rejected;
  EXPECT_EQ(KeepPacking(*view, request, rejected), 1u);
  std::vector<std::string> kept;
  for (const Candidate& c : request.candidates) kept.push_back(c.id);
  EXPECT_THAT(kept, ElementsAre("host", "same", "whole", "links"));
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].candidate, "breaks");
  EXPECT_EQ(rejected[0].reason,
            "packing: leaves 3 whole free servers and 0 whole free racks; the host's first leaves 3 and 1");
}

TEST(PackingTest, NothingMovesWhenTheHostsFirstGivesNoServers) {
  absl::StatusOr<PackingView> view = PackingViewOf(Fabric(), {"s3", "s4"});
  ASSERT_TRUE(view.ok());
  RankRequest request;
  Candidate first;
  first.id = "first";
  first.links["j"] = {{"s1->leaf1", 1.0}};
  request.candidates = {first, OnServers("breaks", {"s3"})};
  std::vector<RejectedCandidate> rejected;
  EXPECT_EQ(KeepPacking(*view, request, rejected), 0u);
  EXPECT_EQ(request.candidates.size(), 2u);
  EXPECT_TRUE(rejected.empty());
}

}  // namespace
}  // namespace phasor::placer
