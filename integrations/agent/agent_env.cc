#include "integrations/agent/agent_env.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "protocol/curve_keys.h"

namespace phasor::agent {

namespace {

constexpr char kJob[] = "PHASOR_JOB";
constexpr char kRequestEndpoint[] = "PHASOR_REQUEST_ENDPOINT";
constexpr char kOffsetEndpoint[] = "PHASOR_OFFSET_ENDPOINT";
constexpr char kMode[] = "PHASOR_MODE";
constexpr char kFailOpenMs[] = "PHASOR_FAIL_OPEN_MS";
constexpr char kServerKey[] = "PHASOR_SERVER_KEY";
constexpr char kClientKey[] = "PHASOR_CLIENT_KEY";
constexpr char kOriginEpochUs[] = "PHASOR_ORIGIN_EPOCH_US";
constexpr char kPeriodUs[] = "PHASOR_PERIOD_US";
constexpr char kShiftUs[] = "PHASOR_SHIFT_US";
constexpr char kOffsetVersion[] = "PHASOR_OFFSET_VERSION";

// Set and not blank, stripped.
std::optional<std::string> Get(const EnvLookup& lookup, const char* name) {
  std::optional<std::string> v = lookup(name);
  if (!v) return std::nullopt;
  std::string s(absl::StripAsciiWhitespace(*v));
  if (s.empty()) return std::nullopt;
  return s;
}

absl::StatusOr<std::string> Required(const EnvLookup& lookup, const char* name) {
  std::optional<std::string> v = Get(lookup, name);
  if (!v) return absl::InvalidArgumentError(absl::StrCat(name, ": required (not set)"));
  return *v;
}

// One endpoint, or several comma-separated (a phasord leader and its standbys).
absl::StatusOr<std::string> Endpoint(const EnvLookup& lookup, const char* name) {
  absl::StatusOr<std::string> v = Required(lookup, name);
  if (!v.ok()) return v;
  for (absl::string_view part : absl::StrSplit(*v, ',')) {
    const std::string e(absl::StripAsciiWhitespace(part));
    bool ok = false;
    for (const char* transport : {"tcp://", "ipc://", "inproc://"}) {
      ok = ok || (absl::StartsWith(e, transport) && e.size() > std::string(transport).size());
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": '", e, "' is not a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH)"));
    }
  }
  return v;
}

// An integer in [minimum, maximum], or `fallback` when unset.
absl::StatusOr<int64_t> Integer(const EnvLookup& lookup, const char* name, int64_t minimum,
                                int64_t maximum, int64_t fallback) {
  std::optional<std::string> v = Get(lookup, name);
  if (!v) return fallback;
  int64_t n = 0;
  if (!absl::SimpleAtoi(*v, &n) || absl::StartsWith(*v, "+")) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": '", *v, "' is not an integer"));
  }
  if (n < minimum)
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", n, " is below ", minimum));
  if (n > maximum)
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", n, " is above ", maximum));
  return n;
}

absl::Status ReadCurve(const EnvLookup& lookup, IterationGateOptions& o) {
  std::optional<std::string> server = Get(lookup, kServerKey);
  std::optional<std::string> client = Get(lookup, kClientKey);
  if (!server && !client) return absl::OkStatus();
  if (!server)
    return absl::InvalidArgumentError(
        absl::StrCat(kServerKey, ": required when ", kClientKey, " is set"));
  if (!client)
    return absl::InvalidArgumentError(
        absl::StrCat(kClientKey, ": required when ", kServerKey, " is set"));
  absl::StatusOr<protocol::CurveClientKeys> keys =
      protocol::LoadCurveClientKeys(*server, *client, kServerKey, kClientKey);
  if (!keys.ok()) return keys.status();
  o.curve = *std::move(keys);
  return absl::OkStatus();
}

