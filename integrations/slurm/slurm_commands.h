// How phasor's Slurm controller reads and changes Slurm: through Slurm's own
// commands, never libslurm (GPL) and never from inside job_submit.lua
// (slurmctld holds its locks there; a command would deadlock).
//
// SlurmCommands is the seam: SlurmCli runs the real commands (sinfo,
// squeue, scontrol) with a fixed argument vector, no shell, so no job field
// ever reaches a command line; tests give the controller a fake.
//
// Thread safety: SlurmCli's methods may run concurrently.
#ifndef PHASOR_INTEGRATIONS_SLURM_SLURM_COMMANDS_H_
#define PHASOR_INTEGRATIONS_SLURM_SLURM_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "integrations/slurm/slurm_state.h"

namespace phasor::slurm {

class SlurmCommands {
 public:
  virtual ~SlurmCommands() = default;
  // One poll: nodes, jobs, partitions, reservations. Unavailable when a
  // command fails; InvalidArgument for output that does not parse.
  virtual absl::StatusOr<ClusterState> Poll() = 0;
  // Sets pending job `job_id`'s node list to `nodes` and its node count to
  // their number (`scontrol update JobId=ID ReqNodeList=... NumNodes=k-k`),
  // or, with `nodes` empty, clears the list and sets the count to
  // `num_nodes` ("2", "1-8"). FailedPrecondition with Slurm's message when
  // Slurm refuses (the job is no longer pending, ...).
  virtual absl::Status UpdatePendingJob(const std::string& job_id, const std::vector<std::string>& nodes,
                                        const std::string& num_nodes) = 0;
};

struct SlurmCliOptions {
  // Where sinfo, squeue and scontrol are (default "": PATH).
  std::string bin_dir;
  // How long one command may run before it is killed (default 10 s).
  int timeout_ms = 10000;
};

class SlurmCli : public SlurmCommands {
 public:
  explicit SlurmCli(SlurmCliOptions options) : options_(std::move(options)) {}
  absl::StatusOr<ClusterState> Poll() override;
  absl::Status UpdatePendingJob(const std::string& job_id, const std::vector<std::string>& nodes,
                                const std::string& num_nodes) override;

 private:
  // Runs argv[0] (from bin_dir or PATH) with argv, stdin /dev/null; its
  // stdout, and its stderr in `err`. Unavailable when it cannot start, exits
  // non-zero (with its stderr) or outlives timeout_ms.
  absl::StatusOr<std::string> Run(const std::vector<std::string>& argv) const;
  SlurmCliOptions options_;
};

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_SLURM_COMMANDS_H_
