#include "integrations/agent/iteration_gate.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace phasor::agent {

namespace v1 = ::phasor::v1;

namespace {

int64_t SystemNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int64_t IterationGate::NextSlot(const v1::OffsetUpdate& offset, int64_t now) {
  return NextSlot(offset.origin_epoch_us() + offset.shift_us(), offset.period_us(), now);
}

int64_t IterationGate::NextSlot(int64_t base, int64_t period, int64_t now) {
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
  if (!options.sleep_us) {
    options.sleep_us = [](int64_t us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); };
  }
  absl::StatusOr<std::unique_ptr<client::OffsetSubscriber>> offsets = client::OffsetSubscriber::Connect(
      {options.job, options.request_endpoint, options.offset_endpoint, options.curve});
  if (!offsets.ok()) return offsets.status();
  std::unique_ptr<IterationGate> gate(new IterationGate(std::move(options), *std::move(offsets)));
  gate->SendGetOffset();
  return gate;
}

IterationGate::IterationGate(IterationGateOptions options, std::unique_ptr<client::OffsetSubscriber> offsets)
    : options_(std::move(options)), offsets_(std::move(offsets)) {
  fail_open_left_us_ = static_cast<int64_t>(options_.fail_open_ms) * 1000;
  if (options_.initial_offset) Accept(*options_.initial_offset);
}

IterationGate::~IterationGate() = default;

void IterationGate::SendGetOffset() {
  offsets_->RequestOffset();
  last_request_us_ = options_.now_epoch_us();
}

namespace {

// The same slots: origin + shift + n * period for the same period.
bool SameSlotGrid(const v1::OffsetUpdate& a, const v1::OffsetUpdate& b) {
  if (a.period_us() != b.period_us() || a.period_us() == 0) return false;
  const int64_t period = a.period_us();
  const int64_t d = (a.origin_epoch_us() + a.shift_us()) - (b.origin_epoch_us() + b.shift_us());
  return d % period == 0;
}

}  // namespace

void IterationGate::Accept(const v1::OffsetUpdate& update) {
  // An older version never replaces a newer one, and the offset in force
  // heard again (re-published, answering GetOffset) is no reason to wait:
  // only a newer version or another slot grid re-aligns.
  if (offset_ && update.version() < offset_->version()) return;
  if (offset_ && update.version() == offset_->version() && SameSlotGrid(update, *offset_)) return;
  offset_ = update;
  offset_->set_request_id(0);
  need_align_ = true;
  last_slot_.reset();  // back on phasord's grid
}

void IterationGate::Drain(int timeout_ms) {
  for (const v1::OffsetUpdate& u : offsets_->Poll(timeout_ms)) Accept(u);
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
    const int64_t now = options_.now_epoch_us();
    const int64_t period = offset_->period_us();
    int64_t slot = 0;
    if (need_align_ || !last_slot_) {
      slot = NextSlot(*offset_, now);  // phasord's grid
    } else if (options_.reslot && now - *last_slot_ > period) {
      // The last iteration overran its slot: the next slot of the grid is
      // gone, and waiting for the one after would lose most of a period.
      // Start now; the grid re-anchors here (SimJob::pace_reslot).
      slot = now;
      result.reslotted = true;
    } else {
      slot = NextSlot(*last_slot_, period, now);
    }
    // An offset arriving during the sleep is picked up at the next call.
    while (true) {
      const int64_t left = slot - options_.now_epoch_us();
      if (left <= 0) break;
      options_.sleep_us(left);
    }
    last_slot_ = slot;
    need_align_ = false;
    result.aligned = true;
    result.slot_epoch_us = slot;
  }
  result.offset_version = offset_->version();
  result.waited_us = options_.now_epoch_us() - start;
  return result;
}

}  // namespace phasor::agent
