#include "integrations/kubernetes/pod_watcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "integrations/kubernetes/api_server_client.h"
#include "integrations/kubernetes/k8s_names.h"
#include "spdlog/spdlog.h"

namespace phasor::kubernetes {
namespace {

using nlohmann::json;

// The resourceVersion of an object ("" when it has none).
std::string ResourceVersionOf(const json& object) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto rv = meta->find("resourceVersion");
  return rv != meta->end() && rv->is_string() ? rv->get<std::string>() : "";
}

// A Status object's code (410 for Gone), 0 when it is not one.
int StatusCodeOf(const json& object) {
  if (!object.is_object() || object.value("kind", "") != "Status") return 0;
  auto code = object.find("code");
  return code != object.end() && code->is_number_integer() ? code->get<int>() : 0;
}

// The body of an answer that is not 200, for a log line.
std::string Brief(const std::string& body) {
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("message") && doc["message"].is_string()) {
    return doc["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

}  // namespace

absl::StatusOr<PodState> PodStateFromJson(const json& object, absl::string_view field) {
  absl::StatusOr<Pod> pod = PodFromJson(object, field);
  if (!pod.ok()) return pod.status();
  PodState state;
  state.pod = *std::move(pod);
  if (auto spec = object.find("spec"); spec != object.end() && spec->is_object()) {
    if (auto node = spec->find("nodeName"); node != spec->end() && node->is_string()) state.node = node->get<std::string>();
  }
  if (auto status = object.find("status"); status != object.end() && status->is_object()) {
    const std::string phase = status->value("phase", "");
    state.finished = phase == "Succeeded" || phase == "Failed";
  }
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    if (auto deleting = meta->find("deletionTimestamp"); deleting != meta->end() && !deleting->is_null()) {
      state.finished = true;
    }
  }
  return state;
}

PodSink ExtenderSink(Extender& extender) {
  return {[&extender](const std::vector<PodState>& pods) { extender.OnPodList(pods); },
          [&extender](const PodState& pod) { extender.OnPodUpdate(pod); },
          [&extender](const Pod& pod) { extender.OnPodDeleted(pod); }};
}

absl::StatusOr<std::unique_ptr<PodWatcher>> PodWatcher::Start(PodWatcherOptions options, PodSink sink) {
  if (absl::Status s = CheckApiServerUrl(options.api.url); !s.ok()) return s;
  if (options.api.timeout_ms < 1) return absl::InvalidArgumentError("api_timeout_ms: must be > 0");
  if (options.scheduler_name.empty()) return absl::InvalidArgumentError("scheduler_name: required");
  if (options.list_page_size < 1) return absl::InvalidArgumentError("list_page_size: must be > 0");
  if (options.watch_timeout_s < 1) return absl::InvalidArgumentError("watch_timeout_s: must be > 0");
  if (options.max_event_bytes < 1024) return absl::InvalidArgumentError("max_event_bytes: must be >= 1024");
  if (options.retry_ms < 1) return absl::InvalidArgumentError("retry_ms: must be > 0");
  if (!sink.list || !sink.update || !sink.deleted) return absl::InvalidArgumentError("sink: every callback is required");
  std::unique_ptr<PodWatcher> w(new PodWatcher(std::move(options), std::move(sink)));
  w->thread_ = std::thread([raw = w.get()] { raw->Loop(); });
  return w;
}

PodWatcher::PodWatcher(PodWatcherOptions options, PodSink sink)
    : options_(std::move(options)), sink_(std::move(sink)) {}

PodWatcher::~PodWatcher() { Stop(); }

void PodWatcher::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  // A request in flight is cut by shutting its socket; one that was still
  // connecting when the flag went up is cut at the next turn.
  while (!done_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (client_) client_->stop();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  thread_.join();
}

PodWatcherStats PodWatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string PodWatcher::Selector() const {
  return absl::StrCat("fieldSelector=", EscapeQueryValue(absl::StrCat("spec.schedulerName=", options_.scheduler_name)));
}

absl::StatusOr<httplib::Client*> PodWatcher::NewClient(int read_timeout_ms,
                                                       std::vector<std::pair<std::string, std::string>>& headers) {
  absl::StatusOr<ApiServerClient> api = MakeApiServerClient(options_.api, read_timeout_ms);
  if (!api.ok()) return api.status();
  headers.assign(api->headers.begin(), api->headers.end());
  std::lock_guard<std::mutex> lock(mu_);
  client_ = std::move(api->client);
  return client_.get();
}

void PodWatcher::SleepFor(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stopping_ && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 20)));
  }
}

