// A small client of etcd's v3 API through its JSON gateway (etcd 3.4:
// /v3/kv/range, /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive,
// /v3/lease/revoke; keys and values base64 on the wire), over cpp-httplib.
//
// Calls go to one member; on a transport error or a timeout the next member
// is tried, each once per call. A txn is retried on the next member after a
// timeout too, so the writes phasord makes are idempotent (puts of whole
// values, range deletes) and fenced (etcd_state_store.h).
//
// Errors: Unavailable when no member answered (the message names the last
// member and why), Internal for an answer that does not parse.
// Not thread-safe: one thread uses one EtcdClient.
#ifndef PHASOR_DAEMON_ETCD_CLIENT_H_
#define PHASOR_DAEMON_ETCD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace httplib {
class Client;
}

namespace phasor::daemon {

struct EtcdKv {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

// One write of a txn: a put (with a lease when lease != 0), or a delete of
// [key, range_end) (just key when range_end is empty).
struct EtcdOp {
  enum class Kind { kPut, kDelete };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;
  std::string range_end;
  int64_t lease = 0;

  static EtcdOp Put(std::string key, std::string value, int64_t lease = 0) {
    return {Kind::kPut, std::move(key), std::move(value), "", lease};
  }
  static EtcdOp Delete(std::string key, std::string range_end = "") {
    return {Kind::kDelete, std::move(key), "", std::move(range_end), 0};
  }
};

// A compare of a txn: key's create revision equals `create_revision` (0:
// the key does not exist).
struct EtcdCompare {
  std::string key;
  int64_t create_revision = 0;
};

struct EtcdTxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the txn
};

struct EtcdRangeOptions {
  std::string range_end;  // empty: the one key
  bool keys_only = false;
  int64_t limit = 0;        // 0: all
  bool descending = false;  // by key
};

class EtcdClient {
 public:
  // endpoints: http://HOST:PORT of each member.
  EtcdClient(std::vector<std::string> endpoints, int timeout_ms);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  absl::StatusOr<std::vector<EtcdKv>> Range(const std::string& key,
                                            const EtcdRangeOptions& options = {});
  // All compares must hold for `success` to be applied; otherwise nothing is.
  absl::StatusOr<EtcdTxnResult> Txn(const std::vector<EtcdCompare>& compares,
                                    const std::vector<EtcdOp>& success);
  // A new lease of `ttl_s` seconds: its id.
  absl::StatusOr<int64_t> LeaseGrant(int64_t ttl_s);
  // Renews the lease: its TTL in seconds, 0 when it has expired (or never was).
  absl::StatusOr<int64_t> LeaseKeepAlive(int64_t id);
  absl::Status LeaseRevoke(int64_t id);

  // The range end that covers every key starting with `prefix`.
  static std::string PrefixEnd(const std::string& prefix);

 private:
  // POSTs `body` (JSON) to `path` and returns the answer's JSON text.
  absl::StatusOr<std::string> Post(const std::string& path, const std::string& body);

  std::vector<std::string> endpoints_;
  int timeout_ms_;
  size_t current_ = 0;  // the member that answered last
  std::vector<std::unique_ptr<httplib::Client>> clients_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_ETCD_CLIENT_H_
