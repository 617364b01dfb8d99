// The controller's endpoint for the compute nodes: the Prolog and Epilog of
// any host send their requests (hook_server.h's protocol: start, end, ping;
// never submit) over ZeroMQ, TCP with CURVE and an allow-list of client
// keys, or plain on ipc:// and loopback. One request per message:
// ["phasor.slurm.v1", request text] on a REQ socket, answered
// ["phasor.slurm.v1", reply text]. AskController is the client side, and
// takes the Unix socket (unix://PATH) as well, through hook_client.h.
//
// Threads: a socket thread, a ZAP thread (CURVE) and `threads` workers that
// answer requests (a Prolog waits on phasord, an Epilog on a re-plan),
// with at most kMaxQueued requests waiting; the destructor stops them all.
#ifndef PHASOR_INTEGRATIONS_SLURM_NODE_SERVER_H_
#define PHASOR_INTEGRATIONS_SLURM_NODE_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "integrations/slurm/controller.h"
#include "integrations/slurm/node_config.h"
#include "zmq.hpp"

namespace phasor::slurm {

struct NodeServerOptions {
  // Where to listen: tcp://ADDRESS:PORT (port 0: any) or ipc://PATH. Required.
  std::string endpoint;
  // The controller's CURVE key pair and the nodes' public keys it admits
  // (one Z85 key per line). All three, or none: plain, ipc:// or loopback only.
  std::string secret_key_file;
  std::string public_key_file;
  std::string allowed_clients_file;
  // Worker threads (default 4).
  uint32_t threads = 4;
};

class NodeServer {
 public:
  static constexpr size_t kMaxQueued = 256;

  // Binds and starts serving. InvalidArgument naming the option for a bad
  // endpoint, key file or allow-list, or plain TCP beyond loopback;
  // Unavailable when the endpoint cannot be bound.
  static absl::StatusOr<std::unique_ptr<NodeServer>> Start(const NodeServerOptions& options,
                                                           SlurmController* controller);
  ~NodeServer();
  NodeServer(const NodeServer&) = delete;
  NodeServer& operator=(const NodeServer&) = delete;

  // The endpoint bound (with the port chosen for port 0).
  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Request {
    std::string identity;
    std::string text;
  };
  explicit NodeServer(SlurmController* controller) : controller_(controller) {}
  void ServeSocket(zmq::socket_t router, zmq::socket_t results);
  void ServeZap(zmq::socket_t zap);
  void Work(int worker);

  SlurmController* controller_;
  zmq::context_t context_{1};
  std::string endpoint_;
  std::string curve_secret_;
  std::set<std::string> allowed_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Request> queue_;
  std::vector<std::thread> threads_;
};

// One request to the controller named by `config.controller` (unix://,
// ipc:// or tcp:// with the node's CURVE keys), all within
// config.controller_timeout_ms. The reply text; Unavailable when nothing
// answers in time, InvalidArgument for bad key files.
absl::StatusOr<std::string> AskController(const NodeConfig& config, const std::string& request);

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_NODE_SERVER_H_