absl::Status ReadInitialOffset(const EnvLookup& lookup, IterationGateOptions& o) {
  const char* names[] = {kOriginEpochUs, kPeriodUs, kShiftUs, kOffsetVersion};
  bool any = false;
  for (const char* n : names) any = any || Get(lookup, n).has_value();
  if (!any) return absl::OkStatus();
  for (const char* n : {kOriginEpochUs, kPeriodUs}) {
    if (!Get(lookup, n)) {
      return absl::InvalidArgumentError(absl::StrCat(n, ": required when any of ", kOriginEpochUs,
                                                     ", ", kPeriodUs, ", ", kShiftUs, ", ",
                                                     kOffsetVersion, " is set"));
    }
  }
  constexpr int64_t kUint32Max =
      std::numeric_limits<uint32_t>::max();  // period and shift are uint32 on the wire
  absl::StatusOr<int64_t> origin =
      Integer(lookup, kOriginEpochUs, 0, std::numeric_limits<int64_t>::max(), 0);
  if (!origin.ok()) return origin.status();
  absl::StatusOr<int64_t> period = Integer(lookup, kPeriodUs, 1, kUint32Max, 0);
  if (!period.ok()) return period.status();
  absl::StatusOr<int64_t> shift = Integer(lookup, kShiftUs, 0, kUint32Max, 0);
  if (!shift.ok()) return shift.status();
  if (*shift >= *period) {
    return absl::InvalidArgumentError(
        absl::StrCat(kShiftUs, ": ", *shift, " is not below ", kPeriodUs, " (", *period, ")"));
  }
  absl::StatusOr<int64_t> version =
      Integer(lookup, kOffsetVersion, 0, std::numeric_limits<int64_t>::max(), 0);
  if (!version.ok()) return version.status();
  phasor::v1::OffsetUpdate offset;
  offset.set_job(o.job);
  offset.set_origin_epoch_us(*origin);
  offset.set_period_us(static_cast<uint32_t>(*period));
  offset.set_shift_us(static_cast<uint32_t>(*shift));
  offset.set_version(static_cast<uint64_t>(*version));
  o.initial_offset = std::move(offset);
  return absl::OkStatus();
}

}  // namespace

EnvLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

absl::StatusOr<IterationGateOptions> GateOptionsFromEnv(const EnvLookup& lookup) {
  IterationGateOptions o;
  absl::StatusOr<std::string> v = Required(lookup, kJob);
  if (!v.ok()) return v.status();
  o.job = *v;
  if (v = Endpoint(lookup, kRequestEndpoint); !v.ok()) return v.status();
  o.request_endpoint = *v;
  if (v = Endpoint(lookup, kOffsetEndpoint); !v.ok()) return v.status();
  o.offset_endpoint = *v;
  const std::string mode = Get(lookup, kMode).value_or("once");
  if (mode == "once") {
    o.mode = GateMode::kOnce;
  } else if (mode == "pace") {
    o.mode = GateMode::kPace;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(kMode, ": '", mode, "' is not 'once' or 'pace'"));
  }
  absl::StatusOr<int64_t> fail_open =
      Integer(lookup, kFailOpenMs, 0, std::numeric_limits<int>::max(), 2000);
  if (!fail_open.ok()) return fail_open.status();
  o.fail_open_ms = static_cast<int>(*fail_open);
  if (absl::Status s = ReadCurve(lookup, o); !s.ok()) return s;
  if (absl::Status s = ReadInitialOffset(lookup, o); !s.ok()) return s;
  return o;
}

GateResult EnvGate::Wait() {
  if (gate) return gate->Wait();
  GateResult result;
  result.failed_open = true;
  return result;
}

EnvGate GateFromEnv(const EnvLookup& lookup, std::ostream* log) {
  EnvGate env;
  absl::StatusOr<IterationGateOptions> options = GateOptionsFromEnv(lookup);
  if (options.ok()) {
    absl::StatusOr<std::unique_ptr<IterationGate>> gate =
        IterationGate::Create(*std::move(options));
    if (gate.ok()) {
      env.gate = *std::move(gate);
      return env;
    }
    // Create() names the option; the user set the variable.
    std::string message(gate.status().message());
    for (const auto& [option, variable] :
         {std::pair<std::string, std::string>{"request_endpoint", kRequestEndpoint},
          {"offset_endpoint", kOffsetEndpoint}}) {
      if (absl::StartsWith(message, option + ":"))
        message = variable + message.substr(option.size());
    }
    env.status = absl::Status(gate.status().code(), message);
  } else {
    env.status = options.status();
  }
  if (log != nullptr)
    *log << "phasor: " << env.status.message()
         << "; the gate fails open (iterations are not paced)\n";
  return env;
}

}  // namespace phasor::agent
