// phasord's configuration: one YAML file (docs/phasord.md lists every key),
// every field with a documented default.
#ifndef PHASOR_DAEMON_CONFIG_H_
#define PHASOR_DAEMON_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "placer/ranking_policy.h"
#include "protocol/endpoint.h"

namespace phasor::daemon {

struct CurveOptions {
  // The server's key pair (`phasor keygen` writes them). Empty: CURVE off.
  std::string server_secret_key_file;
  std::string server_public_key_file;
  // Client public keys allowed to connect, one Z85 key per line. Required
  // when CURVE is on; a key not listed is refused and logged.
  std::string allowed_clients_file;

  bool enabled() const { return !server_secret_key_file.empty(); }
};

// state_store.etcd: the etcd v3 cluster that holds the state (through its
// JSON gateway) and elects the one phasord that serves.
struct EtcdOptions {
  // Client URLs of the cluster's members (http://HOST:PORT); required with
  // backend etcd. Calls go to one, the next on failure.
  std::vector<std::string> endpoints;
  // Every key phasord writes starts with this (its own: phasord's keys only).
  std::string prefix = "/phasor";
  // TTL of the leader's lease; kept alive every third of it. A dead leader's
  // standby takes over within about one lease (docs/phasord.md).
  uint32_t lease_seconds = 3;
  // This phasord's name in the leader key; empty: HOSTNAME:PID.
  std::string name;
  // The request endpoint standbys name to clients while this phasord leads;
  // empty: the bound request_endpoint (a tcp://0.0.0.0 one is then refused).
  std::string advertise_endpoint;
  // One HTTP call to etcd waits at most this long.
  uint32_t timeout_ms = 500;
  // Rankings kept for CommitPlacement are also bounded by their age and by
  // their total size (beside keep_rankings): older or beyond, pruned.
  uint32_t ranking_max_age_s = 3600;
  uint64_t max_ranking_bytes = uint64_t{256} << 20;
};

struct StateStoreOptions {
  // "sqlite" (the default: the embedded database at state_path) or "etcd".
  std::string backend = "sqlite";
  EtcdOptions etcd;
};

struct DaemonOptions {
  // ROUTER socket: RankRequest, CommitPlacement, GetOffset, Health.
  std::string request_endpoint = "tcp://127.0.0.1:7410";
  // PULL socket: ProfileUpdate from probes.
  std::string profile_endpoint = "tcp://127.0.0.1:7411";
  // PUB socket: OffsetUpdate, topic = job id.
  std::string offset_endpoint = "tcp://127.0.0.1:7412";
  // Prometheus text metrics at http://<metrics_listen>/metrics; port 0 picks
  // a free port; empty disables the endpoint.
  std::string metrics_listen = "127.0.0.1:9464";

  CurveOptions curve;
  // Without CURVE, sockets are plain only when this is true, and then only on
  // ipc://, inproc:// or loopback TCP endpoints.
  bool allow_plain = false;

  // SQLite database holding placements, shifts, epoch, profiles, link scores.
  std::string state_path = "/var/lib/phasor/phasord.db";
  // SQLite `synchronous` in WAL mode: "normal" survives a crash of phasord
  // (kill -9); "full" also survives a power loss, at a cost per write.
  std::string sqlite_synchronous = "normal";
  // Where the state lives (YAML `state_store:`); sqlite unless set.
  StateStoreOptions state_store;
  // Topology YAML (docs/topology.md) used to route candidates given in server
  // form (job -> servers, e.g. a Pollux-style {job: [node per replica]})
  // into link shares, as `phasor rank --topology` does. Empty: server-form
  // candidates are rejected.
  std::string topology_path;
  // Rankings kept for CommitPlacement (older ones are pruned).
  uint64_t keep_rankings = 10000;
  // Link-score samples kept per link, the newest (0: all). A release drops
  // every sample of the links no remaining placement loads.
  uint32_t keep_link_scores = 1000;

  // Limits per message / request; above them the request gets an Error.
  size_t max_message_bytes = 4u << 20;       // TOO_LARGE
  uint32_t max_jobs_per_request = 4096;       // LIMIT_EXCEEDED
  uint32_t max_links_per_request = 65536;     // LIMIT_EXCEEDED
  uint32_t max_candidates_per_request = 256;  // LIMIT_EXCEEDED
  // What one RankRequest may cost (YAML `limits:`, placer::RankLimits with
  // its defaults): bins per job pattern, bins per link, jobs x links, the
  // solvers' evaluation budget and a wall-clock deadline. Over a limit the
  // request gets LIMIT_EXCEEDED naming it, before anything is allocated (the
  // deadline: when it passes). max_candidates is max_candidates_per_request.
  placer::RankLimits rank_limits;

  // How the host's order, the predicted gain and its confidence combine
  // (YAML `ranking_policy:`, placer::RankingPolicyOptions with its defaults,
  // the same as `phasor simulate`'s): applied to every ranking after Rank(),
  // so the reply's first candidate is the host's first unless another passed
  // the policy. min_gain < 0 turns it off (Rank()'s score order).
  placer::RankingPolicyOptions ranking_policy;

  // Threads solving RankRequests (the sockets run on one more thread).
  uint32_t solver_threads = 2;
  // RankRequests waiting for a solver thread at once; one more is answered
  // RESOURCE_EXHAUSTED at once ("rank queue full"), not queued. A request's
  // time runs from its arrival: limits.deadline_ms, or the wait its client
  // gave (RankRequest.wait_ms) when shorter. One that waited in the queue
  // past it is answered without being solved, so requests whose clients gave
  // up are not solved ahead of fresh ones.
  uint32_t max_queued_rankings = 64;

  // ProfileUpdates below this confidence are counted and ignored.
  double min_profile_confidence = 0.5;
  // Closed loop (SPEC 7; default off, as measured: docs/simulator.md, "The
  // closed loop", costs on overloaded links in every variant, and the
  // testbed's scenarios run without it, docs/testbed.md). On: a job whose
  // observed phase (a probe's t0) is off its slot by more than
  // realign_threshold_us gets its offset re-sent with a new version, which
  // re-aligns its agents, at most once per realign_min_interval_ms. Off, the
  // phase error is still measured (phasord_phase_error_us).
  bool realign = false;
  uint32_t realign_threshold_us = 2000;
  uint32_t realign_min_interval_ms = 1000;
  // Every offset is re-published this often; 0 (the default, as the testbed
  // runs): only on change and at start. Agents ask with GetOffset as well,
  // and an unchanged offset re-published re-aligns no agent.
  uint32_t republish_interval_ms = 0;

  // spdlog level: trace, debug, info, warn, error, critical, off.
  std::string log_level = "info";
};

// Checks the options (endpoints, security rules, limits); InvalidArgument
// naming the key.
absl::Status ValidateDaemonOptions(const DaemonOptions& options);

// Parses YAML text; unknown keys and wrongly typed values are InvalidArgument
// naming the key. Keys left out keep their defaults. Validates the result.
absl::StatusOr<DaemonOptions> ParseDaemonConfig(const std::string& yaml_text);

// Reads and parses a config file.
absl::StatusOr<DaemonOptions> LoadDaemonConfig(const std::string& path);

// Sets the process's log level (a valid log_level) for phasord's logs.
void SetLogLevel(const std::string& level);

// True for ipc://, inproc:// and TCP endpoints on 127.0.0.0/8, [::1] or
// localhost: the one rule of protocol/endpoint.h.
using protocol::IsLocalEndpoint;

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_CONFIG_H_
