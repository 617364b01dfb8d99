// The client side of phasord's wire (SPEC section 9), every socket of it:
//   - Client: requests on the ROUTER (host schedulers rank and commit, tools
//     ask for offsets, health and snapshots);
//   - OffsetSubscriber: a job's OffsetUpdates from the PUB socket plus
//     GetOffset answers, without blocking (the training-loop agents);
//   - ProfilePublisher (profile_publisher.h): ProfileUpdates to the PULL socket
//     (the probes).
// docs/protocol.md has examples.
//
//   phasor::client::ClientOptions o;
//   o.endpoint = "tcp://phasord.example:7410";
//   o.curve = phasor::client::CurveClientKeys{server_pub, my_pub, my_secret};
//   auto client = phasor::client::Client::Connect(o);
//   auto ranked = (*client)->Rank(request);                      // placer::RankRequest
//   (*client)->Commit(ranked->ranking_id, ranked->ranking.ranked[0].candidate);
//
// A Client is not thread-safe (one ZeroMQ socket); use one per thread.
// Errors: phasord's Error replies become Statuses by protocol/status.h
// (NOT_FOUND -> NotFound, INVALID_ARGUMENT/BAD_* -> InvalidArgument,
// LIMIT_EXCEEDED/TOO_LARGE -> ResourceExhausted, UNSUPPORTED_VERSION ->
// FailedPrecondition, UNKNOWN_TYPE -> Unimplemented); no answer within
// timeout_ms is Unavailable.
//
// Several phasords (state_store.backend: etcd, one leader and standbys):
// `endpoint` may list them, comma-separated. A call goes to the endpoint that
// answered last; when it gets no reply or UNAVAILABLE (a standby, naming the
// leader in Error.leader_endpoint), it tries the named leader, else the next
// endpoint, until one answers or timeout_ms (the whole call's bound) passes.
#ifndef PHASOR_INTEGRATIONS_CLIENT_CLIENT_H_
#define PHASOR_INTEGRATIONS_CLIENT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "protocol/curve_keys.h"
#include "protocol/framing.h"
#include "protocol/phasor.pb.h"
#include "zmq.hpp"

namespace phasor::client {

// CURVE keys of a client (protocol/curve_keys.h loads them from files).
using CurveClientKeys = protocol::CurveClientKeys;

// Applies CURVE client keys to a socket (any type). InvalidArgument for a
// key that is not Z85.
absl::Status ApplyCurve(zmq::socket_t& socket, const CurveClientKeys& keys);

// The endpoints of a comma-separated list (spaces around each dropped).
std::vector<std::string> SplitEndpoints(const std::string& list);

struct ClientOptions {
  // phasord's ROUTER endpoint (request_endpoint in its config), or several,
  // comma-separated (a leader and its standbys). Required.
  std::string endpoint;
  // How long one call waits for its reply (default 5 s).
  int timeout_ms = 5000;
  // CURVE keys; nullopt: a plain socket (ipc:// or loopback only).
  std::optional<CurveClientKeys> curve;
};

struct RankResult {
  uint64_t ranking_id = 0;  // name it in Commit()
  placer::Ranking ranking;
  phasor::v1::RankReply reply;  // the reply as received (with shifts' periods)
};

class Client {
 public:
  // Creates the socket and connects (ZeroMQ connects lazily: an absent
  // phasord shows up as Unavailable on the first call). A null context makes
  // the client own one.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options,
                                                         zmq::context_t* context = nullptr);

  // Both set RankRequest.wait_ms to timeout_ms (unless the request sets it),
  // so phasord does not solve a request this call has stopped waiting for.
  // `detail`: ORDER for a caller that reads the order and commits (no
  // per-link results on the wire; RankRequest.reply_detail).
  absl::StatusOr<RankResult> Rank(const placer::RankRequest& request,
                                  phasor::v1::RankRequest::ReplyDetail detail = phasor::v1::RankRequest::FULL);
  absl::StatusOr<phasor::v1::RankReply> Rank(phasor::v1::RankRequest request);
  absl::StatusOr<phasor::v1::CommitReply> Commit(uint64_t ranking_id, const std::string& candidate);
  absl::StatusOr<phasor::v1::OffsetUpdate> GetOffset(const std::string& job);
  absl::StatusOr<phasor::v1::HealthReply> Health();
  // What phasord knows of the committed placement (`phasor diagnose --phasord`).
  absl::StatusOr<phasor::v1::Snapshot> GetSnapshot();
  // Withdraws the jobs' placements (ended, requeued, lost a node): phasord
  // stops publishing their offsets. The reply lists the jobs that held one.
  absl::StatusOr<phasor::v1::ReleaseReply> Release(const std::vector<std::string>& jobs);

