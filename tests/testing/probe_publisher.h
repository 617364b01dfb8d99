// Test helper: a probe's ProfilePublisher (integrations/client) on a plain
// local endpoint, patient enough for a loaded test machine.
#ifndef PHASOR_TESTS_TESTING_PROBE_PUBLISHER_H_
#define PHASOR_TESTS_TESTING_PROBE_PUBLISHER_H_

#include <iostream>
#include <memory>
#include <string>

#include "integrations/client/profile_publisher.h"

namespace phasor::testing {

inline absl::StatusOr<std::unique_ptr<client::ProfilePublisher>> ConnectProbe(const std::string& endpoint) {
  client::PublisherOptions o;
  o.endpoint = endpoint;
  o.send_timeout_ms = 5000;
  o.program = "test-probe";
  return client::ProfilePublisher::Create(o, std::cerr);
}

}  // namespace phasor::testing

#endif  // PHASOR_TESTS_TESTING_PROBE_PUBLISHER_H_
