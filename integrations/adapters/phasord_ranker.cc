#include "integrations/adapters/phasord_ranker.h"

#include <utility>

namespace phasor::adapters {

sim::RankFunction PhasordRanker(client::Client* client, PhasordRankerOptions options) {
  return [client, options](const placer::RankRequest& request) -> absl::StatusOr<placer::Ranking> {
    absl::StatusOr<client::RankResult> result = client->Rank(request);
    if (!result.ok()) return result.status();
    if (options.commit && !result->ranking.ranked.empty()) {
      absl::StatusOr<v1::CommitReply> commit =
          client->Commit(result->ranking_id, result->ranking.ranked.front().candidate);
      if (!commit.ok()) return commit.status();
    }
    return std::move(result->ranking);
  };
}

}  // namespace phasor::adapters
