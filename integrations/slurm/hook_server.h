// The controller's request protocol, and its Unix socket (the hook's, and
// the Prolog's and Epilog's on a single host; node_server.h carries the same
// requests over TCP with CURVE from other hosts).
//
// One request per connection (or per ZeroMQ message): "key=value" lines,
// values percent-encoded (%XX for any byte outside [A-Za-z0-9._-,:/@+=[]],
// so a job field may hold any character), at most kMaxHookMessageBytes;
// the reply is the same. Requests:
//   op=submit comment=C deadline_us=T <job_desc fields>
//        -> ok=1 token=T comment=C' [nodes=a,b node_count=k candidate=c0 score=S]
//           (no nodes: the job waits, phasor places it when it can start;
//           unpinned=REASON says why)
//   op=start job=ID token=T nodelist=L node=N   -> ok=1   (Prolog)
//   op=end job=ID node=N                        -> ok=1   (Epilog, every job)
//   op=ping                                     -> ok=1 placed=N polled=0|1
// Any failure is "ok=0" with "reason=TEXT". deadline_us (system clock) is
// when the client gives up: the controller does not work past it, and
// drops a proposal whose answer it could not deliver.
//
// The Unix socket is created mode 0600 (only its owner, the SlurmUser, may
// talk to it). Threads: Serve() accepts on one thread and answers each
// connection on a thread of its own (at most kMaxConnections at once), so a
// slow Prolog never holds up a submission; Stop() may be called from any
// thread.
#ifndef PHASOR_INTEGRATIONS_SLURM_HOOK_SERVER_H_
#define PHASOR_INTEGRATIONS_SLURM_HOOK_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "integrations/slurm/controller.h"
#include "integrations/slurm/hook_client.h"

namespace phasor::slurm {

// Percent-encoding of values (EncodeHookValue never fails; DecodeHookValue
// is InvalidArgument for a '%' not followed by two hex digits).
std::string EncodeHookValue(absl::string_view value);
absl::StatusOr<std::string> DecodeHookValue(absl::string_view value);

// Parses "key=value" lines, decoding values. InvalidArgument naming the
// line for a line without '=', an empty or repeated key, a bad encoding, or
// more than kMaxHookMessageBytes.
absl::StatusOr<std::map<std::string, std::string>> ParseHookLines(absl::string_view text);

// What a transport lets a client ask.
enum class HookAccess {
  kAll,        // the hook's Unix socket
  kLifecycle,  // compute nodes: start, end, ping
};

// Answers one request (the reply text). Never fails: errors are "ok=0".
// `token` (when given) receives the token of a submit's answer, so the
// transport can drop an answer it could not deliver
// (SlurmController::Abandon).
std::string AnswerHookRequest(SlurmController& controller, absl::string_view request, HookAccess access,
                              std::string* token = nullptr);

class HookServer {
 public:
  static constexpr int kMaxConnections = 32;

  // Binds `socket_path` (removing a stale socket file first). Unavailable
  // when it cannot.
  static absl::StatusOr<std::unique_ptr<HookServer>> Listen(const std::string& socket_path, SlurmController* controller);
  ~HookServer();

  // Serves until Stop(); returns when every connection has been answered.
  void Serve();
  void Stop() { stop_ = true; }

 private:
  HookServer(int fd, std::string path, SlurmController* controller)
      : fd_(fd), path_(std::move(path)), controller_(controller) {}
  void Answer(int conn);

  int fd_;
  std::string path_;
  SlurmController* controller_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable idle_;
  int active_ = 0;
};

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_HOOK_SERVER_H_
