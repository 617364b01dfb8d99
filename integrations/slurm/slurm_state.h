// Slurm's node, job, partition and reservation state as phasor's Slurm
// controller sees it, read from `sinfo --json` and `squeue --json` (Slurm
// 22.05, OpenAPI v0.0.38) and from `scontrol show partition|reservation
// --oneliner` (22.05 has no JSON for those). Only the fields the controller
// uses are kept; unknown fields are ignored, so newer Slurm versions that add
// fields still parse.
//
// Pure functions; thread-safe.
#ifndef PHASOR_INTEGRATIONS_SLURM_SLURM_STATE_H_
#define PHASOR_INTEGRATIONS_SLURM_SLURM_STATE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace phasor::slurm {

struct SlurmNode {
  std::string name;                 // "n01"
  std::string state;                // lower case: "idle", "allocated", "mixed", "down", ...
  std::vector<std::string> flags;   // upper case: "DRAIN", "NOT_RESPONDING", ...
  std::vector<std::string> partitions;
  std::set<std::string> features;   // active features
  uint32_t cpus = 0;
  uint64_t real_memory_mb = 0;
  uint64_t tmp_disk_mb = 0;
  std::string gres;                 // configured GRES, e.g. "gpu:4,hca:1"
};

// Idle and free to take: state "idle" and none of DRAIN, DRAINING, DRAINED,
// NOT_RESPONDING, POWERED_DOWN, COMPLETING, FAIL (a reserved node is free
// for its reservation's jobs: ResolveDemand keeps the others off it).
bool NodeIsFree(const SlurmNode& node);
// Gone for the jobs on it: state "down" or "fail", or flag FAIL/NOT_RESPONDING.
bool NodeHasFailed(const SlurmNode& node);

struct SlurmJob {
  std::string id;                  // "42"
  std::string state;               // "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", ...
  std::vector<std::string> nodes;  // expanded host list of the allocation (empty while pending)
  std::string comment;
  // What a pending job asks for (squeue's view; for the controller's model of
  // who Slurm starts next).
  std::string state_reason;        // "None", "Priority", "Resources", "JobHeldUser", ...
  uint64_t priority = 0;           // 0: held
  std::string partition;           // one name, or a comma-separated list
  std::string features;            // the constraint expression
  std::string required_nodes;      // ReqNodeList (host list)
  std::string excluded_nodes;
  uint32_t node_count = 0;         // the (minimum) node count
  uint32_t max_nodes = 0;          // 0: not bounded
  std::string reservation;
  std::string shared;              // "none" (exclusive), "user", "oversubscribe", ""
  std::string tres_per_node;       // GRES per node, e.g. "gres:gpu:2"
  std::string tres_per_job;
  std::string tres_per_task;
  std::string tres_per_socket;
};

// A state in which a job holds its nodes and computes: RUNNING, CONFIGURING.
bool JobIsRunning(const SlurmJob& job);
// A state a job does not leave: COMPLETED, CANCELLED, FAILED, TIMEOUT, ...
bool JobHasEnded(const SlurmJob& job);

struct SlurmPartition {
  std::string name;
  std::vector<std::string> nodes;  // expanded
  bool is_default = false;
  bool up = true;                  // State=UP
};

struct SlurmReservation {
  std::string name;
  std::vector<std::string> nodes;  // expanded
  bool active = false;             // State=ACTIVE
};

// One poll of Slurm.
struct ClusterState {
  std::vector<SlurmNode> nodes;
  std::vector<SlurmJob> jobs;
  std::vector<SlurmPartition> partitions;
  std::vector<SlurmReservation> reservations;
};

// InvalidArgument naming the field ("nodes[2].name: missing") for output
// that is not Slurm's JSON. sinfo lists a node once per partition: the
// result has each node once, with all its partitions.
absl::StatusOr<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text);
absl::StatusOr<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text);
// `scontrol show partition --oneliner` and `scontrol show reservation
// --oneliner`: one record per line of Key=Value words. InvalidArgument
// naming the line for a record without its name or with a bad node list.
// "No reservations in the system" is an empty list.
absl::StatusOr<std::vector<SlurmPartition>> ParseScontrolPartitions(std::string_view text);
absl::StatusOr<std::vector<SlurmReservation>> ParseScontrolReservations(std::string_view text);

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_SLURM_STATE_H_
