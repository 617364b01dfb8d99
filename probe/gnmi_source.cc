#include "probe/gnmi_source.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "probe/gnmi.grpc.pb.h"
#include "probe/gnmi.pb.h"

namespace phasor::probe {
namespace {

int64_t WallNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---------------------------------------------------------------------------
// Paths.

// A gNMI path string: "[origin:]/name[key=value][key2=value2]/name/...".
// Inside brackets '/' is literal (interface names such as "Ethernet1/1");
// '\' escapes ']', '=' and '\'.
absl::StatusOr<gnmi::Path> ParsePathString(absl::string_view text) {
  gnmi::Path path;
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("gNMI path '", text, "': ", why));
  };
  absl::string_view rest = text;
  if (rest.empty()) return bad("empty");
  // "origin:/..." (an origin holds no '/' or '['); a leading '/' is optional
  // (SONiC's examples write "COUNTERS/Ethernet*").
  if (const size_t colon = rest.find(":/");
      colon != absl::string_view::npos &&
      rest.substr(0, colon).find_first_of("/[") == absl::string_view::npos) {
    path.set_origin(std::string(rest.substr(0, colon)));
    rest.remove_prefix(colon + 1);
  }
  if (rest.front() == '/') rest.remove_prefix(1);
  if (rest.empty()) return bad("names no element");
  while (!rest.empty()) {
    gnmi::PathElem* elem = path.add_elem();
    std::string name;
    while (!rest.empty() && rest.front() != '/' && rest.front() != '[') {
      name.push_back(rest.front());
      rest.remove_prefix(1);
    }
    if (name.empty()) return bad("an empty element");
    elem->set_name(name);
    while (!rest.empty() && rest.front() == '[') {
      rest.remove_prefix(1);
      std::string key, value;
      bool in_value = false, closed = false;
      while (!rest.empty()) {
        char c = rest.front();
        rest.remove_prefix(1);
        if (c == '\\' && !rest.empty()) {
          c = rest.front();
          rest.remove_prefix(1);
          (in_value ? value : key).push_back(c);
          continue;
        }
        if (c == ']') {
          closed = true;
          break;
        }
        if (c == '=' && !in_value) {
          in_value = true;
          continue;
        }
        (in_value ? value : key).push_back(c);
      }
      if (!closed) return bad("a '[' without its ']'");
      if (!in_value || key.empty()) return bad(absl::StrCat("key '", key, "' needs '=value'"));
      (*elem->mutable_key())[key] = value;
    }
    if (!rest.empty()) {
      if (rest.front() != '/') return bad("expected '/' after ']'");
      rest.remove_prefix(1);
      if (rest.empty()) return bad("ends with '/'");
    }
  }
  return path;
}

// ---------------------------------------------------------------------------
// Decoding.

enum class Leaf { kNone, kIn, kOut };

absl::string_view StripModule(absl::string_view name) {
  const size_t colon = name.find(':');
  return colon == absl::string_view::npos ? name : name.substr(colon + 1);
}

Leaf LeafOf(absl::string_view name) {
  name = StripModule(name);
  if (name == "in-octets" || name == "SAI_PORT_STAT_IF_IN_OCTETS") return Leaf::kIn;
  if (name == "out-octets" || name == "SAI_PORT_STAT_IF_OUT_OCTETS") return Leaf::kOut;
  return Leaf::kNone;
}

bool IsWildcard(absl::string_view name) { return name.find('*') != absl::string_view::npos; }

// Where a reading goes: (interface, out?, value, time).
using ReadingSink = std::function<void(absl::string_view, bool, uint64_t, int64_t)>;

struct Decoder {
  GnmiDecodeCounts* counts;
  const ReadingSink* sink;

  void Bad(const std::string& what) {
    ++counts->bad_values;
    if (counts->first_bad_value.empty()) counts->first_bad_value = what;
  }

