// Leader election on etcd (state_store.backend: etcd): one phasord serves,
// the others stand by.
//
// Every phasord holds a lease of lease_seconds, kept alive every third of it
// by the election's thread. The leader is the one whose txn created
// PREFIX/leader (value: JSON {"name", "endpoint"}) attached to its lease;
// standbys watch the key (etcd's /v3/watch stream, on a thread of its own)
// and read it every lease/10 besides, and once it is gone (the leader's
// lease expired or was revoked) try to create it. The key's create
// revision names the leadership: the etcd store compares it in every write
// (fencing, etcd_state_store.h).
//
// A leader leads while its lease is certainly alive: until the time of the
// last keepalive it sent, plus the TTL etcd granted, less a tenth. A leader
// stopped (SIGSTOP) or cut off past that time no longer leads (Leads() is
// false) before etcd can give the key to another, and its writes fail the
// fence. Losing the lead is final for this object (phasord exits and is
// restarted as a standby).
//
// Thread safety: every method may be called from any thread.
#ifndef PHASOR_DAEMON_LEADER_ELECTION_H_
#define PHASOR_DAEMON_LEADER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/etcd_client.h"

namespace httplib {
class Client;
}

namespace phasor::daemon {

struct LeaderInfo {
  std::string name;
  std::string endpoint;  // its request endpoint, as clients reach it
  int64_t create_revision = 0;
};

class LeaderElection {
 public:
  // Grants this phasord's lease and starts campaigning. `name` and
  // `endpoint` go into the leader key. Unavailable when no etcd member answers.
  static absl::StatusOr<std::unique_ptr<LeaderElection>> Start(const EtcdOptions& options,
                                                               std::string name,
                                                               std::string endpoint);
  // Revokes the lease (a standby takes over at once) and stops.
  ~LeaderElection();

  // True while this phasord leads and its lease is certainly alive.
  bool Leads() const;
  // True once this phasord led and no longer does.
  bool Lost() const { return lost_.load(); }
  // The leader as last read (empty name when none is known); this phasord's
  // own when it leads.
  LeaderInfo leader() const;
  std::string leader_key() const { return key_; }
  // The create revision of this phasord's leader key (0 until it leads).
  int64_t create_revision() const { return my_revision_.load(); }
  // How long becoming the leader took after the key was found free (for logs).
  std::chrono::steady_clock::time_point led_since() const;

 private:
  LeaderElection(const EtcdOptions& options, std::string name, std::string endpoint);
  void Loop();
  void KeepAlive();
  void Campaign();
  // Streams the leader key's events; a DELETE wakes Loop() to campaign at once.
  void WatchLoop();

  EtcdOptions options_;
  std::string name_;
  std::string endpoint_;
  std::string key_;
  std::unique_ptr<EtcdClient> client_;
  int64_t lease_ = 0;
  std::atomic<int64_t> deadline_ns_{0};  // steady clock: the lease is alive before it
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_{false};
  std::atomic<int64_t> my_revision_{0};
  std::chrono::steady_clock::time_point next_keepalive_;  // the election thread's
  bool keepalive_failed_ = false;                          // the election thread's: retry soon

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                            // guarded by mu_
  LeaderInfo leader_;                                // guarded by mu_
  bool key_deleted_ = false;              // guarded by mu_: the watch saw the leader key go
  httplib::Client* watching_ = nullptr;  // guarded by mu_: the watch's client (stopped on destruction)
  bool watch_done_ = false;               // guarded by mu_: WatchLoop() returned
  std::thread watcher_;
  std::chrono::steady_clock::time_point led_since_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_LEADER_ELECTION_H_
