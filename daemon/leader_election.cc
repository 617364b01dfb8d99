#include "daemon/leader_election.h"

#include <httplib.h>

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace phasor::daemon {
namespace {

using Steady = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now().time_since_epoch())
      .count();
}

}  // namespace

LeaderElection::LeaderElection(const EtcdOptions& options, std::string name, std::string endpoint)
    : options_(options),
      name_(std::move(name)),
      endpoint_(std::move(endpoint)),
      key_(options.prefix + "/leader"),
      client_(
          std::make_unique<EtcdClient>(options.endpoints, static_cast<int>(options.timeout_ms))) {}

absl::StatusOr<std::unique_ptr<LeaderElection>> LeaderElection::Start(const EtcdOptions& options,
                                                                      std::string name,
                                                                      std::string endpoint) {
  std::unique_ptr<LeaderElection> e(
      new LeaderElection(options, std::move(name), std::move(endpoint)));
  absl::StatusOr<int64_t> lease = e->client_->LeaseGrant(options.lease_seconds);
  if (!lease.ok())
    return absl::UnavailableError(absl::StrCat("state_store.etcd: ", lease.status().message()));
  e->lease_ = *lease;
  e->next_keepalive_ = Steady::now() + std::chrono::milliseconds(options.lease_seconds * 1000 / 3);
  e->Campaign();
  e->thread_ = std::thread([p = e.get()] { p->Loop(); });
  e->watcher_ = std::thread([p = e.get()] { p->WatchLoop(); });
  return e;
}

LeaderElection::~LeaderElection() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  // stop() closes the stream's socket; until the watch has one (it may be
  // connecting just now) it does nothing, so it is repeated until the watch ends.
  for (int i = 0; i < 250; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (watch_done_) break;
      if (watching_ != nullptr) watching_->stop();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (watcher_.joinable()) watcher_.join();
  if (thread_.joinable()) thread_.join();
  leading_ = false;
  if (lease_ != 0) (void)client_->LeaseRevoke(lease_);
}

bool LeaderElection::Leads() const {
  return leading_.load() && !lost_.load() && NowNs() < deadline_ns_.load();
}

LeaderInfo LeaderElection::leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

Steady::time_point LeaderElection::led_since() const {
  std::lock_guard<std::mutex> lock(mu_);
  return led_since_;
}

void LeaderElection::KeepAlive() {
  const int64_t sent = NowNs();
  absl::StatusOr<int64_t> ttl = client_->LeaseKeepAlive(lease_);
  if (!ttl.ok()) {
    // etcd electing a raft leader (a member lost) answers nothing for a
    // second or two: try again soon, not a third of the lease later.
    spdlog::warn("phasord: election: keepalive: {}", std::string(ttl.status().message()));
    next_keepalive_ = Steady::now() + std::chrono::milliseconds(100);
    keepalive_failed_ = true;
    return;
  }
  keepalive_failed_ = false;
  if (*ttl <= 0) {
    if (leading_) {
      lost_ = true;
      spdlog::error("phasord: election: the lease expired: no longer the leader");
      return;
    }
    // A standby's lease ran out (it was stopped, or etcd was away): a new one.
    absl::StatusOr<int64_t> lease = client_->LeaseGrant(options_.lease_seconds);
    if (lease.ok()) lease_ = *lease;
    return;
  }
  // Alive for at least ttl after `sent`; a tenth less covers the clocks' rates.
  deadline_ns_ = sent + *ttl * 900'000'000;
}

