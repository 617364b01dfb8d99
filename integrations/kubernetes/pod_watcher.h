// Follows the API server's pods of the scheduler (spec.schedulerName), the
// way Kubernetes clients do (client-go's reflector): a paged list gives every
// pod and a resourceVersion, then a watch from that resourceVersion streams
// each change (ADDED, MODIFIED, DELETED, BOOKMARK: one JSON object per line
// of a chunked, long-lived response). The next watch starts from the last
// resourceVersion seen. A 410 Gone (the version is too old: an HTTP status,
// or an ERROR event in the stream, or an expired list continuation) starts
// over with a list; any other failure is retried after `retry_ms`, doubling
// up to 30 s. What it sees goes to a PodSink (the Extender: placements,
// and the end of jobs, which it releases).
//
// Bounded: a watch event above `max_event_bytes` is an error (the watch
// starts over); a list is held page by page while it is assembled (every pod
// at once, as the sink reconciles against the whole list).
//
// Thread safety: runs on its own thread (the sink is called there); Stop()
// from another thread ends it promptly, even inside a long watch.
#ifndef PHASOR_INTEGRATIONS_KUBERNETES_POD_WATCHER_H_
#define PHASOR_INTEGRATIONS_KUBERNETES_POD_WATCHER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "integrations/kubernetes/api_binder.h"
#include "integrations/kubernetes/extender.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace phasor::kubernetes {

struct PodWatcherOptions {
  // The API server, its token and CA; timeout_ms bounds connecting, writing
  // and each list page.
  ApiServerOptions api;
  // The pods followed: spec.schedulerName (the scheduler profile the
  // extender serves; default "phasor-scheduler", deploy/kubernetes/).
  std::string scheduler_name = "phasor-scheduler";
  // Pods per list page (limit=, default 500).
  int list_page_size = 500;
  // timeoutSeconds of one watch (default 300): the API server ends it then
  // and a new one starts from the last resourceVersion. A watch silent for
  // this plus 30 s (a hung server) is dropped and started again.
  int watch_timeout_s = 300;
  // Largest watch event (one line) accepted (default 8 MiB).
  size_t max_event_bytes = 8u << 20;
  // Pause after a failure before trying again (default 1 s, doubling to 30 s).
  int retry_ms = 1000;
};

struct PodWatcherStats {
  uint64_t lists = 0;        // complete lists
  uint64_t watches = 0;      // watches started
  uint64_t events = 0;       // ADDED, MODIFIED, DELETED events taken
  uint64_t gone = 0;         // 410 Gone answers (each followed by a list)
  uint64_t failures = 0;     // failed requests, bad events (each followed by a retry)
};

// Where the pods go: the whole list, one change, one deletion.
struct PodSink {
  std::function<void(const std::vector<PodState>&)> list;
  std::function<void(const PodState&)> update;
  std::function<void(const Pod&)> deleted;
};
// The sink of an Extender (which must outlive the watcher).
PodSink ExtenderSink(Extender& extender);

// A pod object of the API server (JSON) as a PodState: the Pod of
// extender_types.h, spec.nodeName, and whether it finished (status.phase
// Succeeded or Failed, or metadata.deletionTimestamp set). `field` prefixes
// errors.
absl::StatusOr<PodState> PodStateFromJson(const nlohmann::json& object, absl::string_view field);

class PodWatcher {
 public:
  // InvalidArgument for bad options; the API server need not be up.
  static absl::StatusOr<std::unique_ptr<PodWatcher>> Start(PodWatcherOptions options, PodSink sink);
  ~PodWatcher();
  void Stop();
  PodWatcherStats stats() const;

 private:
  PodWatcher(PodWatcherOptions options, PodSink sink);
  void Loop();
  // The whole list, page by page; sets the resourceVersion to watch from.
  // `gone`: an expired continuation (start over).
  absl::Status List(std::string& resource_version, bool& gone);
  // One watch from resource_version until the server ends it or it fails;
  // `gone` on a 410.
  absl::Status Watch(std::string& resource_version, bool& gone);
  // The query selecting the scheduler's pods.
  std::string Selector() const;
  // Makes the client of one request, visible to Stop().
  absl::StatusOr<httplib::Client*> NewClient(int read_timeout_ms, std::vector<std::pair<std::string, std::string>>& headers);
  void SleepFor(int ms);

  PodWatcherOptions options_;
  PodSink sink_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> done_{false};
  mutable std::mutex mu_;
  std::unique_ptr<httplib::Client> client_;  // the request in flight (guarded by mu_)
  PodWatcherStats stats_;                    // guarded by mu_
  std::thread thread_;
};

}  // namespace phasor::kubernetes

#endif  // PHASOR_INTEGRATIONS_KUBERNETES_POD_WATCHER_H_
