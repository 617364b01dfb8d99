// Test helper: GET http://HOST:PORT/PATH with cpp-httplib; the body, or
// NotFound for a non-200 answer, Unavailable when nothing answers.
#ifndef PHASOR_TESTS_TESTING_HTTP_H_
#define PHASOR_TESTS_TESTING_HTTP_H_

#include <httplib.h>

#include <string>

#include "absl/status/statusor.h"

namespace phasor::testing {

inline absl::StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                                           int timeout_ms = 2000) {
  httplib::Client client(host, port);
  client.set_connection_timeout(timeout_ms / 1000, (timeout_ms % 1000) * 1000);
  client.set_read_timeout(timeout_ms / 1000, (timeout_ms % 1000) * 1000);
  httplib::Result res = client.Get(path.c_str());
  if (!res) return absl::UnavailableError(host + ":" + std::to_string(port) + ": " + httplib::to_string(res.error()));
  if (res->status != 200) return absl::NotFoundError(path + ": HTTP " + std::to_string(res->status));
  return res->body;
}

}  // namespace phasor::testing

#endif  // PHASOR_TESTS_TESTING_HTTP_H_
