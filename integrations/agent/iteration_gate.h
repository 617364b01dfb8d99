// The training-loop agent (SPEC section 7): call Wait() at the top of every
// iteration. The gate follows its job's offset through the client's
// OffsetSubscriber (published OffsetUpdates, and GetOffset so that a late
// joiner is never lost), and holds the iteration
// until the job's next slot origin + shift + n * period:
//   - once: only the first iteration after an offset arrives or changes waits;
//     then the job runs free (Cassini's behaviour). A changed offset is a
//     newer version (phasord's closed loop re-sends a drifting job's offset
//     with a new version) or another slot grid; the same offset heard again
//     (re-published, a GetOffset answer, the one from the environment)
//     changes nothing and costs no wait;
//   - pace: every iteration waits for its slot, so drift never accumulates
//     (set the period slightly above the job's natural one). Re-slot (the
//     simulator's SimJob::pace_reslot rule, docs/agents.md): when more than
//     one period has passed since the slot the last iteration started on (it
//     overran its slot), the next iteration does not wait for the next slot,
//     which would lose most of a period: it starts at once, and the gate's
//     slot grid re-anchors there until phasord sends an offset again.
// Fail open: without an offset, the gate never blocks longer than
// fail_open_ms in total, and then lets every iteration through at once until
// an offset arrives.
//
// Not thread-safe: one gate per training process, called from its loop.
#ifndef PHASOR_INTEGRATIONS_AGENT_ITERATION_GATE_H_
#define PHASOR_INTEGRATIONS_AGENT_ITERATION_GATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "integrations/client/client.h"
#include "protocol/phasor.pb.h"

namespace phasor::agent {

enum class GateMode { kOnce, kPace };

struct IterationGateOptions {
  std::string job;               // the job id phasord knows. Required.
  std::string request_endpoint;  // phasord's ROUTER (for GetOffset). Required.
  std::string offset_endpoint;   // phasord's PUB (OffsetUpdates). Required.
  GateMode mode = GateMode::kOnce;
  // Total time the gate may block while it has no offset (default 2 s).
  int fail_open_ms = 2000;
  // GetOffset is re-sent this often while no offset is known (default 500 ms).
  int retry_ms = 500;
  // CURVE keys when phasord runs CURVE.
  std::optional<client::CurveClientKeys> curve;
  // An offset known at job start (PHASOR_PERIOD_US, ...; agent_env.h), in
  // force until phasord answers; its job must be `job`. Default: none.
  std::optional<phasor::v1::OffsetUpdate> initial_offset;
  // pace: an iteration that overran its slot starts at once and the slot
  // grid re-anchors there (default true); false: always wait for the next
  // slot of phasord's grid (an overrun then costs most of a period).
  bool reslot = true;
  // Now in us since the Unix epoch; default: the system clock.
  std::function<int64_t()> now_epoch_us;
  // Sleeps about this many us (> 0); default: std::this_thread::sleep_for.
  // Injected with now_epoch_us so tests run on a fake clock.
  std::function<void(int64_t)> sleep_us;
};

struct GateResult {
  int64_t waited_us = 0;        // time spent in Wait()
  bool aligned = false;         // the iteration starts on a slot of the gate's grid
  bool reslotted = false;       // pace: it overran its slot; starts at once, the grid re-anchored here
  int64_t slot_epoch_us = 0;    // the slot it starts on (0 when not aligned)
  bool failed_open = false;     // no offset known: let through
  uint64_t offset_version = 0;  // 0 when no offset is known
};

class IterationGate {
 public:
  // InvalidArgument for missing fields or endpoints ZeroMQ refuses.
  static absl::StatusOr<std::unique_ptr<IterationGate>> Create(IterationGateOptions options);
  ~IterationGate();

  // Call at the top of each iteration.
  GateResult Wait();

  // The offset in force (nullopt before one arrives).
  const std::optional<phasor::v1::OffsetUpdate>& offset() const { return offset_; }

  // The next slot at or after `now_epoch_us` for `offset`.
  static int64_t NextSlot(const phasor::v1::OffsetUpdate& offset, int64_t now_epoch_us);
  // The next slot anchor + n * period (any integer n) at or after `now_epoch_us`.
  static int64_t NextSlot(int64_t anchor_epoch_us, int64_t period_us, int64_t now_epoch_us);

 private:
  IterationGate(IterationGateOptions options, std::unique_ptr<client::OffsetSubscriber> offsets);
  void SendGetOffset();
  // Reads whatever arrived, waiting up to timeout_ms for the first message.
  void Drain(int timeout_ms);
  // Takes an update: an older version is dropped, the same version on the
  // same slot grid is a repeat (nothing changes), anything else is the new
  // offset in force and re-aligns the next iteration.
  void Accept(const phasor::v1::OffsetUpdate& update);

  IterationGateOptions options_;
  std::unique_ptr<client::OffsetSubscriber> offsets_;
  std::optional<phasor::v1::OffsetUpdate> offset_;
  bool need_align_ = false;
  // The slot the last aligned iteration started on (the anchor of the grid
  // pace follows); nullopt until one, and after a new offset.
  std::optional<int64_t> last_slot_;
  int64_t fail_open_left_us_ = 0;
  int64_t last_request_us_ = 0;
};

}  // namespace phasor::agent

#endif  // PHASOR_INTEGRATIONS_AGENT_ITERATION_GATE_H_
