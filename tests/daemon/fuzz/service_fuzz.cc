// libFuzzer target: phasord's request handling (daemon::Service, the code
// the ZeroMQ server calls once it has decoded a frame), fed a sequence of
// protobuf payloads as clients and probes send them.
//
// Input: records [kind: 1 byte][length: 2 bytes little-endian][payload],
// at most kMaxRecords. kind % 7 picks the call: 0 RankRequest (and, when
// kind's bit 3 is set and the ranking succeeded, CommitPlacement of its best
// candidate, as a host scheduler does), 1 CommitPlacement, 2 GetOffset,
// 3 ProfileUpdate, 4 ReleasePlacement, 5 GetSnapshot, 6 Health.
//
// Each input gets a fresh service on its own SQLite file with the bundled
// leaf-spine topology (so server-form candidates are routed). Checked:
//   - every call returns OK or one of the documented client errors
//     (InvalidArgument, NotFound, ResourceExhausted, FailedPrecondition);
//     Internal (a database or solver failure) is a bug here;
//   - GetSnapshot and Health succeed after every call: no accepted input
//     poisons the state;
//   - restarting from the same database restores the same epoch, jobs and
//     offsets, and quarantines nothing: whatever was accepted still
//     validates when loaded.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "daemon/service.h"
#include "google/protobuf/stubs/logging.h"

namespace {

namespace v1 = phasor::v1;
using phasor::daemon::Service;

constexpr int kMaxRecords = 12;

struct Fixture {
  std::string dir;
  phasor::daemon::DaemonOptions options;
  Fixture() {
    // tmpfs when there is one: the database is recreated for every input.
    char tmpl[] = "/dev/shm/phasor-service-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    dir = tmpl;
    options.allow_plain = true;
    options.request_endpoint = "ipc://" + dir + "/r";
    options.profile_endpoint = "ipc://" + dir + "/p";
    options.offset_endpoint = "ipc://" + dir + "/o";
    options.sqlite_synchronous = "normal";
    options.topology_path = PHASOR_FUZZ_TOPOLOGY;
    options.rank_limits.deadline_ms = 2000;  // keeps one input well under libFuzzer's -timeout
    phasor::daemon::SetLogLevel("off");
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in a string field is expected here
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
};

// Never destroyed (the service's logging may outlive static destruction);
// its directory goes at exit.
Fixture& TheFixture() {
  static Fixture* fixture = [] {
    Fixture* f = new Fixture;
    std::atexit([] { std::filesystem::remove_all(TheFixture().dir); });
    return f;
  }();
  return *fixture;
}

void Check(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kFailedPrecondition:
      return;
    default:
      std::fprintf(stderr, "service_fuzz: unexpected status %s\n", s.ToString().c_str());
      std::abort();
  }
}

std::unique_ptr<Service> Open(const phasor::daemon::DaemonOptions& options, phasor::daemon::Metrics* metrics) {
  static int64_t now_us = 1'700'000'000'000'000;
  absl::StatusOr<std::unique_ptr<Service>> service =
      Service::Open(options, metrics, [] { return now_us += 1000; }, [](const v1::OffsetUpdate&) {});
  if (!service.ok()) {
    std::fprintf(stderr, "service_fuzz: cannot open: %s\n", service.status().ToString().c_str());
    std::abort();
  }
  return *std::move(service);
}

template <typename Message>
bool Parse(Message& m, const uint8_t* data, size_t size) {
  return m.ParseFromArray(data, static_cast<int>(size));
}

void Call(Service& service, uint8_t kind, const uint8_t* data, size_t size) {
  switch (kind % 7) {
    case 0: {
      v1::RankRequest request;
      if (!Parse(request, data, size)) return;
      absl::StatusOr<v1::RankReply> reply = service.Rank(request);
      Check(reply.status());
      if (reply.ok() && (kind & 8) != 0 && reply->ranked_size() > 0) {
        v1::CommitPlacement commit;
        commit.set_ranking_id(reply->ranking_id());
        commit.set_candidate(reply->ranked(0).candidate());
        Check(service.Commit(commit).status());
      }
      return;
    }
    case 1: {
      v1::CommitPlacement commit;
      if (Parse(commit, data, size)) Check(service.Commit(commit).status());
      return;
    }
    case 2: {
      v1::GetOffset get;
      if (Parse(get, data, size)) Check(service.GetOffset(get).status());
      return;
    }
    case 3: {
      v1::ProfileUpdate update;
      if (Parse(update, data, size)) Check(service.AcceptProfile(update));
      return;
    }
    case 4: {
      v1::ReleasePlacement release;
      if (Parse(release, data, size)) Check(service.Release(release).status());
      return;
    }
    case 5: {
      v1::GetSnapshot get;
      if (Parse(get, data, size)) Check(service.GetSnapshot(get).status());
      return;
    }
    default: {
      v1::Health health;
      if (Parse(health, data, size)) (void)service.Health(health);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& fixture = TheFixture();
  phasor::daemon::DaemonOptions options = fixture.options;
  options.state_path = fixture.dir + "/state.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((options.state_path + suffix).c_str());

  phasor::daemon::Metrics metrics;
  std::unique_ptr<Service> service = Open(options, &metrics);
  for (int records = 0; size >= 3 && records < kMaxRecords; ++records) {
    const uint8_t kind = data[0];
    const size_t length = std::min<size_t>(size - 3, data[1] | (size_t{data[2]} << 8));
    Call(*service, kind, data + 3, length);
    data += 3 + length;
    size -= 3 + length;
    // The state stays servable whatever was accepted.
    if (absl::StatusOr<v1::Snapshot> snapshot = service->GetSnapshot({}); !snapshot.ok()) {
      std::fprintf(stderr, "service_fuzz: GetSnapshot after a call: %s\n", snapshot.status().ToString().c_str());
      std::abort();
    }
  }

  // A restart restores what was stored, and every stored row still validates.
  const int64_t epoch = service->epoch_us();
  const size_t jobs = service->jobs();
  v1::GetSnapshot get;
  const std::string before = service->GetSnapshot(get)->SerializeAsString();
  service.reset();
  phasor::daemon::Metrics reopened_metrics;
  std::unique_ptr<Service> reopened = Open(options, &reopened_metrics);
  if (reopened->epoch_us() != epoch || reopened->jobs() != jobs) {
    std::fprintf(stderr, "service_fuzz: restart changed epoch %lld -> %lld or jobs %zu -> %zu\n",
                 static_cast<long long>(epoch), static_cast<long long>(reopened->epoch_us()), jobs, reopened->jobs());
    std::abort();
  }
  for (const char* table : {"offsets", "placements", "profiles", "committed_profiles", "committed_links"}) {
    if (reopened_metrics.Value("phasord_quarantined_rows_total", {{"table", table}}) != 0) {
      std::fprintf(stderr, "service_fuzz: a row of '%s' accepted before was quarantined at restart\n", table);
      std::abort();
    }
  }
  absl::StatusOr<v1::Snapshot> after = reopened->GetSnapshot(get);
  if (!after.ok()) std::abort();
  // Request profiles and capacities are kept in memory only (Snapshot's
  // comment), so only the stored part must match: offsets and epoch.
  v1::Snapshot b;
  b.ParseFromString(before);
  if (b.offsets_size() != after->offsets_size() || b.epoch_us() != after->epoch_us()) {
    std::fprintf(stderr, "service_fuzz: restart changed the snapshot's offsets\n");
    std::abort();
  }
  return 0;
}
