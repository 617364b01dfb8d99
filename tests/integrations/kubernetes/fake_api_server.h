// Test support: a stand-in for the Kubernetes API server that behaves like
// the real one where the extender depends on it.
//   - GET /api/v1/pods?fieldSelector=spec.schedulerName=S&limit=N[&continue=T]:
//     a paged PodList of the pods with that schedulerName, with
//     metadata.resourceVersion (and continue while pages remain).
//   - GET /api/v1/pods?...&watch=true&resourceVersion=RV: a chunked,
//     long-lived stream, one JSON event per line, of every change after RV;
//     HTTP 410 when RV is older than the history kept (Compact()); ends when
//     timeoutSeconds passes or EndWatches() is called; an ERROR event with a
//     410 Status when Compact(true) cuts a watch.
//   - POST /api/v1/namespaces/NS/pods/NAME/binding: binds (sets spec.nodeName,
//     a MODIFIED event), recorded.
// Every request's path (as received, still escaped) is recorded. Ephemeral
// port on 127.0.0.1; stopped by its destructor.
#ifndef PHASOR_TESTS_INTEGRATIONS_KUBERNETES_FAKE_API_SERVER_H_
#define PHASOR_TESTS_INTEGRATIONS_KUBERNETES_FAKE_API_SERVER_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