  // A count from a JSON scalar: a non-negative integer, or a string of one.
  bool CountOf(const nlohmann::json& v, uint64_t* out) {
    if (v.is_number_unsigned()) {
      *out = v.get<uint64_t>();
      return true;
    }
    if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      if (x < 0) return false;
      *out = static_cast<uint64_t>(x);
      return true;
    }
    if (v.is_number_float()) {
      const double x = v.get<double>();
      if (!(x >= 0 && x < 18446744073709551616.0) || x != std::floor(x)) return false;
      *out = static_cast<uint64_t>(x);
      return true;
    }
    if (v.is_string()) return absl::SimpleAtoi(v.get_ref<const std::string&>(), out);
    return false;
  }

  // Walks a JSON subtree for octet counter leaves. `iface` is the interface
  // the path named ("" when it named none or a wildcard); keys that are not
  // schema containers name an interface (SONiC's {"Ethernet0": {...}}), as
  // does the "name" of a list entry (OpenConfig's interface list).
  int Walk(const nlohmann::json& node, const std::string& iface, int64_t time_us, int depth) {
    if (depth > 8) return 0;
    int found = 0;
    if (node.is_array()) {
      for (const nlohmann::json& e : node) {
        std::string name = iface;
        if (e.is_object()) {
          auto it = e.find("name");
          if (it != e.end() && it->is_string()) name = it->get<std::string>();
        }
        found += Walk(e, name, time_us, depth + 1);
      }
      return found;
    }
    if (!node.is_object()) return 0;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const absl::string_view key = StripModule(it.key());
      const Leaf leaf = LeafOf(key);
      if (leaf != Leaf::kNone && !it->is_structured()) {
        ++found;
        if (iface.empty()) {
          ++counts->unattributed;
          continue;
        }
        uint64_t value = 0;
        if (!CountOf(*it, &value)) {
          Bad(absl::StrCat(iface, " ", key, ": '", it->dump(), "' is not a count"));
          continue;
        }
        (*sink)(iface, leaf == Leaf::kOut, value, time_us);
      } else if (it->is_structured()) {
        const bool schema = key == "interfaces" || key == "interface" || key == "state" ||
                            key == "counters" || key == "COUNTERS";
        const std::string child = schema || !iface.empty() ? iface : it.key();
        found += Walk(*it, child, time_us, depth + 1);
      }
    }
    return found;
  }

  void Scalar(const gnmi::TypedValue& v, const std::string& iface, Leaf leaf, int64_t time_us) {
    uint64_t value = 0;
    bool ok = false;
    std::string text;
    switch (v.value_case()) {
      case gnmi::TypedValue::kUintVal:
        value = v.uint_val();
        ok = true;
        break;
      case gnmi::TypedValue::kIntVal:
        ok = v.int_val() >= 0;
        value = static_cast<uint64_t>(v.int_val());
        text = std::to_string(v.int_val());
        break;
      case gnmi::TypedValue::kDoubleVal: {
        const double x = v.double_val();
        ok = x >= 0 && x < 18446744073709551616.0 && x == std::floor(x);
        if (ok) value = static_cast<uint64_t>(x);
        text = std::to_string(x);
        break;
      }
      case gnmi::TypedValue::kStringVal:
        text = v.string_val();
        ok = absl::SimpleAtoi(text, &value);
        break;
      case gnmi::TypedValue::kAsciiVal:
        text = v.ascii_val();
        ok = absl::SimpleAtoi(text, &value);
        break;
      default:
        text = absl::StrCat("a value of type ", v.value_case());
        break;
    }
    if (!ok) {
      Bad(absl::StrCat(iface, " ", leaf == Leaf::kOut ? "out-octets" : "in-octets", ": '", text,
                       "' is not a count"));
      return;
    }
    (*sink)(iface, leaf == Leaf::kOut, value, time_us);
  }

  void Update(const gnmi::Path& prefix, const gnmi::Update& u, int64_t time_us) {
    // The interface and the leaf the full path (prefix + path) names.
    std::string iface;
    bool wildcard = false;
    absl::string_view last;
    bool counters_table = false;  // SONiC COUNTERS_DB: COUNTERS/<port>/<field>
    auto visit = [&](const gnmi::PathElem& e) {
      const absl::string_view name = StripModule(e.name());
      if (counters_table && iface.empty()) {
        if (IsWildcard(name)) {
          wildcard = true;
        } else {
          iface = e.name();
        }
        counters_table = false;
      }
      if (name == "interface") {
        auto it = e.key().find("name");
        if (it != e.key().end()) {
          if (IsWildcard(it->second)) {
            wildcard = true;
          } else {
            iface = it->second;
          }
        }
      } else if (name == "COUNTERS" && iface.empty()) {
        counters_table = true;
      }
      last = e.name();
    };
    for (const gnmi::PathElem& e : prefix.elem()) visit(e);
    for (const gnmi::PathElem& e : u.path().elem()) visit(e);
    const Leaf leaf = LeafOf(last);
    const gnmi::TypedValue& v = u.val();
    const bool json = v.value_case() == gnmi::TypedValue::kJsonVal ||
                      v.value_case() == gnmi::TypedValue::kJsonIetfVal;
    nlohmann::json parsed;
    if (json) {
      const std::string& text =
          v.value_case() == gnmi::TypedValue::kJsonVal ? v.json_val() : v.json_ietf_val();
      parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      const char* why = nullptr;
      if (parsed.is_discarded()) {
        why = "' is not JSON";
      } else if (parsed.is_structured()) {
        // A subtree (a container subscription, SONiC's per-port objects, a
        // leaf wrapped as {"module:leaf": value}).
        if (Walk(parsed, wildcard ? std::string() : iface, time_us, 0) > 0) return;
        why = "' holds no octet counter";
      }
      if (why != nullptr) {
        if (leaf != Leaf::kNone) {
          Bad(absl::StrCat(iface, " ", last, ": '", text.substr(0, 80), why));
        } else {
          ++counts->other_leaves;
        }
        return;
      }
    }
    if (leaf == Leaf::kNone) {
      ++counts->other_leaves;
      return;
    }
    if (iface.empty() || wildcard) {
      ++counts->unattributed;
      return;
    }
    if (!json) {
      Scalar(v, iface, leaf, time_us);
      return;
    }
    uint64_t value = 0;
    if (!CountOf(parsed, &value)) {
      Bad(absl::StrCat(iface, " ", last, ": '", parsed.dump(), "' is not a count"));
      return;
    }
    (*sink)(iface, leaf == Leaf::kOut, value, time_us);
  }

  void Response(const gnmi::SubscribeResponse& r, int64_t receive_time_us) {
    if (r.response_case() == gnmi::SubscribeResponse::kSyncResponse) {
      ++counts->sync_responses;
      return;
    }
    if (r.response_case() != gnmi::SubscribeResponse::kUpdate) return;
    const gnmi::Notification& n = r.update();
    ++counts->notifications;
    const int64_t time_us = n.timestamp() > 0 ? n.timestamp() / 1000 : receive_time_us;
    for (const gnmi::Update& u : n.update()) Update(n.prefix(), u, time_us);
  }
};

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(what, ": cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": '", path, "' is not PEM"));
  }
  return text.str();
}

