// The local socket between phasor's Slurm scripts (job_submit.lua through
// phasor-slurm-ask, Prolog, Epilog) and the SlurmController.
//
// One request per connection: the client writes "key=value" lines (at most
// kMaxRequestBytes, keys and values without '\n'), shuts down its write
// side, and reads the reply, also "key=value" lines; the server closes.
//   op=submit nodes=N comment=TEXT      -> ok=1 nodes=a,b token=T candidate=c0 score=S
//   op=start token=T job=ID nodelist=L  -> ok=1
//   op=end job=ID                       -> ok=1
//   op=ping                             -> ok=1 placed=N
// Any failure is "ok=0" with "reason=TEXT" (one line). The socket is a Unix
// domain socket created with mode 0600 (only its owner, the SlurmUser, may
// talk to it).
//
// Threads: Serve() runs on one thread and handles one connection at a time,
// with a per-connection read deadline; Stop() may be called from any thread.
#ifndef PHASOR_INTEGRATIONS_SLURM_HOOK_SERVER_H_
#define PHASOR_INTEGRATIONS_SLURM_HOOK_SERVER_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "integrations/slurm/controller.h"

namespace phasor::slurm {

inline constexpr size_t kMaxRequestBytes = 4096;

// Parses "key=value" lines. InvalidArgument naming the line for a line
// without '=', an empty or repeated key, or more than kMaxRequestBytes.
absl::StatusOr<std::map<std::string, std::string>> ParseHookLines(std::string_view text);

// Answers one request (the reply text). Never fails: errors are "ok=0".
std::string AnswerHookRequest(SlurmController& controller, std::string_view request);

// Sends one request to the server at `socket_path` and returns its reply
// text. Unavailable when nothing listens or no reply comes within
// `timeout_ms`.
absl::StatusOr<std::string> AskHookServer(const std::string& socket_path, std::string_view request, int timeout_ms);

class HookServer {
 public:
  // Binds `socket_path` (removing a stale socket file first). Unavailable
  // when it cannot.
  static absl::StatusOr<std::unique_ptr<HookServer>> Listen(const std::string& socket_path, SlurmController* controller);
  ~HookServer();

  // Serves until Stop().
  void Serve();
  void Stop() { stop_ = true; }

 private:
  HookServer(int fd, std::string path, SlurmController* controller)
      : fd_(fd), path_(std::move(path)), controller_(controller) {}
  int fd_;
  std::string path_;
  SlurmController* controller_;
  std::atomic<bool> stop_{false};
};

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_HOOK_SERVER_H_
