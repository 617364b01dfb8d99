#include "integrations/adapters/phasord_ranker.h"

#include <utility>

#include "protocol/convert.h"

namespace phasor::adapters {

absl::StatusOr<WireRanking> RankAndCommit(client::Client* client, phasor::v1::RankRequest request,
                                          bool commit) {
  absl::StatusOr<phasor::v1::RankReply> reply = client->Rank(std::move(request));
  if (!reply.ok()) return reply.status();
  WireRanking out;
  out.reply = *std::move(reply);
  if (commit && out.reply.ranked_size() > 0) {
    absl::StatusOr<phasor::v1::CommitReply> committed =
        client->Commit(out.reply.ranking_id(), out.reply.ranked(0).candidate());
    if (!committed.ok()) return committed.status();
    out.commit = *std::move(committed);
  }
  return out;
}

host_scheduler::RankFunction PhasordRanker(client::Client* client, PhasordRankerOptions options) {
  return [client, options](const placer::RankRequest& request) -> absl::StatusOr<placer::Ranking> {
    absl::StatusOr<WireRanking> wire = RankAndCommit(client, protocol::ToProto(request), options.commit);
    if (!wire.ok()) return wire.status();
    return protocol::FromProto(wire->reply);
  };
}

}  // namespace phasor::adapters
