#include "integrations/client/profile_publisher.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "integrations/client/client.h"
#include "protocol/endpoint.h"
#include "protocol/framing.h"
#include "zmq_addon.hpp"

namespace phasor::client {

v1::ProfileUpdate ToProfileUpdate(const std::string& subject, v1::ProfileUpdate::SubjectKind kind,
                                  const std::string& source, const probe::ExtractedProfile& p) {
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

absl::StatusOr<protocol::CurveClientKeys> LoadPublishKeys(const std::string& server_key_file,
                                                          const std::string& client_key_prefix) {
  if (server_key_file.empty() != client_key_prefix.empty()) {
    return absl::InvalidArgumentError("--publish-server-key and --publish-keys: give both or neither");
  }
  return protocol::LoadCurveClientKeys(server_key_file, client_key_prefix, "--publish-server-key", "--publish-keys");
}

absl::StatusOr<std::unique_ptr<ProfilePublisher>> ProfilePublisher::Create(const PublisherOptions& options,
                                                                           std::ostream& diagnostics) {
  const std::vector<std::string> endpoints = SplitEndpoints(options.endpoint);
  if (endpoints.empty()) return absl::InvalidArgumentError("--publish: required");
  for (const std::string& e : endpoints) {
    if (absl::Status s = options.curve ? protocol::CheckEndpoint("--publish", e)
                                       : protocol::CheckPlainEndpoint("--publish", e,
                                                                      "give --publish-server-key and --publish-keys");
        !s.ok()) {
      return s;
    }
  }
  if (options.send_timeout_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--publish-timeout-ms: ", options.send_timeout_ms, " is negative"));
  }
  if (options.queue < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--publish-queue: ", options.queue, " is below 1"));
  }
  std::unique_ptr<ProfilePublisher> p(new ProfilePublisher(options, diagnostics));
  for (const std::string& e : endpoints) {
    try {
      zmq::socket_t socket(p->context_, zmq::socket_type::push);
      socket.set(zmq::sockopt::immediate, 1);  // queue only towards a connected phasord
      socket.set(zmq::sockopt::sndhwm, options.queue);
      // Several endpoints: a dead one must not hold up the others.
      socket.set(zmq::sockopt::sndtimeo, endpoints.size() > 1 ? 0 : options.send_timeout_ms);
      socket.set(zmq::sockopt::linger, options.linger_ms);
      if (options.curve) {
        if (absl::Status s = client::ApplyCurve(socket, *options.curve); !s.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("--publish-keys: ", s.message()));
        }
      }
      socket.connect(e);
      p->sockets_.push_back(std::move(socket));
    } catch (const zmq::error_t& err) {
      return absl::InvalidArgumentError(absl::StrCat("--publish: cannot connect to '", e, "': ", err.what()));
    }
  }
  return p;
}

bool ProfilePublisher::Publish(const v1::ProfileUpdate& update) {
  const std::vector<std::string> frames = protocol::EncodeFrames(protocol::MessageType::kProfileUpdate, update);
  std::vector<zmq::const_buffer> out;
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  // Wait (up to sndtimeo) only while phasord was reachable; after a failure, try without waiting.
  const zmq::send_flags flags = reachable_ ? zmq::send_flags::none : zmq::send_flags::dontwait;
  bool ok = false;  // at least one phasord took it
  for (zmq::socket_t& socket : sockets_) {
    try {
      ok = zmq::send_multipart(socket, out, flags).has_value() || ok;
    } catch (const zmq::error_t&) {
    }
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

}  // namespace phasor::client
