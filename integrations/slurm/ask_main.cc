// phasor-slurm-ask SOCKET TIMEOUT_MS: forwards one request (stdin, at most
// 4096 bytes) to phasor's Slurm controller on a Unix socket and prints its
// reply. job_submit.lua runs it with a fixed path and feeds it the request on
// stdin, so no job field ever reaches a shell command line.
//
// Bounded: the whole run ends within TIMEOUT_MS (1..10000) whatever the
// controller does: poll() deadlines on every step (at 90% of the bound), and
// a SIGALRM backstop that ends the process (the default action) at the bound. On any
// failure it prints "ok=0" and "reason=..." and exits 1.
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr size_t kMaxBytes = 4096;

long NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int Fail(const char* what) {
  std::printf("ok=0\nreason=phasor-slurm-ask: %s\n", what);
  std::fflush(stdout);
  return 1;
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool WaitFor(int fd, short events, long deadline_ms) {
  const long left = deadline_ms - NowMs();
  if (left <= 0) return false;
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, static_cast<int>(left)) > 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return Fail("usage: phasor-slurm-ask SOCKET TIMEOUT_MS");
  char* end = nullptr;
  const long timeout_ms = std::strtol(argv[2], &end, 10);
  if (end == argv[2] || *end != '\0' || timeout_ms < 1 || timeout_ms > 10000) return Fail("TIMEOUT_MS: not 1..10000");
  // The steps' deadline leaves a tenth of the bound (at least 1 ms) to print
  // the failure before the backstop fires at the bound itself.
  const long deadline = NowMs() + std::max(1L, timeout_ms - std::max(1L, timeout_ms / 10));
  itimerval alarm{};
  alarm.it_value.tv_sec = timeout_ms / 1000;
  alarm.it_value.tv_usec = (timeout_ms % 1000) * 1000;
  setitimer(ITIMER_REAL, &alarm, nullptr);

  std::string request;
  char buf[1024];
  while (request.size() <= kMaxBytes) {
    if (!WaitFor(0, POLLIN, deadline)) return Fail("stdin: not finished in time");
    const ssize_t n = ::read(0, buf, sizeof(buf));
    if (n < 0) return Fail("stdin: read failed");
    if (n == 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  if (request.size() > kMaxBytes) return Fail("stdin: request above 4096 bytes");

  sockaddr_un addr{};
  const size_t len = std::strlen(argv[1]);
  if (len == 0 || len >= sizeof(addr.sun_path)) return Fail("SOCKET: path too long");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, argv[1], len);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return Fail("socket() failed");
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) return Fail("controller: not listening");
    if (!WaitFor(fd, POLLOUT, deadline)) return Fail("controller: connect timed out");
  }
  size_t sent = 0;
  while (sent < request.size()) {
    if (!WaitFor(fd, POLLOUT, deadline)) return Fail("controller: send timed out");
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) return Fail("controller: send failed");
    if (n > 0) sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string reply;
  while (reply.size() <= kMaxBytes) {
    if (!WaitFor(fd, POLLIN, deadline)) return Fail("controller: no answer in time");
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EAGAIN) continue;
    if (n < 0) return Fail("controller: read failed");
    if (n == 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  if (reply.size() > kMaxBytes) return Fail("controller: reply above 4096 bytes");
  std::fwrite(reply.data(), 1, reply.size(), stdout);
  std::fflush(stdout);
  return reply.rfind("ok=1", 0) == 0 ? 0 : 1;
}
