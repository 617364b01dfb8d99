#include "integrations/slurm/hook_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/ascii.h"
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

std::string Fail(absl::string_view reason) { return absl::StrCat("ok=0\nreason=", EncodeHookValue(reason), "\n"); }

std::string Get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

// Bytes a value carries as they are; every other is %XX.
bool Plain(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || absl::string_view("._-,:/@+=[]").find(c) != absl::string_view::npos;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string EncodeHookValue(absl::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (Plain(c)) {
      out.push_back(c);
    } else {
      const unsigned char u = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

absl::StatusOr<std::string> DecodeHookValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '%') {
      out.push_back(value[i]);
      continue;
    }
    const int hi = i + 2 < value.size() ? HexDigit(value[i + 1]) : -1;
    const int lo = i + 2 < value.size() ? HexDigit(value[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(absl::StrCat("'%' at byte ", i, " is not followed by two hex digits"));
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ParseHookLines(absl::string_view text) {
  if (text.size() > kMaxHookMessageBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("request: ", text.size(), " bytes exceed the limit of ", kMaxHookMessageBytes));
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
    absl::StatusOr<std::string> value = DecodeHookValue(line.substr(eq + 1));
    if (!value.ok()) return absl::InvalidArgumentError(absl::StrCat("request line ", line_no, ": ", value.status().message()));
    if (!out.emplace(key, *std::move(value)).second) {
      return absl::InvalidArgumentError(absl::StrCat("request line ", line_no, ": '", key, "' given twice"));
    }
  }
  return out;
}

std::string AnswerHookRequest(SlurmController& controller, absl::string_view request, HookAccess access,
                              std::string* token) {
  absl::StatusOr<std::map<std::string, std::string>> fields = ParseHookLines(request);
  if (!fields.ok()) return Fail(fields.status().message());
  const std::string op = Get(*fields, "op");
  if (op == "submit") {
    if (access != HookAccess::kAll) return Fail("op: submit is taken on the hook's socket only");
    SubmitQuery q;
    q.comment = Get(*fields, "comment");
    if (const std::string d = Get(*fields, "deadline_us"); !d.empty() && !absl::SimpleAtoi(d, &q.deadline_us)) {
      return Fail("deadline_us: not a number");
    }
    for (const auto& [k, v] : *fields) {
      if (k != "op" && k != "comment" && k != "deadline_us") q.fields[k] = v;
    }
    absl::StatusOr<SubmitAnswer> a = controller.Submit(q);
    if (!a.ok()) return Fail(a.status().message());
    if (token != nullptr) *token = a->token;
    std::string reply = absl::StrCat("ok=1\ntoken=", a->token, "\ncomment=", EncodeHookValue(a->comment), "\n");
    if (a->nodes.empty()) {
      absl::StrAppend(&reply, "unpinned=", EncodeHookValue(a->unpinned_because), "\n");
    } else {
      absl::StrAppend(&reply, "nodes=", absl::StrJoin(a->nodes, ","), "\nnode_count=", a->node_count,
                      "\ncandidate=", a->candidate, "\nscore=", a->score, "\n");
    }
    return reply;
  }
  if (op == "start") {
    std::vector<std::string> nodes;
    if (const std::string list = Get(*fields, "nodelist"); !list.empty()) {
      absl::StatusOr<std::vector<std::string>> expanded = topology::ExpandHostList(list);
      if (!expanded.ok()) return Fail(absl::StrCat("nodelist: ", expanded.status().message()));
      nodes = *std::move(expanded);
    }
    std::vector<std::string> ring;
    absl::Status s = controller.Start(Get(*fields, "job"), Get(*fields, "token"), nodes, &ring);
    if (!s.ok()) return Fail(s.message());
    // The job's nodes in its ring's order (the TaskProlog's PHASOR_NODE_RANK).
    return ring.empty() ? std::string("ok=1\n") : absl::StrCat("ok=1\nring=", absl::StrJoin(ring, ","), "\n");
  }
  if (op == "end") {
    absl::Status s = controller.End(Get(*fields, "job"), Get(*fields, "node"));
    return s.ok() ? "ok=1\n" : Fail(s.message());
  }
  if (op == "ping") {
    return absl::StrCat("ok=1\nplaced=", controller.Placed().size(), "\npolled=", controller.HasState() ? 1 : 0, "\n");
  }
  return Fail(absl::StrCat("op: '", op.substr(0, 32), "' is not submit, start, end or ping"));
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

void HookServer::Answer(int conn) {
  std::string request;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadDeadlineMs);
  bool complete = false;
  while (request.size() <= kMaxHookMessageBytes) {
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
  std::string token;
  if (!complete) {
    reply = Fail(request.size() > kMaxHookMessageBytes ? "request: too long" : "request: not finished in time");
  } else {
    reply = AnswerHookRequest(*controller_, request, HookAccess::kAll, &token);
  }
  // The client may be gone (a submit past its deadline): never die on
  // SIGPIPE, and drop what it did not take.
  size_t sent = 0;
  while (sent < reply.size()) {
    const ssize_t n = ::send(conn, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::close(conn);
  if (sent < reply.size() && !token.empty()) controller_->Abandon(token);
  if (reply.rfind("ok=0", 0) == 0) {
    absl::StatusOr<std::map<std::string, std::string>> r = ParseHookLines(reply);
    spdlog::info("phasor slurm: {}", r.ok() ? Get(*r, "reason") : reply);
  }
}

void HookServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (active_ >= kMaxConnections) {
        const std::string busy = Fail("controller: too many requests at once");
        (void)::send(conn, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(conn);
        continue;
      }
      ++active_;
    }
    std::thread([this, conn] {
      Answer(conn);
      std::lock_guard<std::mutex> lock(mu_);
      --active_;
      idle_.notify_all();
    }).detach();
  }
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return active_ == 0; });
}

}  // namespace phasor::slurm
