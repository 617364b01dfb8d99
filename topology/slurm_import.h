// An importer for Slurm's tree topology plugin file, topology.conf:
//
//   # comment
//   SwitchName=leaf1 Nodes=node[01-16]
//   SwitchName=leaf2 Nodes=node[17-32],gpu7
//   SwitchName=spine Switches=leaf[1-2] LinkSpeed=100
//
// Each SwitchName line declares a switch; Nodes= links it (full duplex) to
// those servers, Switches= to those child switches. Host lists use Slurm's
// syntax: comma-separated items, each with bracket ranges that keep zero
// padding ("node[01-03,7]" is node01, node02, node03, node7; several bracket
// groups multiply). A switch may be named in Switches= before its own line.
// Keys are case-insensitive, as in Slurm. LinkSpeed is accepted and ignored
// (Slurm does not use it either); capacities come from the options.
//
// Errors: InvalidArgument "<name>:<line>: <what>", e.g. "topology.conf:3:
// unknown key 'Nodez'", "topology.conf:5: duplicate switch 'leaf1'",
// "topology.conf:2: bad host list 'node[01-'", and for a switch named in
// Switches= but never declared, the line that names it.
#ifndef PHASOR_TOPOLOGY_SLURM_IMPORT_H_
#define PHASOR_TOPOLOGY_SLURM_IMPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/topology.h"

namespace phasor::topology {

struct SlurmImportOptions {
  double node_link_gbps =
      100;  // server <-> switch links, and the server's one NIC port "nic0"; > 0
  double switch_link_gbps = 400;  // switch <-> switch links; > 0
  uint32_t gpus_per_node = 8;     // every server gets this many GPUs
};

absl::StatusOr<Topology> ParseSlurmTopology(std::string_view text,
                                            const SlurmImportOptions& options = {},
                                            std::string_view source_name = "topology.conf");

// Reads and parses a file. NotFound when it cannot be read.
absl::StatusOr<Topology> LoadSlurmTopology(const std::string& path,
                                           const SlurmImportOptions& options = {});

// Expands a Slurm host list ("node[01-03],gpu[1-2]x"). InvalidArgument on
// unbalanced brackets, empty items, a reversed or non-numeric range, and a
// list of more than `max_names` names (checked while expanding, so
// "a[0-999999]b[0-999999]" fails fast instead of growing 10^12 names).
absl::StatusOr<std::vector<std::string>> ExpandHostList(std::string_view list,
                                                        size_t max_names = kMaxNodes);

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_SLURM_IMPORT_H_
