// The probes' view of phasord's committed placement (`phasor-probe
// --placements-from`): which server pairs carry which job's traffic, from the
// servers of every committed job (Snapshot.placement, candidate "committed")
// and the probe's own table of server addresses.
//
// Poll() asks phasord for its Snapshot; when the placement version differs
// from the one the current table was built from, it builds a new table with
// probe::FlowJobTable::FromPlacement and swaps it in. Start() polls every
// poll_ms on a thread of its own until the watcher is destroyed.
//
// Failures never cost the mapping: while phasord does not answer (down,
// slow, refusing the CURVE handshake) the last table stays, the outage is
// said once on `diagnostics` ("<program>: --placements-from: phasord at E
// not reachable ...") and once more when phasord answers again. A placed
// server missing from the address table is left out of the table (its flows
// stay unmapped), said once per placement version.
//
// Thread safety: table(), version() and SummaryJson() may be called from any
// thread at any time; Poll() calls (from the caller and from the thread) are
// serialised. Lines on `diagnostics` are written whole, one `<<` each.
#ifndef PHASOR_INTEGRATIONS_CLIENT_PLACEMENT_WATCHER_H_
#define PHASOR_INTEGRATIONS_CLIENT_PLACEMENT_WATCHER_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "integrations/client/client.h"
#include "nlohmann/json.hpp"
#include "probe/profile_report.h"
#include "protocol/phasor.pb.h"

namespace phasor::client {

struct PlacementWatcherOptions {
  // phasord's request_endpoint (tcp://, ipc://); plain only for ipc:// and
  // loopback, else `curve`. Required.
  std::string endpoint;
  // CURVE keys (protocol::LoadCurveClientKeys); nullopt: a plain socket.
  std::optional<protocol::CurveClientKeys> curve;
  // How long one GetSnapshot waits for phasord (default 1 s). At least 1.
  int timeout_ms = 1000;
  // Time between two polls of the background thread (default 2 s). At least 10.
  int poll_ms = 2000;
  // The program named in diagnostics ("<program>: --placements-from: ...").
  std::string program = "phasor-probe";
};

// The job -> servers of a Snapshot's committed candidate (empty when it has
// none).
std::map<std::string, std::vector<std::string>> CommittedServers(
    const phasor::v1::Snapshot& snapshot);

// Reads the --placements-server-key / --placements-keys options (both or
// neither) with protocol::LoadCurveClientKeys. InvalidArgument naming the option.
absl::StatusOr<protocol::CurveClientKeys> LoadPlacementKeys(const std::string& server_key_file,
                                                            const std::string& client_key_prefix);

class PlacementWatcher {
 public:
  // InvalidArgument naming the option for a bad endpoint (or a plain one that
  // is not local), bad keys, or timeouts out of range. Does not wait for
  // phasord.
  static absl::StatusOr<std::unique_ptr<PlacementWatcher>> Create(PlacementWatcherOptions options,
                                                                  probe::ServerAddresses addresses,
                                                                  std::ostream& diagnostics);
  // Stops and joins the polling thread, if started.
  ~PlacementWatcher();
  PlacementWatcher(const PlacementWatcher&) = delete;
  PlacementWatcher& operator=(const PlacementWatcher&) = delete;

  // One GetSnapshot now (waiting up to timeout_ms). True when a new table was
  // swapped in, false when the version was the table's already; phasord's
  // error (Unavailable when it did not answer) with the table kept.
  absl::StatusOr<bool> Poll();

  // Polls every poll_ms on a thread until destruction (the thread blocks
  // signals, so SIGINT/SIGTERM reach the caller's threads). Once only.
  void Start();

  // The current table: empty until phasord first answered. Never null.
  std::shared_ptr<const probe::FlowJobTable> table() const;
  // The placement version the table was built from; nullopt before phasord
  // first answered.
  std::optional<uint64_t> version() const;

  // {"placements": {"endpoint", "version", "jobs", "rules", "polls",
  //  "refreshes", "failures"}} (version null before the first answer).
  nlohmann::json SummaryJson() const;

 private:
  PlacementWatcher(PlacementWatcherOptions options, probe::ServerAddresses addresses,
                   std::ostream& diagnostics)
      : options_(std::move(options)), addresses_(std::move(addresses)), diagnostics_(diagnostics) {}
  // A fresh socket: requests queued towards an absent phasord are dropped.
  absl::Status Reconnect();

  const PlacementWatcherOptions options_;
  const probe::ServerAddresses addresses_;
  std::ostream& diagnostics_;

  std::mutex poll_mu_;  // the client and the reachability flag
  zmq::context_t context_{1};
  std::unique_ptr<Client> client_;
  bool reachable_ = true;  // the last poll was answered (or none was made)

  mutable std::mutex mu_;  // what readers see
  std::shared_ptr<const probe::FlowJobTable> table_ = std::make_shared<const probe::FlowJobTable>();
  std::optional<uint64_t> version_;
  size_t jobs_ = 0;
  uint64_t polls_ = 0, refreshes_ = 0, failures_ = 0;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace phasor::client

#endif  // PHASOR_INTEGRATIONS_CLIENT_PLACEMENT_WATCHER_H_