// Statuses a retry does not fix: the target refused the subscription or the
// credentials.
bool Permanent(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return true;
    default:
      return false;
  }
}

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "status";
  }
}

}  // namespace

// One series' readings, kept sorted by time and unique in time.
struct GnmiSeriesReadings {
  std::string interface;
  bool out = false;
  std::vector<CounterReading> readings;
  uint64_t since_trim = 0;
};

// ---------------------------------------------------------------------------

absl::StatusOr<GnmiTarget> ParseGnmiTarget(absl::string_view text) {
  GnmiTarget t;
  absl::string_view address = text;
  if (const size_t eq = text.find('='); eq != absl::string_view::npos) {
    t.name = std::string(text.substr(0, eq));
    address = text.substr(eq + 1);
    if (t.name.empty() || t.name.find('/') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gNMI target '", text, "': the name before '=' must be non-empty and hold no '/'"));
    }
  }
  const size_t colon = address.rfind(':');
  const bool bracketed = !address.empty() && address.front() == '[';
  if (colon == absl::string_view::npos || colon == 0 ||
      (bracketed && (colon < 2 || address[colon - 1] != ']'))) {
    return absl::InvalidArgumentError(
        absl::StrCat("gNMI target '", text, "': expected [NAME=]HOST:PORT"));
  }
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("gNMI target '", text, "': port '",
                                                   address.substr(colon + 1),
                                                   "' is not a number in 1..65535"));
  }
  t.address = std::string(address);
  if (t.name.empty()) t.name = t.address;
  return t;
}

