#include "cmd/phasor-probe/profile_publisher.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "protocol/curve_keys.h"
#include "protocol/framing.h"
#include "zmq_addon.hpp"

namespace phasor::probe {
namespace {

// As phasord's own rule for plain sockets (cmd/phasord/config.cc).
bool IsLocalEndpoint(const std::string& endpoint) {
  if (absl::StartsWith(endpoint, "ipc://") || absl::StartsWith(endpoint, "inproc://")) return true;
  if (!absl::StartsWith(endpoint, "tcp://")) return false;
  const std::string host = endpoint.substr(6);
  return absl::StartsWith(host, "127.") || absl::StartsWith(host, "localhost:") || absl::StartsWith(host, "[::1]:");
}

}  // namespace

v1::ProfileUpdate ToProfileUpdate(const std::string& subject, v1::ProfileUpdate::SubjectKind kind,
                                  const std::string& source, const ExtractedProfile& p) {
  v1::ProfileUpdate u;
  u.set_subject(subject);
  u.set_kind(kind);
  u.set_period_us(p.period_us);
  u.set_bin_us(p.bin_us);
  for (double g : p.gbps) u.add_gbps(g);
  u.set_t0_epoch_us(p.t0_epoch_us);
  u.set_confidence(p.confidence);
  u.set_source(source);
  return u;
}

absl::StatusOr<client::CurveClientKeys> LoadPublishKeys(const std::string& server_key_file,
                                                        const std::string& client_key_prefix) {
  if (server_key_file.empty() != client_key_prefix.empty()) {
    return absl::InvalidArgumentError("--publish-server-key and --publish-keys: give both or neither");
  }
  client::CurveClientKeys keys;
  absl::StatusOr<std::string> server = protocol::ReadKeyFile(server_key_file);
  if (!server.ok()) return absl::InvalidArgumentError(absl::StrCat("--publish-server-key: ", server.status().message()));
  absl::StatusOr<std::string> pub = protocol::ReadKeyFile(client_key_prefix + ".pub");
  if (!pub.ok()) return absl::InvalidArgumentError(absl::StrCat("--publish-keys: ", pub.status().message()));
  absl::StatusOr<std::string> sec = protocol::ReadKeyFile(client_key_prefix + ".secret");
  if (!sec.ok()) return absl::InvalidArgumentError(absl::StrCat("--publish-keys: ", sec.status().message()));
  keys.server_public_key = *server;
  keys.client_public_key = *pub;
  keys.client_secret_key = *sec;
  return keys;
}

absl::StatusOr<std::unique_ptr<ProfilePublisher>> ProfilePublisher::Create(const PublisherOptions& options,
                                                                           std::ostream& diagnostics) {
  const std::string& e = options.endpoint;
  if (!absl::StartsWith(e, "tcp://") && !absl::StartsWith(e, "ipc://") && !absl::StartsWith(e, "inproc://")) {
    return absl::InvalidArgumentError(absl::StrCat("--publish: '", e, "' is not a tcp://, ipc:// or inproc:// endpoint"));
  }
  if (!options.curve && !IsLocalEndpoint(e)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--publish: '", e,
                     "' is not ipc:// or loopback: plain sockets are refused there; give --publish-server-key and "
                     "--publish-keys"));
  }
  if (options.send_timeout_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--publish-timeout-ms: ", options.send_timeout_ms, " is negative"));
  }
  if (options.queue < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--publish-queue: ", options.queue, " is below 1"));
  }
  std::unique_ptr<ProfilePublisher> p(new ProfilePublisher(options, diagnostics));
  try {
    p->socket_.set(zmq::sockopt::immediate, 1);  // queue only towards a connected phasord
    p->socket_.set(zmq::sockopt::sndhwm, options.queue);
    p->socket_.set(zmq::sockopt::sndtimeo, options.send_timeout_ms);
    p->socket_.set(zmq::sockopt::linger, options.linger_ms);
    if (options.curve) {
      if (absl::Status s = client::ApplyCurve(p->socket_, *options.curve); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--publish-keys: ", s.message()));
      }
    }
    p->socket_.connect(e);
  } catch (const zmq::error_t& err) {
    return absl::InvalidArgumentError(absl::StrCat("--publish: cannot connect to '", e, "': ", err.what()));
  }
  return p;
}

bool ProfilePublisher::Publish(const v1::ProfileUpdate& update) {
  const std::vector<std::string> frames = protocol::EncodeFrames(protocol::MessageType::kProfileUpdate, update);
  std::vector<zmq::const_buffer> out;
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  // Wait (up to sndtimeo) only while phasord was reachable; after a failure, try without waiting.
  const zmq::send_flags flags = reachable_ ? zmq::send_flags::none : zmq::send_flags::dontwait;
  bool ok = false;
  try {
    ok = zmq::send_multipart(socket_, out, flags).has_value();
  } catch (const zmq::error_t&) {
    ok = false;
  }
  if (ok) {
    ++sent_;
    if (!reachable_) {
      diagnostics_ << options_.program << ": --publish: phasord at " << options_.endpoint
                   << " reachable again; publishing profiles\n";
    }
    reachable_ = true;
    return true;
  }
  ++dropped_;
  if (reachable_) {
    diagnostics_ << options_.program << ": --publish: phasord at " << options_.endpoint
                 << " not reachable; profiles are not published until it is (JSON lines go on)\n";
  }
  reachable_ = false;
  return false;
}

nlohmann::json ProfilePublisher::SummaryJson() const {
  nlohmann::json skipped = nlohmann::json::object();
  for (const auto& [why, n] : skipped_) skipped[why] = n;
  return {{"publish",
           {{"endpoint", options_.endpoint}, {"sent", sent_}, {"dropped", dropped_}, {"skipped", skipped}}}};
}

}  // namespace phasor::probe
