// The one file an operator distributes to every Slurm node (docs/slurm.md,
// "Compute nodes"): where the controller and phasord are, and the CURVE keys
// the Prolog, Epilog and TaskProlog talk to them with.
//
//   controller: tcp://slurmctl.example:7420     # or unix:///run/phasor/slurm.sock (one host)
//   controller_public_key_file: /etc/phasor/controller.pub
//   client_key_prefix: /etc/phasor/node          # node.pub, node.secret (root only)
//   phasord_request_endpoint: tcp://phasord.example:7410
//   phasord_offset_endpoint: tcp://phasord.example:7412
//   phasord_public_key_file: /etc/phasor/phasord.pub
//   agent_key_prefix: /etc/phasor/agent          # agent.pub, agent.secret (readable by jobs)
//   jobs_dir: /run/phasor/jobs
//
// Pure parsing; thread-safe.
#ifndef PHASOR_INTEGRATIONS_SLURM_NODE_CONFIG_H_
#define PHASOR_INTEGRATIONS_SLURM_NODE_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"

namespace phasor::slurm {

struct NodeConfig {
  // The controller's node endpoint: tcp://HOST:PORT (CURVE), ipc://PATH, or
  // unix://PATH (its hook socket, on the controller's own host). Required.
  std::string controller;
  // The controller's CURVE public key; with it the Prolog and Epilog talk
  // CURVE (required for TCP beyond loopback).
  std::string controller_public_key_file;
  // The node's key pair (PREFIX.pub, PREFIX.secret), for the controller:
  // the Prolog and Epilog run as root, so the secret may be root's only.
  std::string client_key_prefix;
  // phasord's request (ROUTER) and offset (PUB) endpoints. Required.
  std::string phasord_request_endpoint;
  std::string phasord_offset_endpoint;
  // phasord's CURVE public key; with it the TaskProlog and the agents talk CURVE.
  std::string phasord_public_key_file;
  // The key pair the TaskProlog (which runs as the job's user) and the
  // job's agents use with phasord; readable by jobs.
  std::string agent_key_prefix;
  // Where the Prolog marks the jobs it committed (the TaskProlog reads it;
  // node-local). Default /run/phasor/jobs.
  std::string jobs_dir = "/run/phasor/jobs";
  // How long the Prolog and Epilog wait for the controller (default 2000 ms:
  // the Epilog holds the node while the controller re-plans).
  int controller_timeout_ms = 2000;
  // How long the TaskProlog waits for phasord (default 1000 ms).
  int phasord_timeout_ms = 1000;
  // The agents' mode (once or pace) and fail-open bound (default 2000 ms).
  std::string agent_mode = "once";
  int agent_fail_open_ms = 2000;
};

// Parses YAML text. InvalidArgument naming the key for an unknown key, a
// value of the wrong type, a missing required key, an endpoint that is not
// one, or TCP beyond loopback without the CURVE keys.
absl::StatusOr<NodeConfig> ParseNodeConfig(const std::string& yaml_text);
// NotFound when the file cannot be read; the parse errors prefixed with the path.
absl::StatusOr<NodeConfig> LoadNodeConfig(const std::string& path);

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_NODE_CONFIG_H_