absl::StatusOr<std::vector<GnmiCounterReading>> DecodeGnmiResponse(absl::string_view bytes,
                                                                   int64_t receive_time_us,
                                                                   GnmiDecodeCounts* counts) {
  gnmi::SubscribeResponse response;
  if (!response.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a gnmi.SubscribeResponse (", bytes.size(), " bytes)"));
  }
  std::vector<GnmiCounterReading> out;
  const ReadingSink sink = [&](absl::string_view iface, bool is_out, uint64_t value,
                               int64_t time_us) {
    out.push_back({std::string(iface), is_out, value, time_us});
  };
  GnmiDecodeCounts local;
  Decoder decoder{counts ? counts : &local, &sink};
  decoder.Response(response, receive_time_us);
  return out;
}

// One target: its worker thread's state and the series it fills.
struct GnmiTargetState {
  GnmiTarget target;
  mutable std::mutex mu;  // guards everything below but the control block
  absl::flat_hash_map<std::string, std::array<int, 2>> index;  // interface -> series (in, out)
  std::vector<GnmiSeriesReadings> series;
  GnmiTargetStats stats;
  GnmiDecodeCounts decode;
  // Control: the call in progress (for the watchdog and Stop()).
  std::mutex call_mu;
  grpc::ClientContext* call = nullptr;
  int64_t last_message_us = 0;
  bool stalled = false;
  std::thread thread;
};

struct GnmiCollector::Impl {
  GnmiOptions options;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  gnmi::SubscribeRequest request;
  int64_t stall_us = 0;
  std::vector<std::unique_ptr<GnmiTargetState>> targets;
  std::atomic<size_t> series_count{0};
  std::atomic<bool> stopping{false};
  std::mutex wait_mu;
  std::condition_variable wait_cv;
  std::thread watchdog;
  bool stopped = false;

  // Waits up to `us` or until Stop(); false when stopping.
  bool Sleep(int64_t us) {
    std::unique_lock<std::mutex> lock(wait_mu);
    wait_cv.wait_for(lock, std::chrono::microseconds(us), [&] { return stopping.load(); });
    return !stopping.load();
  }

  void Add(GnmiTargetState& t, absl::string_view iface, bool out, uint64_t value, int64_t time_us) {
    // Called with t.mu held.
    auto it = t.index.find(iface);
    if (it == t.index.end())
      it = t.index.emplace(std::string(iface), std::array<int, 2>{-1, -1}).first;
    int& slot = it->second[out ? 1 : 0];
    if (slot < 0) {
      if (series_count.fetch_add(1) >= options.max_series) {
        series_count.fetch_sub(1);
        ++t.stats.series_over_limit;
        return;
      }
      slot = static_cast<int>(t.series.size());
      t.series.push_back({std::string(iface), out, {}, 0});
    }
    GnmiSeriesReadings& s = t.series[slot];
    std::vector<CounterReading>& r = s.readings;
    ++t.stats.readings;
    if (r.empty() || time_us > r.back().time_us) {
      r.push_back({time_us, value});
    } else {
      auto pos =
          std::lower_bound(r.begin(), r.end(), time_us,
                           [](const CounterReading& a, int64_t time) { return a.time_us < time; });
      if (pos != r.end() && pos->time_us == time_us) {
        if (pos->value == value) {
          ++t.stats.duplicates;
        } else {
          ++t.stats.conflicts;
        }
        return;
      }
      ++t.stats.out_of_order;
      r.insert(pos, {time_us, value});
    }
    // Bounds: the window and the per-series cap, checked now and then.
    if (++s.since_trim >= 256 || r.size() > options.max_readings_per_series) {
      s.since_trim = 0;
      const int64_t oldest = r.back().time_us - options.window_us;
      auto keep =
          std::lower_bound(r.begin(), r.end(), oldest,
                           [](const CounterReading& a, int64_t time) { return a.time_us < time; });
      if (r.end() - keep > static_cast<std::ptrdiff_t>(options.max_readings_per_series)) {
        keep = r.end() - static_cast<std::ptrdiff_t>(options.max_readings_per_series * 3 / 4);
      }
      t.stats.trimmed += static_cast<uint64_t>(keep - r.begin());
      r.erase(r.begin(), keep);
    }
  }

