// Prints one digest per group of ranking requests (tests/testing/rank_corpus.h):
// every field of every reply and of the default ranking policy's decision,
// doubles by their bits. bench/regress.sh builds it at two commits: equal
// digests mean a change to the ranking path changed no reply. One group
// alone (e.g. under callgrind, whose instruction counts repeat exactly):
//
// usage: rank_digest [GROUP...]   groups: arrival arrival-catalogue
//        arrival-depth-first shuffled small (400 small requests); default all
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/testing/rank_corpus.h"

int main(int argc, char** argv) {
  using namespace phasor;
  const std::vector<std::pair<std::string, std::function<uint64_t()>>> groups = {
      {"arrival", [] { return testing::RankAndPolicyDigest(testing::ArrivalInstance(42, false)); }},
      {"arrival-catalogue", [] { return testing::RankAndPolicyDigest(testing::ArrivalInstance(42, true)); }},
      {"arrival-depth-first",
       [] {
         placer::RankRequest r = testing::ArrivalInstance(42, false);
         r.options.solver.pair_bounds = false;
         return testing::RankAndPolicyDigest(r);
       }},
      {"shuffled", [] { return testing::RankAndPolicyDigest(testing::ShuffledInstance(42)); }},
      {"small",
       [] {
         testing::Digest all;
         for (uint64_t i = 0; i < 400; ++i) all.Add(testing::RankAndPolicyDigest(testing::SmallInstance(i)));
         return all.value();
       }},
  };
  std::vector<std::string> wanted(argv + 1, argv + argc);
  for (const std::string& w : wanted) {
    bool known = false;
    for (const auto& [name, run] : groups) known |= name == w;
    if (!known) {
      std::fprintf(stderr, "rank_digest: unknown group '%s'\n", w.c_str());
      return 2;
    }
  }
  for (const auto& [name, run] : groups) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    std::printf("%s %016llx\n", name.c_str(), static_cast<unsigned long long>(run()));
  }
  return 0;
}
