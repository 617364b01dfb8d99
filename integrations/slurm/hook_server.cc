#include "integrations/slurm/hook_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "spdlog/spdlog.h"
#include "topology/slurm_import.h"

namespace phasor::slurm {
namespace {

// How long a connected client has to send its request.
constexpr int kReadDeadlineMs = 1000;

std::string Fail(absl::string_view reason) {
  std::string r(reason);
  for (char& c : r) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return absl::StrCat("ok=0\nreason=", r, "\n");
}

std::string Get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseHookLines(std::string_view text) {
  if (text.size() > kMaxRequestBytes) {
    return absl::InvalidArgumentError(absl::StrCat("request: ", text.size(), " bytes exceed the limit of ", kMaxRequestBytes));
  }
  std::map<std::string, std::string> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("request line ", line_no, ": expected key=value"));
    }
    std::string key(line.substr(0, eq));
    if (!out.emplace(key, std::string(line.substr(eq + 1))).second) {
      return absl::InvalidArgumentError(absl::StrCat("request line ", line_no, ": '", key, "' given twice"));
    }
  }
  return out;
}

std::string AnswerHookRequest(SlurmController& controller, std::string_view request) {
  absl::StatusOr<std::map<std::string, std::string>> fields = ParseHookLines(request);
  if (!fields.ok()) return Fail(fields.status().message());
  const std::string op = Get(*fields, "op");
  if (op == "submit") {
    SubmitQuery q;
    if (!absl::SimpleAtoi(Get(*fields, "nodes"), &q.nodes) || q.nodes == 0) {
      return Fail("nodes: must be a positive integer");
    }
    q.comment = Get(*fields, "comment");
    absl::StatusOr<Proposal> p = controller.Submit(q);
    if (!p.ok()) return Fail(p.status().message());
    return absl::StrCat("ok=1\nnodes=", absl::StrJoin(p->nodes, ","), "\ntoken=", p->token,
                        "\ncandidate=", p->candidate, "\nscore=", p->score, "\n");
  }
  if (op == "start") {
    std::vector<std::string> nodes;
    if (const std::string list = Get(*fields, "nodelist"); !list.empty()) {
      absl::StatusOr<std::vector<std::string>> expanded = topology::ExpandHostList(list);
      if (!expanded.ok()) return Fail(absl::StrCat("nodelist: ", expanded.status().message()));
      nodes = *std::move(expanded);
    }
    absl::Status s = controller.Start(Get(*fields, "token"), Get(*fields, "job"), nodes);
    return s.ok() ? "ok=1\n" : Fail(s.message());
  }
  if (op == "end") {
    absl::Status s = controller.End(Get(*fields, "job"));
    return s.ok() ? "ok=1\n" : Fail(s.message());
  }
  if (op == "ping") return absl::StrCat("ok=1\nplaced=", controller.Placed().size(), "\n");
  return Fail(absl::StrCat("op: '", op.substr(0, 32), "' is not submit, start, end or ping"));
}

absl::StatusOr<std::string> AskHookServer(const std::string& socket_path, std::string_view request, int timeout_ms) {
  sockaddr_un addr{};
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError("socket: path too long or empty");
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("controller at '", socket_path, "': ", why));
  }
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string reply;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0 && reply.size() <= kMaxRequestBytes) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (n < 0) return absl::UnavailableError(absl::StrCat("controller at '", socket_path, "': no answer in time"));
  return reply;
}

absl::StatusOr<std::unique_ptr<HookServer>> HookServer::Listen(const std::string& socket_path,
                                                               SlurmController* controller) {
  sockaddr_un addr{};
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket: the path must be 1..", sizeof(addr.sun_path) - 1, " characters"));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  ::unlink(socket_path.c_str());
  const mode_t old_mask = ::umask(0177);
  const int bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::umask(old_mask);
  if (bound != 0 || ::listen(fd, 64) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("socket: cannot listen on '", socket_path, "': ", why));
  }
  return std::unique_ptr<HookServer>(new HookServer(fd, socket_path, controller));
}

HookServer::~HookServer() {
  ::close(fd_);
  ::unlink(path_.c_str());
}

void HookServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    std::string request;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadDeadlineMs);
    bool complete = false;
    while (request.size() <= kMaxRequestBytes) {
      const int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      pollfd c{conn, POLLIN, 0};
      if (left <= 0 || ::poll(&c, 1, left) <= 0) break;
      char buf[1024];
      const ssize_t n = ::read(conn, buf, sizeof(buf));
      if (n == 0) {
        complete = true;
        break;
      }
      if (n < 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    std::string reply;
    if (!complete) {
      reply = Fail(request.size() > kMaxRequestBytes ? "request: too long" : "request: not finished in time");
    } else {
      reply = AnswerHookRequest(*controller_, request);
    }
    // The client may be gone (a submit that timed out): never die on SIGPIPE.
    size_t sent = 0;
    while (sent < reply.size()) {
      const ssize_t n = ::send(conn, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(conn);
    if (reply.rfind("ok=0", 0) == 0) spdlog::info("phasor slurm: {}", reply.substr(reply.find("reason=")));
  }
}

}  // namespace phasor::slurm
