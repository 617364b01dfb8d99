#include "integrations/client/placement_watcher.h"

#include <signal.h>

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "protocol/endpoint.h"

namespace phasor::client {

std::map<std::string, std::vector<std::string>> CommittedServers(const v1::Snapshot& snapshot) {
  std::map<std::string, std::vector<std::string>> out;
  for (const v1::Candidate& c : snapshot.placement().candidates()) {
    if (c.id() != "committed") continue;
    for (const auto& [job, list] : c.servers())
      out[job].assign(list.servers().begin(), list.servers().end());
  }
  return out;
}

absl::StatusOr<protocol::CurveClientKeys> LoadPlacementKeys(const std::string& server_key_file,
                                                            const std::string& client_key_prefix) {
  if (server_key_file.empty() != client_key_prefix.empty()) {
    return absl::InvalidArgumentError(
        "--placements-server-key and --placements-keys: give both or neither");
  }
  return protocol::LoadCurveClientKeys(server_key_file, client_key_prefix,
                                       "--placements-server-key", "--placements-keys");
}

absl::StatusOr<std::unique_ptr<PlacementWatcher>> PlacementWatcher::Create(
    PlacementWatcherOptions options, probe::ServerAddresses addresses, std::ostream& diagnostics) {
  // One phasord, or several comma-separated (its Client fails over between them).
  std::vector<std::string> endpoints = SplitEndpoints(options.endpoint);
  if (endpoints.empty()) endpoints = {options.endpoint};  // checked as given: the error names it
  for (const std::string& e : endpoints) {
    if (absl::Status s = options.curve ? protocol::CheckEndpoint("--placements-from", e)
                                       : protocol::CheckPlainEndpoint(
                                             "--placements-from", e,
                                             "give --placements-server-key and --placements-keys");
        !s.ok()) {
      return s;
    }
  }
  if (options.timeout_ms < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--placements-timeout-ms: ", options.timeout_ms, " is below 1"));
  }
  if (options.poll_ms < 10) {
    return absl::InvalidArgumentError(
        absl::StrCat("--placements-poll-ms: ", options.poll_ms, " is below 10"));
  }
  std::unique_ptr<PlacementWatcher> w(
      new PlacementWatcher(std::move(options), std::move(addresses), diagnostics));
  if (absl::Status s = w->Reconnect(); !s.ok()) return s;
  return w;
}

PlacementWatcher::~PlacementWatcher() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

absl::Status PlacementWatcher::Reconnect() {
  ClientOptions o;
  o.endpoint = options_.endpoint;
  o.timeout_ms = options_.timeout_ms;
  o.curve = options_.curve;
  absl::StatusOr<std::unique_ptr<Client>> c;
  try {
    c = Client::Connect(o, &context_);
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(
        absl::StrCat("--placements-from: cannot make a socket: ", e.what()));
  }
  if (!c.ok()) {
    const bool keys = absl::StrContains(c.status().message(), "curve");
    return absl::InvalidArgumentError(
        absl::StrCat(keys ? "--placements-keys: " : "--placements-from: ", c.status().message()));
  }
  client_ = *std::move(c);
  return absl::OkStatus();
}

absl::StatusOr<bool> PlacementWatcher::Poll() {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++polls_;
  }
  const std::string where = absl::StrCat(options_.program, ": --placements-from: ");
  absl::StatusOr<v1::Snapshot> snapshot;
  try {
    snapshot = client_->GetSnapshot();
  } catch (const zmq::error_t& e) {  // e.g. a poll interrupted by a signal
    snapshot =
        absl::UnavailableError(absl::StrCat("phasord at ", options_.endpoint, ": ", e.what()));
  }
  if (!snapshot.ok()) {
    size_t rules = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++failures_;
      rules = table_->size();
    }
    if (reachable_) {
      diagnostics_ << absl::StrCat(where, "phasord at ", options_.endpoint,
                                   " not reachable: ", snapshot.status().message(),
                                   "; keeping the last flow table (", rules, " rules)\n");
      reachable_ = false;
    }
    // A request that got no answer stays queued on the socket; a fresh one
    // does not hand phasord a backlog of stale GetSnapshots when it returns.
    if (absl::IsUnavailable(snapshot.status()))
      (void)Reconnect();  // on failure the old socket stays
    return snapshot.status();
  }
  if (!reachable_) {
    diagnostics_ << absl::StrCat(where, "phasord at ", options_.endpoint, " answers again\n");
    reachable_ = true;
  }
  const uint64_t version = snapshot->placement_version();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (version_ == version) return false;
  }
  std::map<std::string, std::vector<std::string>> job_servers = CommittedServers(*snapshot);
  std::vector<std::string> unknown;
  for (auto& [job, servers] : job_servers) {
    std::vector<std::string> known;
    for (const std::string& s : servers) {
      if (addresses_.ips.contains(s)) {
        known.push_back(s);
      } else {
        unknown.push_back(absl::StrCat("server '", s, "' of job '", job, "'"));
      }
    }
    servers = std::move(known);
  }
  absl::StatusOr<probe::FlowJobTable> table =
      probe::FlowJobTable::FromPlacement(job_servers, addresses_);
  if (!table.ok()) return table.status();  // not reached: every server left has an address
  if (!unknown.empty()) {
    diagnostics_ << absl::StrCat(where, "placement version ", version,
                                 ": no address in --servers for ", absl::StrJoin(unknown, ", "),
                                 "; their flows stay unmapped\n");
  }
  const size_t jobs = table->Jobs().size();
  std::lock_guard<std::mutex> lock(mu_);
  table_ = std::make_shared<const probe::FlowJobTable>(*std::move(table));
  version_ = version;
  jobs_ = jobs;
  ++refreshes_;
  return true;
}

void PlacementWatcher::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    // Signals (SIGINT, SIGTERM) are the capture's to handle, on its thread.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(options_.poll_ms),
                              [this] { return stop_; })) {
      lock.unlock();
      (void)Poll();
      lock.lock();
    }
  });
}

std::shared_ptr<const probe::FlowJobTable> PlacementWatcher::table() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_;
}

std::optional<uint64_t> PlacementWatcher::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

nlohmann::json PlacementWatcher::SummaryJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json j;
  j["placements"] = {{"endpoint", options_.endpoint},
                     {"version", version_ ? nlohmann::json(*version_) : nlohmann::json(nullptr)},
                     {"jobs", jobs_},
                     {"rules", table_->size()},
                     {"polls", polls_},
                     {"refreshes", refreshes_},
                     {"failures", failures_}};
  return j;
}

}  // namespace phasor::client