  void Fail(GnmiTargetState& t, const std::string& why) {
    std::lock_guard<std::mutex> lock(t.mu);
    ++t.stats.failures;
    t.stats.last_error = why;
  }

  void Run(GnmiTargetState& t) {
    std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(t.target.address)));
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    int64_t backoff = options.backoff_initial_us;
    auto wait_backoff = [&] {
      const int64_t wait = static_cast<int64_t>(static_cast<double>(backoff) * jitter(rng));
      backoff = std::min(options.backoff_max_us, 2 * backoff);
      return Sleep(wait);
    };
    grpc::ChannelArguments args;
    if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    const ReadingSink sink = [&](absl::string_view iface, bool out, uint64_t value,
                                 int64_t time_us) { Add(t, iface, out, value, time_us); };
    while (!stopping.load()) {
      {
        std::lock_guard<std::mutex> lock(t.mu);
        ++t.stats.attempts;
      }
      // A fresh channel per attempt: the wait between attempts is ours, not
      // the channel's own reconnect backoff.
      std::shared_ptr<grpc::Channel> channel =
          grpc::CreateCustomChannel(t.target.address, credentials, args);
      const auto give_up_at =
          std::chrono::system_clock::now() + std::chrono::microseconds(options.connect_timeout_us);
      bool connected = false;
      while (!stopping.load() && std::chrono::system_clock::now() < give_up_at) {
        const auto slice =
            std::min(give_up_at, std::chrono::system_clock::now() + std::chrono::milliseconds(100));
        if (channel->WaitForConnected(slice)) {
          connected = true;
          break;
        }
      }
      if (stopping.load()) break;
      if (!connected) {
        Fail(t, absl::StrCat("no connection within ", options.connect_timeout_us / 1e6,
                             " s (TCP, TLS or HTTP/2 set-up did not complete)"));
        if (!wait_backoff()) break;
        continue;
      }
      auto stub = gnmi::gNMI::NewStub(channel);
      grpc::ClientContext context;
      if (!options.username.empty()) {
        context.AddMetadata("username", options.username);
        context.AddMetadata("password", options.password);
      }
      {
        std::lock_guard<std::mutex> lock(t.call_mu);
        t.call = &context;
        t.last_message_us = WallNowUs();
        t.stalled = false;
      }
      if (stopping.load()) context.TryCancel();
      std::unique_ptr<grpc::ClientReaderWriter<gnmi::SubscribeRequest, gnmi::SubscribeResponse>>
          stream = stub->Subscribe(&context);
      bool delivered = false;
      if (stream->Write(request)) {
        gnmi::SubscribeResponse response;
        while (stream->Read(&response)) {
          const int64_t now = WallNowUs();
          {
            std::lock_guard<std::mutex> lock(t.call_mu);
            t.last_message_us = now;
          }
          std::lock_guard<std::mutex> lock(t.mu);
          if (!delivered) {
            delivered = true;
            ++t.stats.streams;
          }
          Decoder decoder{&t.decode, &sink};
          decoder.Response(response, now);
        }
      }
      const grpc::Status status = stream->Finish();
      bool stalled;
      {
        std::lock_guard<std::mutex> lock(t.call_mu);
        t.call = nullptr;
        stalled = t.stalled;
      }
      if (stopping.load()) break;
      if (delivered) backoff = options.backoff_initial_us;
      std::string why;
      if (stalled) {
        why = absl::StrCat("no message for ", stall_us / 1e6, " s: stream restarted");
      } else if (status.ok()) {
        why = "the target closed the stream";
      } else {
        why = absl::StrCat(CodeName(status.error_code()), ": ", status.error_message());
      }
      Fail(t, why);
      if (!stalled && Permanent(status.error_code())) {
        std::lock_guard<std::mutex> lock(t.mu);
        t.stats.gave_up = true;
        break;
      }
      if (!wait_backoff()) break;
    }
  }

  void Watch() {
    const int64_t tick = std::clamp<int64_t>(stall_us / 4, 10000, 100000);
    while (Sleep(tick)) {
      const int64_t now = WallNowUs();
      for (auto& t : targets) {
        std::lock_guard<std::mutex> lock(t->call_mu);
        if (t->call != nullptr && !t->stalled && now - t->last_message_us > stall_us) {
          t->stalled = true;
          t->call->TryCancel();
        }
      }
    }
  }
};

