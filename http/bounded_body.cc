#include "http/bounded_body.h"

#include <httplib.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace phasor::http {

void PostBounded(httplib::Server& server, const std::string& path, BodyLimit limit, BodyHandler handler) {
  // httplib refuses a declared Content-Length above this (413, the body
  // skipped, nothing kept); the counting below holds for the encodings
  // without one (chunked, none, compressed).
  server.set_payload_max_length(limit.max_body_bytes);
  server.Post(path, [limit, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                                         const httplib::ContentReader& read) {
    std::string body;
    // A body of a known length is held in one allocation of that length; one
    // of unknown length that outgrows 1 MiB gets the limit reserved (pages
    // are only touched as it is written), so growing it never holds two
    // copies: at most max_body_bytes plus 1 MiB in all.
    const uint64_t declared = req.get_header_value<uint64_t>("Content-Length");
    if (declared > 0 && declared <= limit.max_body_bytes) body.reserve(declared);
    constexpr size_t kGrowFreely = 1u << 20;
    bool too_large = false;
    bool too_slow = false;
    const auto started = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point drain_until;
    const bool complete = read([&](const char* data, size_t length) {
      if (limit.read_ms > 0 && std::chrono::steady_clock::now() - started > std::chrono::milliseconds(limit.read_ms)) {
        too_slow = true;
        return false;
      }
      if (!too_large && length <= limit.max_body_bytes - body.size()) {
        if (body.size() + length > body.capacity() && body.size() + length > kGrowFreely) {
          body.reserve(limit.max_body_bytes);
        }
        body.append(data, length);
        return true;
      }
      if (!too_large) {
        too_large = true;
        std::string().swap(body);  // nothing of an oversized body is kept
        drain_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit.drain_ms);
      }
      return std::chrono::steady_clock::now() < drain_until;
    });
    if (too_large || res.status == 413) {
      res.status = 413;
      res.set_header("Connection", "close");
      res.set_content(absl::StrCat("request body above max_body_bytes (", limit.max_body_bytes, ")\n"),
                      "text/plain");
      return;
    }
    if (too_slow) {
      res.status = 408;
      res.set_header("Connection", "close");
      res.set_content(absl::StrCat("request body slower than ", limit.read_ms, " ms\n"), "text/plain");
      return;
    }
    if (!complete) {
      res.status = 400;
      res.set_header("Connection", "close");
      res.set_content("request body could not be read\n", "text/plain");
      return;
    }
    handler(req, body, res);
  });
}

void GuardBodies(httplib::Server& server, std::set<std::string> bounded_paths) {
  server.set_pre_routing_handler([paths = std::move(bounded_paths)](const httplib::Request& req,
                                                                   httplib::Response& res) {
    const bool has_body = req.get_header_value<uint64_t>("Content-Length") > 0 || req.has_header("Transfer-Encoding");
    if (!has_body || (req.method == "POST" && paths.contains(req.path))) return httplib::Server::HandlerResponse::Unhandled;
    res.status = paths.contains(req.path) ? 405 : 404;
    res.set_header("Connection", "close");
    res.set_content(absl::StrCat(req.method, " ", req.path, ": not served with a body\n"), "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
}

}  // namespace phasor::http
