#include "integrations/slurm/hook_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace phasor::slurm {
namespace {

// Waits for `events` on fd until the deadline; false when it passed or poll failed.
bool WaitUntil(int fd, short events, int64_t deadline_ms) {
  while (true) {
    const int64_t left = deadline_ms - MonotonicMs();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

HookExchange Failed(const std::string& why, bool timed_out = false) {
  HookExchange e;
  e.reply = why;
  e.timed_out = timed_out;
  return e;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int64_t SystemUs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

HookExchange AskUnixSocket(const std::string& socket_path, const std::string& request, int64_t deadline_ms) {
  const std::string text =
      request + "deadline_us=" + std::to_string(SystemUs() + (deadline_ms - MonotonicMs()) * 1000) + "\n";
  if (text.size() > kMaxHookMessageBytes) return Failed("request above 4096 bytes");
  sockaddr_un addr{};
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path)) {
    return Failed("socket '" + socket_path + "': path empty or too long");
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Failed(std::string("socket(): ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) {
      return Failed("controller at '" + socket_path + "': " + std::strerror(errno));
    }
    if (!WaitUntil(fd.get(), POLLOUT, deadline_ms)) return Failed("controller: connect timed out", true);
  }
  size_t sent = 0;
  while (sent < text.size()) {
    if (!WaitUntil(fd.get(), POLLOUT, deadline_ms)) return Failed("controller: send timed out", true);
    const ssize_t n = ::send(fd.get(), text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return Failed(std::string("controller: send failed: ") + std::strerror(errno));
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }
  ::shutdown(fd.get(), SHUT_WR);
  std::string reply;
  char buf[1024];
  while (true) {
    if (!WaitUntil(fd.get(), POLLIN, deadline_ms)) return Failed("controller: no answer in time", true);
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return Failed(std::string("controller: read failed: ") + std::strerror(errno));
    if (n == 0) break;
    reply.append(buf, static_cast<size_t>(n));
    if (reply.size() > kMaxHookMessageBytes) return Failed("controller: reply above 4096 bytes");
  }
  HookExchange e;
  e.ok = true;
  e.reply = std::move(reply);
  return e;
}

}  // namespace phasor::slurm