GnmiCollector::GnmiCollector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GnmiCollector::~GnmiCollector() { Stop(); }

absl::StatusOr<std::unique_ptr<GnmiCollector>> GnmiCollector::Start(const GnmiOptions& options) {
  const GnmiOptions& o = options;
  if (o.targets.empty()) return absl::InvalidArgumentError("targets: none given");
  if (o.paths.empty()) return absl::InvalidArgumentError("paths: none given");
  if (o.sample_interval_us < 1000 || o.sample_interval_us > 3600000000) {
    return absl::InvalidArgumentError(absl::StrCat("sample_interval_us: ", o.sample_interval_us,
                                                   " is outside 1000 (1 ms) .. 3600000000 (1 h)"));
  }
  if (o.connect_timeout_us < 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect_timeout_us: ", o.connect_timeout_us, " is below 1000"));
  }
  if (o.stall_timeout_us < 0) return absl::InvalidArgumentError("stall_timeout_us: negative");
  if (o.backoff_initial_us < 1000 || o.backoff_max_us < o.backoff_initial_us) {
    return absl::InvalidArgumentError(
        "backoff_initial_us: must be >= 1000 and at most backoff_max_us");
  }
  if (o.window_us <= 0 || o.max_readings_per_series < 16 || o.max_series < 1) {
    return absl::InvalidArgumentError(
        "window_us, max_readings_per_series (>= 16) and max_series: must be positive");
  }
  gnmi::Encoding encoding;
  if (o.encoding == "proto") {
    encoding = gnmi::PROTO;
  } else if (o.encoding == "json") {
    encoding = gnmi::JSON;
  } else if (o.encoding == "json_ietf") {
    encoding = gnmi::JSON_IETF;
  } else if (o.encoding == "ascii") {
    encoding = gnmi::ASCII;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("encoding: '", o.encoding, "' is not proto, json, json_ietf or ascii"));
  }
  if (!o.password.empty() && o.username.empty()) {
    return absl::InvalidArgumentError("password: given without a username");
  }
  if (o.insecure && (!o.ca_file.empty() || !o.cert_file.empty() || !o.key_file.empty() ||
                     !o.tls_server_name.empty())) {
    return absl::InvalidArgumentError(
        "insecure: the TLS options (CA, client certificate, server name) need TLS");
  }
  if (o.cert_file.empty() != o.key_file.empty()) {
    return absl::InvalidArgumentError("cert_file and key_file: give both or neither");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  impl->stall_us = o.stall_timeout_us > 0 ? o.stall_timeout_us
                                          : std::max<int64_t>(5000000, 20 * o.sample_interval_us);
  if (o.insecure) {
    impl->credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions tls;
    if (!o.ca_file.empty()) {
      auto pem = ReadPem(o.ca_file, "CA file");
      if (!pem.ok()) return pem.status();
      tls.pem_root_certs = *pem;
    }
    if (!o.cert_file.empty()) {
      auto cert = ReadPem(o.cert_file, "client certificate");
      if (!cert.ok()) return cert.status();
      auto key = ReadPem(o.key_file, "client key");
      if (!key.ok()) return key.status();
      tls.pem_cert_chain = *cert;
      tls.pem_private_key = *key;
    }
    impl->credentials = grpc::SslCredentials(tls);
  }
  gnmi::SubscriptionList* list = impl->request.mutable_subscribe();
  list->set_mode(gnmi::SubscriptionList::STREAM);
  list->set_encoding(encoding);
  if (!o.prefix_target.empty()) list->mutable_prefix()->set_target(o.prefix_target);
  for (const std::string& text : o.paths) {
    auto path = ParsePathString(text);
    if (!path.ok()) return path.status();
    gnmi::Subscription* s = list->add_subscription();
    *s->mutable_path() = *std::move(path);
    s->set_mode(gnmi::SAMPLE);
    s->set_sample_interval(static_cast<uint64_t>(o.sample_interval_us) * 1000);
  }
  for (const GnmiTarget& target : o.targets) {
    auto t = std::make_unique<GnmiTargetState>();
    t->target = target;
    if (t->target.name.empty()) t->target.name = t->target.address;
    t->stats.name = t->target.name;
    t->stats.address = t->target.address;
    impl->targets.push_back(std::move(t));
  }
  Impl* raw = impl.get();
  for (auto& t : raw->targets) {
    GnmiTargetState* state = t.get();
    state->thread = std::thread([raw, state] { raw->Run(*state); });
  }
  raw->watchdog = std::thread([raw] { raw->Watch(); });
  return std::unique_ptr<GnmiCollector>(new GnmiCollector(std::move(impl)));
}

