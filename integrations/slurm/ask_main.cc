// phasor-slurm-ask SOCKET TIMEOUT_MS: forwards one request (stdin, at most
// 4096 bytes) to phasor's Slurm controller on its Unix socket and prints the
// reply. job_submit.lua runs it, with a fixed path, when Lua has no
// socket.unix (LuaSocket); the request comes on stdin, so no job field ever
// reaches a shell command line.
//
// Bounded: the whole run ends within TIMEOUT_MS (1..10000) whatever the
// controller does. The exchange (hook_client.h, the same client the Prolog
// and Epilog use) gets the bound less a tenth, so the failure is printed in
// time, and a SIGALRM backstop ends the process at the bound itself. The
// request carries the deadline, so the controller drops a submit this helper
// gave up on. On any failure it prints "ok=0" and "reason=..." and exits 1.
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "integrations/slurm/hook_client.h"

namespace {

int Fail(const std::string& what) {
  std::printf("ok=0\nreason=phasor-slurm-ask: %s\n", what.c_str());
  std::fflush(stdout);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using phasor::slurm::kMaxHookMessageBytes;
  const int64_t start = phasor::slurm::MonotonicMs();
  if (argc != 3) return Fail("usage: phasor-slurm-ask SOCKET TIMEOUT_MS");
  char* end = nullptr;
  const long timeout_ms = std::strtol(argv[2], &end, 10);
  if (end == argv[2] || *end != '\0' || timeout_ms < 1 || timeout_ms > 10000) return Fail("TIMEOUT_MS: not 1..10000");
  itimerval alarm{};
  alarm.it_value.tv_sec = timeout_ms / 1000;
  alarm.it_value.tv_usec = (timeout_ms % 1000) * 1000;
  setitimer(ITIMER_REAL, &alarm, nullptr);
  const int64_t deadline = start + std::max(1L, timeout_ms - std::max(1L, timeout_ms / 10));

  // stdin is a file (job_submit.lua writes the request first): read it whole.
  std::string request;
  char buf[1024];
  ssize_t n;
  while (request.size() <= kMaxHookMessageBytes && (n = ::read(0, buf, sizeof(buf))) > 0) {
    request.append(buf, static_cast<size_t>(n));
  }
  if (request.size() > kMaxHookMessageBytes) return Fail("stdin: request above 4096 bytes");
  phasor::slurm::HookExchange e = phasor::slurm::AskUnixSocket(argv[1], request, deadline);
  if (!e.ok) return Fail(e.reply);
  std::fwrite(e.reply.data(), 1, e.reply.size(), stdout);
  std::fflush(stdout);
  return e.reply.rfind("ok=1", 0) == 0 ? 0 : 1;
}