namespace phasor::testing {

class FakeApiServer {
 public:
  FakeApiServer() {
    server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) { Pods(req, res); });
    server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
                 [this](const httplib::Request& req, httplib::Response& res) { Bind(req, res); });
    // Recorded before the request is handled, so a client that got its
    // answer finds its path here.
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
      std::lock_guard<std::mutex> lock(mu_);
      paths_.push_back(req.target);
      return httplib::Server::HandlerResponse::Unhandled;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    changed_.notify_all();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // A pod of `scheduler` (metadata.namespace, name, uid; labels, annotations).
  static nlohmann::json Pod(const std::string& ns, const std::string& name, const std::string& scheduler,
                            const nlohmann::json& labels, const nlohmann::json& annotations) {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", name}, {"namespace", ns}, {"uid", ns + "-" + name + "-uid"}, {"labels", labels},
              {"annotations", annotations}}},
            {"spec", {{"schedulerName", scheduler}, {"containers", nlohmann::json::array()}}},
            {"status", {{"phase", "Pending"}}}};
  }

  // Changes, each an event to the watches open.
  void Add(nlohmann::json pod) { Change("ADDED", std::move(pod)); }
  void SetNode(const std::string& ns, const std::string& name, const std::string& node) {
    Modify(ns, name, [&](nlohmann::json& p) {
      p["spec"]["nodeName"] = node;
      p["status"]["phase"] = "Running";
    });
  }
  void SetPhase(const std::string& ns, const std::string& name, const std::string& phase) {
    Modify(ns, name, [&](nlohmann::json& p) { p["status"]["phase"] = phase; });
  }
  void Delete(const std::string& ns, const std::string& name, bool tell_watches = true) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return;
    nlohmann::json pod = it->second;
    pods_.erase(it);
    pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
    if (tell_watches) history_.push_back({rv_, "DELETED", pod});
    changed_.notify_all();
  }
  // Forgets the history (etcd's compaction): a watch from an older version
  // gets 410 at its start; with cut_watches, the open ones get an ERROR
  // event with a 410 Status and end.
  void Compact(bool cut_watches) {
    std::lock_guard<std::mutex> lock(mu_);
    oldest_rv_ = rv_ + 1;
    history_.clear();
    if (cut_watches) ++cut_generation_;
    changed_.notify_all();
  }
  // Ends the open watches cleanly (as timeoutSeconds would).
  void EndWatches() {
    std::lock_guard<std::mutex> lock(mu_);
    ++end_generation_;
    changed_.notify_all();
  }

  std::vector<std::string> paths() {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_;
  }
  std::map<std::string, std::string> bound() {
    std::lock_guard<std::mutex> lock(mu_);
    return bound_;
  }
  // The resourceVersion each watch asked for, in order; and how many lists.
  std::vector<std::string> watch_versions() {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_versions_;
  }
  int lists() {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_;
  }
  int watches_open() {
    std::lock_guard<std::mutex> lock(mu_);
    return watches_open_;
  }
  uint64_t resource_version() {
    std::lock_guard<std::mutex> lock(mu_);
    return rv_;
  }

 private:
  struct Event {
    uint64_t rv;
    std::string type;
    nlohmann::json object;
  };

  void Change(const std::string& type, nlohmann::json pod) {
    std::lock_guard<std::mutex> lock(mu_);
    pod["metadata"]["resourceVersion"] = std::to_string(++rv_);
    const std::string key = pod["metadata"]["namespace"].get<std::string>() + "/" +
                            pod["metadata"]["name"].get<std::string>();
    pods_[key] = pod;
    history_.push_back({rv_, type, pod});
    changed_.notify_all();
  }
  template <typename F>
  void Modify(const std::string& ns, const std::string& name, F f) {
    nlohmann::json pod;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pods_.find(ns + "/" + name);
      ASSERT_NE(it, pods_.end()) << ns << "/" << name;
      pod = it->second;
    }
    f(pod);
    Change("MODIFIED", std::move(pod));
  }

  bool Selected(const nlohmann::json& pod, const std::string& selector) const {
    const std::string want = "spec.schedulerName=";
    if (selector.rfind(want, 0) != 0) return false;  // the extender always selects its scheduler
    return pod["spec"].value("schedulerName", "") == selector.substr(want.size());
  }

  void Pods(const httplib::Request& req, httplib::Response& res) {
    const std::string selector = req.get_param_value("fieldSelector");
    if (req.get_param_value("watch") == "true") return Watch(req, res, selector);
    std::lock_guard<std::mutex> lock(mu_);
    ++lists_;
    const size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : 1000000;
    const size_t start = req.has_param("continue") ? std::stoul(req.get_param_value("continue")) : 0;
    std::vector<nlohmann::json> selected;
    for (const auto& [key, pod] : pods_) {
      if (Selected(pod, selector)) selected.push_back(pod);
    }
    nlohmann::json items = nlohmann::json::array();
    for (size_t i = start; i < selected.size() && i < start + limit; ++i) items.push_back(selected[i]);
    nlohmann::json meta = {{"resourceVersion", std::to_string(rv_)}};
    if (start + limit < selected.size()) meta["continue"] = std::to_string(start + limit);
    res.set_content(nlohmann::json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", meta}, {"items", items}}
                        .dump(),
                    "application/json");
  }

  void Watch(const httplib::Request& req, httplib::Response& res, const std::string& selector) {
    const uint64_t from = std::stoull(req.get_param_value("resourceVersion"));
    const int timeout_s = req.has_param("timeoutSeconds") ? std::stoi(req.get_param_value("timeoutSeconds")) : 300;
    {
      std::lock_guard<std::mutex> lock(mu_);
      watch_versions_.push_back(req.get_param_value("resourceVersion"));
      if (from + 1 < oldest_rv_) {
        res.status = 410;
        res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version",)"
                        R"("reason":"Expired","code":410})",
                        "application/json");
        return;
      }
    }
    auto state = std::make_shared<WatchState>();
    state->next_rv = from + 1;
    state->until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      state->cut = cut_generation_;
      state->end = end_generation_;
      ++watches_open_;
    }
    res.set_chunked_content_provider(
        "application/json",
        [this, state, selector](size_t, httplib::DataSink& sink) {
          std::unique_lock<std::mutex> lock(mu_);
          changed_.wait_for(lock, std::chrono::milliseconds(50));
          if (stopping_ || state->end != end_generation_ || std::chrono::steady_clock::now() >= state->until) {
            lock.unlock();
            sink.done();
            return true;
          }
          if (state->cut != cut_generation_) {
            lock.unlock();
            const std::string gone =
                R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",)"
                R"("message":"too old resource version","reason":"Expired","code":410}})"
                "\n";
            sink.write(gone.data(), gone.size());
            sink.done();
            return true;
          }
          std::string out;
          for (const Event& e : history_) {
            if (e.rv < state->next_rv) continue;
            state->next_rv = e.rv + 1;
            if (!Selected(e.object, selector)) continue;
            out += nlohmann::json{{"type", e.type}, {"object", e.object}}.dump() + "\n";
          }
          lock.unlock();
          if (!out.empty() && !sink.write(out.data(), out.size())) return false;
          return true;
        },
        [this](bool) {
          std::lock_guard<std::mutex> lock(mu_);
          --watches_open_;
        });
  }

  void Bind(const httplib::Request& req, httplib::Response& res) {
    nlohmann::json b = nlohmann::json::parse(req.body, nullptr, false);
    if (b.is_discarded() || b.value("kind", "") != "Binding") {
      res.status = 400;
      return;
    }
    const std::string ns = req.matches[1], name = req.matches[2];
    const std::string node = b["target"]["name"].get<std::string>();
    bool known = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      bound_[ns + "/" + name] = node;
      known = pods_.contains(ns + "/" + name);
    }
    if (known) SetNode(ns, name, node);
    res.status = 201;
    res.set_content("{}", "application/json");
  }

  struct WatchState {
    uint64_t next_rv = 0;
    uint64_t cut = 0;
    uint64_t end = 0;
    std::chrono::steady_clock::time_point until;
  };

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;
  uint64_t rv_ = 100;
  uint64_t oldest_rv_ = 0;
  uint64_t cut_generation_ = 0;
  uint64_t end_generation_ = 0;
  std::map<std::string, nlohmann::json> pods_;  // namespace/name ->
  std::deque<Event> history_;
  std::vector<std::string> paths_;
  std::map<std::string, std::string> bound_;
  std::vector<std::string> watch_versions_;
  int lists_ = 0;
  int watches_open_ = 0;
};

}  // namespace phasor::testing

#endif  // PHASOR_TESTS_INTEGRATIONS_KUBERNETES_FAKE_API_SERVER_H_
