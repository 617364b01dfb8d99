// What a Slurm job asks of its nodes, and which nodes satisfy it.
//
// job_submit.lua passes the fields of Slurm's job_desc that restrict the
// nodes a job may get (partition, constraint, reservation, excluded and
// required nodes, node and task counts, CPUs, memory and disk per node,
// GRES, the exclusive flag) and those that make it wait (a hold, a begin
// time, a dependency); squeue gives the same of a pending job. ResolveDemand
// turns them, with Slurm's state, into the set of nodes the job may use and
// the number it needs, so that a node list phasor chooses from that set is
// one Slurm accepts for the job exactly as it would accept the job without
// it.
//
// What phasor models (anything else a job asks for leaves it untouched):
//   - one partition (the default one when none is given); nodes of the
//     partition only;
//   - constraints that are one feature, features joined by '&' or ',' (all of
//     them), or joined by '|' (any of them), on the nodes' active features;
//   - a reservation: its nodes only, while it is active; jobs without one
//     never get nodes of an active reservation;
//   - --exclude; a job that names its nodes (--nodelist) is Slurm's;
//   - a node count (-N k; a range -N a-b is Slurm's), a task count (-n) with
//     --ntasks-per-node and --cpus-per-task: the nodes needed from the
//     eligible nodes' CPUs; --mincpus, --mem, --mem-per-cpu, --tmp per node;
//   - GRES per node (--gres name[:type]:count) against the nodes' configured
//     GRES; GRES per job, task or socket and --cpus-per-gpu are Slurm's;
//   - --exclusive and OverSubscribe: phasor only ever proposes idle nodes,
//     which every sharing mode accepts.
// Job arrays, heterogeneous jobs, --switches, --contiguous, -B/--sockets-
// per-node style layouts, --core-spec, --clusters and --batch are Slurm's.
//
// Pure functions; thread-safe.
#ifndef PHASOR_INTEGRATIONS_SLURM_JOB_REQUEST_H_
#define PHASOR_INTEGRATIONS_SLURM_JOB_REQUEST_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "integrations/slurm/slurm_state.h"

namespace phasor::slurm {

struct JobRequest {
  std::string partition;     // "": the default partition
  std::string features;      // the constraint expression ("" none)
  std::string reservation;   // "" none
  std::string exc_nodes;     // host list
  std::string req_nodes;     // host list: non-empty leaves the job to Slurm
  uint32_t min_nodes = 0;    // 0: not given
  uint32_t max_nodes = 0;    // 0: not given
  uint32_t num_tasks = 0;    // 0: not given
  uint32_t ntasks_per_node = 0;
  uint32_t cpus_per_task = 0;  // 0: one
  uint32_t pn_min_cpus = 0;    // --mincpus
  uint64_t mem_per_node_mb = 0;
  uint64_t mem_per_cpu_mb = 0;
  uint64_t tmp_disk_mb = 0;
  std::string gres_per_node;   // tres_per_node, e.g. "gres:gpu:2,gres:hca:1"
  bool held = false;           // priority 0 (sbatch -H)
  bool deferred = false;       // a begin time in the future, or a dependency
  // Fields that restrict nodes in ways phasor does not model (their names as
  // in job_desc): any makes the job Slurm's alone.
  std::vector<std::string> unsupported;
};

// The request from job_submit.lua's fields (names as in Slurm's job_desc,
// values already decoded; unset fields absent). InvalidArgument naming the
// field for a number that does not parse. `now_s` judges begin_time.
absl::StatusOr<JobRequest> JobRequestFromHook(const std::map<std::string, std::string>& fields, int64_t now_s);

// Whether `name` is a job_desc field JobRequestFromHook reads (modelled, or
// refused by name); any other field it is given makes the job Slurm's.
bool IsKnownHookField(const std::string& name);

// A pending job as squeue shows it (node_count already counts its tasks).
JobRequest JobRequestFromSqueue(const SlurmJob& job);

struct NodeDemand {
  std::string partition;        // the partition the job runs in
  // The nodes it may get now, whatever their state (not those of another
  // job's active reservation).
  std::set<std::string> eligible;
  uint32_t count = 0;           // how many it needs
  // Whether Slurm may start it now, all else free: not held or deferred, the
  // partition up, its reservation (if any) active.
  bool startable = true;
};

// The nodes `request` may get in `cluster` and how many it needs.
// FailedPrecondition, with the reason, when phasor does not model the
// request (an unsupported field, several partitions, a constraint with
// brackets or counts, ...), when the request names its nodes, or when no
// set of nodes could ever hold it (Slurm then decides alone: rejects it,
// or lets it wait). A job may need more nodes than are eligible now (other
// reservations hold some): it waits.
absl::StatusOr<NodeDemand> ResolveDemand(const JobRequest& request, const ClusterState& cluster);

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_JOB_REQUEST_H_