void LeaderElection::Campaign() {
  if (lost_) return;
  absl::StatusOr<std::vector<EtcdKv>> kvs = client_->Range(key_);
  if (!kvs.ok()) {
    spdlog::warn("phasord: election: {}", std::string(kvs.status().message()));
    return;
  }
  if (!kvs->empty()) {
    const EtcdKv& kv = (*kvs)[0];
    const nlohmann::json v = nlohmann::json::parse(kv.value, nullptr, false);
    LeaderInfo info;
    if (v.is_object()) {
      info.name = v.value("name", "");
      info.endpoint = v.value("endpoint", "");
    }
    info.create_revision = kv.create_revision;
    if (leading_ && kv.create_revision != my_revision_) {
      lost_ = true;
      spdlog::error("phasord: election: '{}' holds the leader key now: no longer the leader",
                    info.name);
    }
    std::lock_guard<std::mutex> lock(mu_);
    leader_ = info;
    return;
  }
  if (leading_) {
    lost_ = true;
    spdlog::error("phasord: election: the leader key is gone: no longer the leader");
    return;
  }
  // Free. The deadline is the standby's own: its last keepalive's.
  const std::string value = nlohmann::json({{"name", name_}, {"endpoint", endpoint_}}).dump();
  absl::StatusOr<EtcdTxnResult> r = client_->Txn({{key_, 0}}, {EtcdOp::Put(key_, value, lease_)});
  if (!r.ok() || !r->succeeded) return;
  // Renew at once so that the deadline is a full lease from now.
  my_revision_ = r->revision;
  KeepAlive();
  if (lost_ || NowNs() >= deadline_ns_) {
    lost_ = true;
    return;
  }
  leading_ = true;
  std::lock_guard<std::mutex> lock(mu_);
  leader_ = {name_, endpoint_, r->revision};
  led_since_ = Steady::now();
  spdlog::info("phasord: election: '{}' leads (leader key created at revision {})", name_,
               r->revision);
}

void LeaderElection::Loop() {
  const auto third = std::chrono::milliseconds(options_.lease_seconds * 1000 / 3);
  const auto poll = std::chrono::milliseconds(std::max<uint32_t>(50, options_.lease_seconds * 100));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, keepalive_failed_ ? std::chrono::milliseconds(100) : leading_ ? third : poll,
                   [this] { return stopping_ || key_deleted_; });
    if (stopping_) return;
    key_deleted_ = false;
    lock.unlock();
    if (Steady::now() >= next_keepalive_ || (leading_ && !keepalive_failed_)) {
      next_keepalive_ = Steady::now() + third;
      KeepAlive();  // sets next_keepalive_ sooner when it fails
    }
    // A standby tries for the key; a leader checks it is still its own. Not
    // while keepalives fail: etcd is away, and a keepalive goes first.
    if (!keepalive_failed_ && !lost_) Campaign();
    lock.lock();
    if (lost_) return;
  }
}

void LeaderElection::WatchLoop() {
  const std::string body =
      nlohmann::json({{"create_request", {{"key", absl::Base64Escape(key_)}}}}).dump();
  size_t member = 0;
  while (true) {
    httplib::Client client(options_.endpoints[member++ % options_.endpoints.size()]);
    client.set_connection_timeout(0, static_cast<time_t>(options_.timeout_ms) * 1000);
    client.set_read_timeout(60, 0);  // a quiet stream is a live one; a minute without a byte: watch again
    client.set_tcp_nodelay(true);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        watch_done_ = true;
        return;
      }
      watching_ = &client;
    }
    httplib::Request req;
    req.method = "POST";
    req.path = "/v3/watch";
    req.body = body;
    req.set_header("Content-Type", "application/json");
    std::string pending;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      pending.append(data, n);
      // One JSON object per line; a DELETE event of the key wakes the campaign.
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
        if (pending.compare(0, nl, "") == 0) continue;
        const nlohmann::json m = nlohmann::json::parse(pending.substr(0, nl), nullptr, false);
        if (!m.is_object() || !m.contains("result")) continue;
        const nlohmann::json& events = m["result"].value("events", nlohmann::json::array());
        for (const nlohmann::json& ev : events) {
          if (ev.is_object() && ev.value("type", "") == "DELETE") {
            std::lock_guard<std::mutex> lock(mu_);
            key_deleted_ = true;
            wake_.notify_all();
          }
        }
      }
      std::lock_guard<std::mutex> lock(mu_);
      return !stopping_;
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    client.send(req, res, error);
    {
      std::unique_lock<std::mutex> lock(mu_);
      watching_ = nullptr;
      // The stream ended (a member went, or stop()): again, after a pause.
      if (wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; })) {
        watch_done_ = true;
        return;
      }
    }
  }
}

}  // namespace phasor::daemon