void GnmiCollector::Stop() {
  if (impl_ == nullptr || impl_->stopped) return;
  impl_->stopping.store(true);
  {
    std::lock_guard<std::mutex> lock(impl_->wait_mu);
    impl_->wait_cv.notify_all();
  }
  for (auto& t : impl_->targets) {
    std::lock_guard<std::mutex> lock(t->call_mu);
    if (t->call != nullptr) t->call->TryCancel();
  }
  for (auto& t : impl_->targets) {
    if (t->thread.joinable()) t->thread.join();
  }
  if (impl_->watchdog.joinable()) impl_->watchdog.join();
  impl_->stopped = true;
}

CounterCollection GnmiCollector::Snapshot() const {
  CounterCollection out;
  out.bin_us = static_cast<uint32_t>(impl_->options.sample_interval_us);
  const double interval = static_cast<double>(impl_->options.sample_interval_us);
  for (const auto& t : impl_->targets) {
    std::vector<GnmiSeriesReadings> series;
    GnmiTargetStats stats;
    GnmiDecodeCounts decode;
    {
      std::lock_guard<std::mutex> lock(t->mu);
      series = t->series;
      stats = t->stats;
      decode = t->decode;
    }
    const std::string source = "gnmi:" + t->target.address;
    uint64_t wraps = 0, resets = 0;
    for (const GnmiSeriesReadings& s : series) {
      CounterSeries cs;
      cs.subject = absl::StrCat(t->target.name, "/", s.interface, s.out ? "/out" : "/in");
      cs.source = source;
      cs.intervals = DeltasFromReadings(s.readings, 64, 1.0, &wraps, &resets);
      if (cs.intervals.empty()) continue;
      SamplingReport report;
      report.interval_us = impl_->options.sample_interval_us;
      report.reads = s.readings.size();
      std::vector<double> off;
      for (size_t i = 1; i < s.readings.size(); ++i) {
        off.push_back(std::abs(
            static_cast<double>(s.readings[i].time_us - s.readings[i - 1].time_us) - interval));
      }
      if (!off.empty()) {
        double sum = 0;
        for (double x : off) sum += x;
        report.jitter_mean_us = sum / off.size();
        std::sort(off.begin(), off.end());
        report.jitter_p99_us =
            off[std::min(off.size() - 1, static_cast<size_t>(std::ceil(0.99 * off.size())) - 1)];
        report.jitter_max_us = off.back();
      }
      cs.sampling = report;
      out.series.push_back(std::move(cs));
    }
    {
      std::lock_guard<std::mutex> lock(t->mu);
      t->stats.wraps = wraps;
      t->stats.resets = resets;
    }
    std::vector<std::string> parts;
    parts.push_back(absl::StrCat(stats.streams, " stream(s) in ", stats.attempts, " attempt(s)"));
    if (stats.failures > 0) {
      parts.push_back(absl::StrCat(stats.failures, " failure(s), the last: ", stats.last_error));
    }
    if (stats.gave_up) parts.push_back("gave up (the target refused for good)");
    parts.push_back(absl::StrCat(stats.readings, " readings in ", series.size(), " series"));
    if (stats.out_of_order > 0) parts.push_back(absl::StrCat(stats.out_of_order, " out of order"));
    if (stats.duplicates > 0)
      parts.push_back(absl::StrCat(stats.duplicates, " duplicate(s) dropped"));
    if (stats.conflicts > 0) {
      parts.push_back(absl::StrCat(
          stats.conflicts, " conflicting duplicate(s) (same time, other value; the first kept)"));
    }
    if (wraps > 0) parts.push_back(absl::StrCat(wraps, " counter wrap(s)"));
    if (resets > 0) parts.push_back(absl::StrCat(resets, " counter reset(s) skipped"));
    if (decode.bad_values > 0) {
      parts.push_back(absl::StrCat(decode.bad_values,
                                   " bad value(s) skipped (first: ", decode.first_bad_value, ")"));
    }
    if (decode.unattributed > 0) {
      parts.push_back(absl::StrCat(decode.unattributed, " counter(s) naming no interface skipped"));
    }
    if (stats.series_over_limit > 0) {
      parts.push_back(
          absl::StrCat(stats.series_over_limit, " reading(s) beyond max_series skipped"));
    }
    if (stats.trimmed > 0) parts.push_back(absl::StrCat(stats.trimmed, " old reading(s) trimmed"));
    out.notes.push_back(absl::StrCat("gnmi ", t->target.name, " (", t->target.address,
                                     "): ", absl::StrJoin(parts, ", ")));
  }
  return out;
}

