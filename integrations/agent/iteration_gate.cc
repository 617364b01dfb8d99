#include "integrations/agent/iteration_gate.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "protocol/framing.h"
#include "zmq_addon.hpp"

namespace phasor::agent {

namespace v1 = ::phasor::v1;
using protocol::MessageType;

namespace {

int64_t SystemNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The payload of an OffsetUpdate for `job` in frames [version, type, payload],
// or nullopt for anything else (other jobs sharing a topic prefix, errors).
std::optional<v1::OffsetUpdate> ParseOffset(const std::vector<std::string>& body, const std::string& job) {
  protocol::FramingOptions framing;
  auto decoded = protocol::DecodeFrames(body, framing);
  if (!std::holds_alternative<protocol::Envelope>(decoded)) return std::nullopt;
  const protocol::Envelope& env = std::get<protocol::Envelope>(decoded);
  v1::OffsetUpdate update;
  if (env.type != MessageType::kOffsetUpdate || !update.ParseFromString(env.payload)) return std::nullopt;
  if (update.job() != job || update.period_us() == 0) return std::nullopt;
  return update;
}

}  // namespace

int64_t IterationGate::NextSlot(const v1::OffsetUpdate& offset, int64_t now) {
  const int64_t period = offset.period_us();
  const int64_t base = offset.origin_epoch_us() + offset.shift_us();
  const int64_t d = now - base;
  // The smallest k with base + k * period >= now (division rounds toward zero).
  const int64_t k = d >= 0 ? (d + period - 1) / period : -((-d) / period);
  return base + k * period;
}

absl::StatusOr<std::unique_ptr<IterationGate>> IterationGate::Create(IterationGateOptions options) {
  if (options.job.empty()) return absl::InvalidArgumentError("job: required");
  if (options.request_endpoint.empty()) return absl::InvalidArgumentError("request_endpoint: required");
  if (options.offset_endpoint.empty()) return absl::InvalidArgumentError("offset_endpoint: required");
  if (options.fail_open_ms < 0) return absl::InvalidArgumentError("fail_open_ms: must be >= 0");
  if (options.retry_ms <= 0) return absl::InvalidArgumentError("retry_ms: must be > 0");
  if (options.initial_offset && options.initial_offset->job() != options.job) {
    return absl::InvalidArgumentError("initial_offset.job: must be the gate's job");
  }
  if (options.initial_offset && options.initial_offset->period_us() == 0) {
    return absl::InvalidArgumentError("initial_offset.period_us: must be > 0");
  }
  if (!options.now_epoch_us) options.now_epoch_us = SystemNowUs;
  std::unique_ptr<IterationGate> gate(new IterationGate(std::move(options), zmq::context_t(1)));
  if (absl::Status s = gate->Open(); !s.ok()) return s;
  return gate;
}

IterationGate::IterationGate(IterationGateOptions options, zmq::context_t context)
    : options_(std::move(options)), context_(std::move(context)) {}

IterationGate::~IterationGate() {
  sub_.close();
  dealer_.close();
}

absl::Status IterationGate::Open() {
  sub_ = zmq::socket_t(context_, zmq::socket_type::sub);
  dealer_ = zmq::socket_t(context_, zmq::socket_type::dealer);
  for (zmq::socket_t* s : {&sub_, &dealer_}) {
    s->set(zmq::sockopt::linger, 0);
    if (options_.curve) {
      if (absl::Status st = client::ApplyCurve(*s, *options_.curve); !st.ok()) return st;
    }
  }
  sub_.set(zmq::sockopt::subscribe, options_.job);
  try {
    sub_.connect(options_.offset_endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrCat("offset_endpoint: '", options_.offset_endpoint, "': ", e.what()));
  }
  try {
    dealer_.connect(options_.request_endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrCat("request_endpoint: '", options_.request_endpoint, "': ", e.what()));
  }
  fail_open_left_us_ = static_cast<int64_t>(options_.fail_open_ms) * 1000;
  if (options_.initial_offset) Accept(*options_.initial_offset);
  SendGetOffset();
  return absl::OkStatus();
}

void IterationGate::SendGetOffset() {
  v1::GetOffset request;
  request.set_request_id(next_request_id_++);
  request.set_job(options_.job);
  const std::vector<std::string> frames = protocol::EncodeFrames(MessageType::kGetOffset, request);
  std::vector<zmq::const_buffer> out = {zmq::const_buffer(nullptr, 0)};
  for (const std::string& f : frames) out.push_back(zmq::buffer(f));
  (void)zmq::send_multipart(dealer_, out, zmq::send_flags::dontwait);
  last_request_us_ = options_.now_epoch_us();
}

void IterationGate::Accept(const v1::OffsetUpdate& update) {
  // Any offset phasord sends (new, changed, or re-sent by its closed loop)
  // re-aligns the next iteration; an older version never replaces a newer one.
  if (offset_ && update.version() < offset_->version()) return;
  offset_ = update;
  offset_->set_request_id(0);
  need_align_ = true;
}

void IterationGate::Drain(int timeout_ms) {
  zmq::pollitem_t items[] = {{sub_.handle(), 0, ZMQ_POLLIN, 0}, {dealer_.handle(), 0, ZMQ_POLLIN, 0}};
  if (zmq::poll(items, 2, std::chrono::milliseconds(timeout_ms)) <= 0) return;
  while (true) {
    bool got = false;
    std::vector<zmq::message_t> in;
    if (zmq::recv_multipart(sub_, std::back_inserter(in), zmq::recv_flags::dontwait)) {
      got = true;
      std::vector<std::string> body;
      for (size_t i = 1; i < in.size(); ++i) body.push_back(in[i].to_string());  // skip the topic
      if (auto u = ParseOffset(body, options_.job)) Accept(*u);
    }
    in.clear();
    if (zmq::recv_multipart(dealer_, std::back_inserter(in), zmq::recv_flags::dontwait)) {
      got = true;
      std::vector<std::string> body;
      for (size_t i = (!in.empty() && in[0].size() == 0) ? 1 : 0; i < in.size(); ++i) body.push_back(in[i].to_string());
      if (auto u = ParseOffset(body, options_.job)) Accept(*u);
    }
    if (!got) return;
  }
}

GateResult IterationGate::Wait() {
  const int64_t start = options_.now_epoch_us();
  GateResult result;
  Drain(0);
  // Without an offset: ask again now and then, and wait within the budget.
  while (!offset_ && fail_open_left_us_ > 0) {
    const int64_t now = options_.now_epoch_us();
    if (now - last_request_us_ >= static_cast<int64_t>(options_.retry_ms) * 1000) SendGetOffset();
    const int64_t slice_us = std::min<int64_t>(fail_open_left_us_, static_cast<int64_t>(options_.retry_ms) * 1000);
    Drain(static_cast<int>((slice_us + 999) / 1000));
    fail_open_left_us_ -= std::max<int64_t>(options_.now_epoch_us() - now, 1000);
  }
  if (!offset_) {
    const int64_t now = options_.now_epoch_us();
    if (now - last_request_us_ >= static_cast<int64_t>(options_.retry_ms) * 1000) SendGetOffset();
    result.failed_open = true;
    result.waited_us = now - start;
    return result;
  }
  if (options_.mode == GateMode::kPace || need_align_) {
    const int64_t slot = NextSlot(*offset_, options_.now_epoch_us());
    // An offset arriving during the sleep is picked up at the next call.
    while (true) {
      const int64_t left = slot - options_.now_epoch_us();
      if (left <= 0) break;
      std::this_thread::sleep_for(std::chrono::microseconds(left));
    }
    need_align_ = false;
    result.aligned = true;
  }
  result.offset_version = offset_->version();
  result.waited_us = options_.now_epoch_us() - start;
  return result;
}

}  // namespace phasor::agent
