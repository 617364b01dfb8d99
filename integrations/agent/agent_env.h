// The agent's configuration from the environment, so a training process needs
// no phasor arguments: the Slurm TaskProlog and the Kubernetes path set the
// PHASOR_* variables of every rank (docs/agents.md has the table):
//   PHASOR_JOB, PHASOR_REQUEST_ENDPOINT, PHASOR_OFFSET_ENDPOINT   required
//   PHASOR_MODE (once|pace, default once), PHASOR_FAIL_OPEN_MS (default 2000)
//   PHASOR_SERVER_KEY (file), PHASOR_CLIENT_KEY (PREFIX of PREFIX.pub/.secret)
//   PHASOR_ORIGIN_EPOCH_US, PHASOR_PERIOD_US, PHASOR_SHIFT_US,
//   PHASOR_OFFSET_VERSION: the offset known at job start, used until phasord
//   answers (origin and period are required once any of them is set).
// The Python agent (phasor.IterationGate.from_env) reads the same variables
// with the same rules and messages.
#ifndef PHASOR_INTEGRATIONS_AGENT_AGENT_ENV_H_
#define PHASOR_INTEGRATIONS_AGENT_AGENT_ENV_H_

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "integrations/agent/iteration_gate.h"

namespace phasor::agent {

// A variable's value, or nullopt when it is not set. Injected so tests need
// not touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// std::getenv.
EnvLookup ProcessEnvironment();

// The gate's options from the PHASOR_* variables (an empty value counts as
// unset). InvalidArgument whose message starts with the variable's name for a
// missing required variable, an endpoint that is not tcp://, ipc:// or
// inproc://, a mode other than once/pace, a number that does not parse or is
// out of range, or a key file that is missing or holds no Z85 key.
absl::StatusOr<IterationGateOptions> GateOptionsFromEnv(const EnvLookup& lookup);

// A training process's gate from the environment that never stops training:
// when the environment is wrong, `status` says why (one line, also written to
// `log`), there is no gate, and Wait() lets every iteration through at once.
struct EnvGate {
  std::unique_ptr<IterationGate> gate;  // null when !status.ok()
  absl::Status status;

  // gate->Wait(), or failed_open at once without a gate.
  GateResult Wait();
};

// `log` may be null (no line written).
EnvGate GateFromEnv(const EnvLookup& lookup, std::ostream* log);

}  // namespace phasor::agent

#endif  // PHASOR_INTEGRATIONS_AGENT_AGENT_ENV_H_