void PodWatcher::Loop() {
  std::string resource_version;
  bool listed = false;
  int backoff_ms = options_.retry_ms;
  while (!stopping_) {
    bool gone = false;
    absl::Status s = listed ? Watch(resource_version, gone) : List(resource_version, gone);
    if (stopping_) break;
    if (gone) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.gone;
      spdlog::info("phasor-k8s-extender: the API server's resourceVersion {} is gone (410): listing again",
                   resource_version);
      listed = false;
      resource_version.clear();
      backoff_ms = options_.retry_ms;
      continue;
    }
    if (s.ok()) {
      listed = true;  // a list done, or a watch the server ended: watch on
      backoff_ms = options_.retry_ms;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.failures;
    }
    spdlog::warn("phasor-k8s-extender: {} of pods failed: {} (again in {} ms)", listed ? "watch" : "list",
                 std::string(s.message()), backoff_ms);
    SleepFor(backoff_ms);
    backoff_ms = std::min(backoff_ms * 2, 30'000);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    client_.reset();
  }
  done_ = true;
}

absl::Status PodWatcher::List(std::string& resource_version, bool& gone) {
  std::vector<PodState> pods;
  std::string next;
  do {
    std::vector<std::pair<std::string, std::string>> headers;
    absl::StatusOr<httplib::Client*> client = NewClient(options_.api.timeout_ms, headers);
    if (!client.ok()) return client.status();
    std::string path = absl::StrCat("/api/v1/pods?", Selector(), "&limit=", options_.list_page_size);
    if (!next.empty()) absl::StrAppend(&path, "&continue=", EscapeQueryValue(next));
    httplib::Headers h(headers.begin(), headers.end());
    httplib::Result res = (*client)->Get(path.c_str(), h);
    if (stopping_) return absl::CancelledError("stopping");
    if (!res) return absl::UnavailableError(absl::StrCat("GET /api/v1/pods: ", httplib::to_string(res.error())));
    if (res->status == 410) {
      gone = true;  // the continuation expired
      return absl::OkStatus();
    }
    if (res->status != 200) {
      return absl::UnavailableError(absl::StrCat("GET /api/v1/pods answered ", res->status, ": ", Brief(res->body)));
    }
    json doc = json::parse(res->body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return absl::InvalidArgumentError("pod list: not a JSON object");
    const json items = doc.value("items", json::array());
    if (!items.is_array()) return absl::InvalidArgumentError("pod list: items: must be an array");
    for (size_t i = 0; i < items.size(); ++i) {
      absl::StatusOr<PodState> p = PodStateFromJson(items[i], absl::StrCat("items[", i, "]"));
      if (!p.ok()) {
        spdlog::warn("phasor-k8s-extender: pod list: {} (skipped)", std::string(p.status().message()));
        continue;
      }
      pods.push_back(*std::move(p));
    }
    const json meta = doc.value("metadata", json::object());
    resource_version = meta.is_object() ? meta.value("resourceVersion", "") : "";
    next = meta.is_object() ? meta.value("continue", "") : "";
  } while (!next.empty() && !stopping_);
  if (resource_version.empty()) return absl::InvalidArgumentError("pod list: metadata.resourceVersion: missing");
  sink_.list(pods);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.lists;
  return absl::OkStatus();
}

absl::Status PodWatcher::Watch(std::string& resource_version, bool& gone) {
  std::vector<std::pair<std::string, std::string>> headers;
  // Silent for longer than the watch may last: the server hung.
  absl::StatusOr<httplib::Client*> client = NewClient((options_.watch_timeout_s + 30) * 1000, headers);
  if (!client.ok()) return client.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.watches;
  }
  const std::string path =
      absl::StrCat("/api/v1/pods?", Selector(), "&watch=true&allowWatchBookmarks=true&resourceVersion=",
                   EscapeQueryValue(resource_version), "&timeoutSeconds=", options_.watch_timeout_s);
  httplib::Headers h(headers.begin(), headers.end());
  int status = 0;
  std::string line;     // the event being read
  std::string refused;  // the body of an answer that is not 200
  absl::Status bad = absl::OkStatus();
  auto take = [&](const std::string& text) -> bool {
    json event = json::parse(text, nullptr, false);
    if (event.is_discarded() || !event.is_object()) {
      bad = absl::InvalidArgumentError("watch event: not a JSON object");
      return false;
    }
    const std::string type = event.value("type", "");
    const json& object = event.contains("object") ? event["object"] : json();
    if (type == "ERROR") {
      if (StatusCodeOf(object) == 410) {
        gone = true;
      } else {
        bad = absl::UnavailableError(absl::StrCat("watch ERROR event: ", object.dump().substr(0, 200)));
      }
      return false;
    }
    const std::string rv = ResourceVersionOf(object);
    if (type == "BOOKMARK") {
      if (!rv.empty()) resource_version = rv;
      return true;
    }
    if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") {
      bad = absl::InvalidArgumentError(absl::StrCat("watch event: type '", type.substr(0, 32), "' is not known"));
      return false;
    }
    absl::StatusOr<PodState> pod = PodStateFromJson(object, "watch event object");
    if (!pod.ok()) {
      spdlog::warn("phasor-k8s-extender: {} (skipped)", std::string(pod.status().message()));
    } else if (type == "DELETED") {
      sink_.deleted(pod->pod);
    } else {
      sink_.update(*pod);
    }
    if (!rv.empty()) resource_version = rv;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.events;
    return true;
  };
  httplib::Result res = (*client)->Get(
      path.c_str(), h,
      [&](const httplib::Response& r) {
        status = r.status;
        return true;
      },
      [&](const char* data, size_t length) {
        if (stopping_) return false;
        if (status != 200) {
          refused.append(data, std::min(length, size_t{4096} - std::min(refused.size(), size_t{4096})));
          return true;
        }
        // One event per line; a line is held until it is whole, and no longer
        // than max_event_bytes.
        size_t start = 0;
        for (size_t i = 0; i < length; ++i) {
          if (data[i] != '\n') continue;
          line.append(data + start, i - start);
          start = i + 1;
          if (!line.empty() && !take(line)) return false;
          line.clear();
        }
        line.append(data + start, length - start);
        if (line.size() > options_.max_event_bytes) {
          bad = absl::ResourceExhaustedError(
              absl::StrCat("watch event: above max_event_bytes (", options_.max_event_bytes, ")"));
          return false;
        }
        return true;
      });
  if (stopping_) return absl::CancelledError("stopping");
  if (gone || status == 410) {
    gone = true;
    return absl::OkStatus();
  }
  if (!bad.ok()) return bad;
  if (status != 0 && status != 200) {
    return absl::UnavailableError(absl::StrCat("watch answered ", status, ": ", Brief(refused)));
  }
  if (!res) return absl::UnavailableError(absl::StrCat("watch: ", httplib::to_string(res.error())));
  if (!line.empty() && !take(line)) return gone ? absl::OkStatus() : bad;
  return absl::OkStatus();  // the server ended the watch (timeoutSeconds): watch on from resource_version
}

}  // namespace phasor::kubernetes
