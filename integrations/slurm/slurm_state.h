// Slurm's node and job state as phasor's Slurm controller sees it, read from
// `sinfo --json` and `squeue --json` (Slurm 22.05, OpenAPI v0.0.38). Only the
// fields the controller uses are kept; unknown fields are ignored, so newer
// Slurm versions that add fields still parse.
//
// Pure functions; thread-safe.
#ifndef PHASOR_INTEGRATIONS_SLURM_SLURM_STATE_H_
#define PHASOR_INTEGRATIONS_SLURM_SLURM_STATE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace phasor::slurm {

struct SlurmNode {
  std::string name;                 // "n01"
  std::string state;                // lower case: "idle", "allocated", "mixed", "down", ...
  std::vector<std::string> flags;   // upper case: "DRAIN", "NOT_RESPONDING", ...
};

// Idle and free to take: state "idle" and none of DRAIN, DRAINING, DRAINED,
// NOT_RESPONDING, MAINTENANCE, RESERVED, POWERED_DOWN, COMPLETING, FAIL.
bool NodeIsFree(const SlurmNode& node);
// Gone for the jobs on it: state "down" or "fail", or flag FAIL/NOT_RESPONDING.
bool NodeHasFailed(const SlurmNode& node);

struct SlurmJob {
  std::string id;                  // "42"
  std::string state;               // "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", ...
  std::vector<std::string> nodes;  // expanded host list of the allocation (empty while pending)
  std::string comment;
};

// A state in which a job holds its nodes and computes: RUNNING, CONFIGURING.
bool JobIsRunning(const SlurmJob& job);

// InvalidArgument naming the field ("nodes[2].name: missing") for output
// that is not Slurm's JSON.
absl::StatusOr<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text);
absl::StatusOr<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text);

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_SLURM_STATE_H_
