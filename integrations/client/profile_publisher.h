// The one profile publisher of the probes (phasor-probe --publish, `phasor
// profile --publish`, tests): sends ProfileUpdates to phasord's PULL socket
// (docs/protocol.md).
//
// Never blocks the probe for long: the PUSH socket only queues to a
// connected phasord (ZMQ_IMMEDIATE), holds at most `queue` messages, and a
// send waits at most `send_timeout_ms` - and only while phasord was reachable
// at the previous send; after a failure sends do not wait at all until one
// succeeds again. An unreachable phasord is reported once on stderr (and
// once more when it comes back).
#ifndef PHASOR_INTEGRATIONS_CLIENT_PROFILE_PUBLISHER_H_
#define PHASOR_INTEGRATIONS_CLIENT_PROFILE_PUBLISHER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "protocol/curve_keys.h"
#include "nlohmann/json.hpp"
#include "probe/profile_extractor.h"
#include "protocol/phasor.pb.h"
#include "zmq.hpp"

namespace phasor::client {

struct PublisherOptions {
  // phasord's profile_endpoint (tcp://, ipc:// or inproc://). Required.
  // Several, comma-separated (a leader and its standbys): every profile goes
  // to each (standbys drop it), so the leader hears all of them.
  std::string endpoint;
  // CURVE keys; without them only ipc://, inproc:// and loopback TCP are accepted.
  std::optional<protocol::CurveClientKeys> curve;
  // Longest wait of one send while phasord is reachable (default 100 ms).
  int send_timeout_ms = 100;
  // Messages queued towards phasord at most (ZMQ_SNDHWM, default 1000).
  int queue = 1000;
  // How long exit waits for queued messages to leave (ZMQ_LINGER, default 1 s).
  int linger_ms = 1000;
  // The program named in diagnostics ("<program>: --publish: ...").
  std::string program = "phasor-probe";
};

// The ProfileUpdate of a periodic profile (subject kind JOB or LINK).
phasor::v1::ProfileUpdate ToProfileUpdate(const std::string& subject, phasor::v1::ProfileUpdate::SubjectKind kind,
                                          const std::string& source, const probe::ExtractedProfile& profile);

// Reads the --publish-server-key / --publish-keys options (both or neither)
// with protocol::LoadCurveClientKeys. InvalidArgument naming the option.
absl::StatusOr<protocol::CurveClientKeys> LoadPublishKeys(const std::string& server_key_file,
                                                          const std::string& client_key_prefix);

class ProfilePublisher {
 public:
  // InvalidArgument naming the option for a bad endpoint, a plain non-local
  // endpoint, or bad keys. Does not wait for phasord (connects in the background).
  static absl::StatusOr<std::unique_ptr<ProfilePublisher>> Create(const PublisherOptions& options,
                                                                   std::ostream& diagnostics);

  // Sends one update; false when it could not be queued (counted, and said
  // once on `diagnostics`).
  bool Publish(const phasor::v1::ProfileUpdate& update);

  // Counts an update not sent because the subject had no periodic pattern or
  // is not a job or link (an unmapped flow).
  void Skip(const std::string& why) { ++skipped_[why]; }

  // {"publish": {"endpoint", "sent", "dropped", "skipped": {why: n}}}
  nlohmann::json SummaryJson() const;

  uint64_t sent() const { return sent_; }
  uint64_t dropped() const { return dropped_; }

 private:
  ProfilePublisher(PublisherOptions options, std::ostream& diagnostics)
      : options_(std::move(options)), diagnostics_(diagnostics) {}

  PublisherOptions options_;
  std::ostream& diagnostics_;
  zmq::context_t context_{1};
  std::vector<zmq::socket_t> sockets_;  // one PUSH per endpoint
  bool reachable_ = true;  // the last send succeeded (or none was tried)
  uint64_t sent_ = 0;
  uint64_t dropped_ = 0;
  std::map<std::string, uint64_t> skipped_;
};

}  // namespace phasor::client

#endif  // PHASOR_INTEGRATIONS_CLIENT_PROFILE_PUBLISHER_H_
