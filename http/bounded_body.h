// Request bodies with a hard bound, whatever their transfer encoding.
//
// cpp-httplib checks its payload limit against Content-Length only: a body
// sent chunked (or without a length, or compressed) is read whole into
// memory, and a POST to a path without a handler is read whole before the
// 404. PostBounded handlers read the body through httplib's content reader,
// counting what arrives (after decompression), and stop at max_body_bytes:
// the request gets 413 and no more of it is kept, so a request holds at most
// max_body_bytes plus one read buffer. GuardBodies answers every other
// request that carries a body (another method, or a path no PostBounded
// handler serves) at once, before anything of its body is read.
//
// Call both before the server listens. Handlers run on the server's threads.
#ifndef PHASOR_HTTP_BOUNDED_BODY_H_
#define PHASOR_HTTP_BOUNDED_BODY_H_

#include <cstddef>
#include <functional>
#include <set>
#include <string>

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace phasor::http {

// Handles a POST whose whole body (at most max_body_bytes) is `body`.
using BodyHandler = std::function<void(const httplib::Request& req, const std::string& body, httplib::Response& res)>;

struct BodyLimit {
  size_t max_body_bytes = 0;  // the largest body kept
  int drain_ms = 1000;        // how long the rest of a larger one is read and dropped
  int read_ms = 0;            // the longest a whole body may take to arrive (0: no bound); then 408
};

// Serves POST `path` (an exact path) with `handler` for bodies up to
// limit.max_body_bytes; larger ones get 413 (and Connection: close) with a
// line naming the limit, one slower than limit.read_ms in all 408, a body that
// cannot be read 400. Also sets httplib's
// own Content-Length limit, so a declared length above the bound is refused
// (and skipped) without being kept.
void PostBounded(httplib::Server& server, const std::string& path, BodyLimit limit, BodyHandler handler);

// Requests that carry a body (Content-Length above 0, or Transfer-Encoding)
// to anything but a POST of `bounded_paths` are answered 404 (unknown path)
// or 405 (known path, other method) before their body is read.
void GuardBodies(httplib::Server& server, std::set<std::string> bounded_paths);

}  // namespace phasor::http

#endif  // PHASOR_HTTP_BOUNDED_BODY_H_