  // Sends raw frames (after the empty delimiter) and returns the reply's
  // frames; for tests and tools that speak the wire directly.
  absl::StatusOr<std::vector<std::string>> CallRaw(const std::vector<std::string>& frames);

  // Replies dropped because they answered no outstanding request (late
  // answers to a timed-out call, or duplicates).
  uint64_t stale_replies() const { return stale_replies_; }

 private:
  Client(ClientOptions options, std::vector<std::string> endpoints, std::unique_ptr<zmq::context_t> owned,
         zmq::context_t* context)
      : options_(std::move(options)),
        endpoints_(std::move(endpoints)),
        owned_context_(std::move(owned)),
        context_(context) {}

  // Sends `request` (with a fresh request_id set by `set_id`) and waits for
  // the reply with that id, parsing it into `reply` (of type `reply_type`),
  // failing over between the endpoints within timeout_ms.
  absl::Status Call(protocol::MessageType type, google::protobuf::Message& request,
                    protocol::MessageType reply_type, google::protobuf::Message& reply);
  // One attempt on the current endpoint, waiting until `deadline`.
  absl::Status CallOnce(protocol::MessageType type, google::protobuf::Message& request,
                        protocol::MessageType reply_type, google::protobuf::Message& reply,
                        std::chrono::steady_clock::time_point deadline, int wait_ms);
  // (Re)connects the socket to endpoints_[i].
  absl::Status ConnectTo(size_t i);

  ClientOptions options_;
  std::vector<std::string> endpoints_;
  size_t current_ = 0;
  std::unique_ptr<zmq::context_t> owned_context_;
  zmq::context_t* context_;
  zmq::socket_t socket_;
  uint64_t next_request_id_ = 1;
  uint64_t stale_replies_ = 0;
};

struct OffsetSubscriberOptions {
  std::string job;               // the job whose offsets to follow. Required.
  // phasord's ROUTER (GetOffset) and PUB (OffsetUpdate, topic = job id).
  // Required. Each may list several phasords, comma-separated: the
  // subscriber hears every PUB (only the leader publishes) and its GetOffsets
  // go round the ROUTERs (standbys' UNAVAILABLE answers are dropped).
  std::string request_endpoint;
  std::string offset_endpoint;
  std::optional<CurveClientKeys> curve;
};

// Follows one job's offset: subscribes to its OffsetUpdates and asks with
// GetOffset (so a late joiner is never lost), without ever blocking longer
// than asked. Not thread-safe (two ZeroMQ sockets); one per training process.
class OffsetSubscriber {
 public:
  // InvalidArgument for missing fields, bad keys or endpoints ZeroMQ refuses.
  static absl::StatusOr<std::unique_ptr<OffsetSubscriber>> Connect(OffsetSubscriberOptions options);
  ~OffsetSubscriber();

  // Sends a GetOffset for the job (answered, later, through Poll).
  void RequestOffset();
  // The job's OffsetUpdates that arrived (published or answering GetOffset),
  // waiting up to `timeout_ms` for the first; other jobs' updates sharing the
  // topic prefix, errors and malformed messages are dropped.
  std::vector<phasor::v1::OffsetUpdate> Poll(int timeout_ms);

 private:
  OffsetSubscriber(OffsetSubscriberOptions options);
  OffsetSubscriberOptions options_;
  zmq::context_t context_{1};
  zmq::socket_t sub_;
  zmq::socket_t dealer_;
  uint64_t next_request_id_ = 1;
};

}  // namespace phasor::client

#endif  // PHASOR_INTEGRATIONS_CLIENT_CLIENT_H_