std::vector<GnmiTargetStats> GnmiCollector::Stats() const {
  std::vector<GnmiTargetStats> out;
  for (const auto& t : impl_->targets) {
    std::lock_guard<std::mutex> lock(t->mu);
    GnmiTargetStats s = t->stats;
    s.notifications = t->decode.notifications;
    s.sync_responses = t->decode.sync_responses;
    s.other_leaves = t->decode.other_leaves;
    s.bad_values = t->decode.bad_values;
    s.unattributed = t->decode.unattributed;
    s.first_bad_value = t->decode.first_bad_value;
    out.push_back(std::move(s));
  }
  return out;
}

bool GnmiCollector::AllGaveUp() const {
  for (const auto& t : impl_->targets) {
    std::lock_guard<std::mutex> lock(t->mu);
    if (!t->stats.gave_up) return false;
  }
  return true;
}

absl::StatusOr<CounterCollection> GnmiSource::Collect() {
  auto collector = GnmiCollector::Start(options_);
  if (!collector.ok()) return collector.status();
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::microseconds(options_.duration_us);
  while (std::chrono::steady_clock::now() < end) {
    if (stop_ != nullptr && stop_->load()) break;
    if ((*collector)->AllGaveUp()) break;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        end - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
  }
  (*collector)->Stop();
  CounterCollection out = (*collector)->Snapshot();
  stats_ = (*collector)->Stats();
  if (!out.series.empty()) return out;
  return GnmiNoCountersError(stats_);
}

absl::Status GnmiNoCountersError(const std::vector<GnmiTargetStats>& stats) {
  std::vector<std::string> why;
  bool all_refused = !stats.empty();
  bool any_unauthenticated = false;
  for (const GnmiTargetStats& s : stats) {
    why.push_back(absl::StrCat(s.name, " (", s.address, "): ",
                               s.readings > 0         ? "no counter advanced"
                               : s.last_error.empty() ? "no octet counters received"
                                                      : s.last_error));
    const bool unauthenticated = s.last_error.starts_with("UNAUTHENTICATED");
    const bool denied = s.last_error.starts_with("PERMISSION_DENIED");
    all_refused = all_refused && s.gave_up && (unauthenticated || denied);
    any_unauthenticated = any_unauthenticated || unauthenticated;
  }
  const std::string message =
      absl::StrCat("gnmi: no interface counters: ", absl::StrJoin(why, "; "));
  if (all_refused) {
    return any_unauthenticated ? absl::UnauthenticatedError(message)
                               : absl::PermissionDeniedError(message);
  }
  return absl::UnavailableError(message);
}

}  // namespace phasor::probe
