// What each measured subject is to phasord: a table of lines
//   <measured subject> job|link <id>      ('#' starts a comment)
// for `phasor profile --publish-subjects` and `phasor-probe
// --publish-subjects`: a NIC or switch port is neither a job nor a link id,
// so the operator says which job runs on a NIC ("mlx5_0/1/tx job resnet") or
// which link a switch port direction is ("leaf1/Ethernet1/out link
// leaf1->spine1"). Pure functions, thread-safe.
#ifndef PHASOR_PROBE_SUBJECT_TABLE_H_
#define PHASOR_PROBE_SUBJECT_TABLE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace phasor::probe {

struct PublishedSubject {
  bool link = false;  // a link's profile (else a job's)
  std::string id;     // the job or link id phasord knows
};

using SubjectTable = std::map<std::string, PublishedSubject>;

// InvalidArgument naming "<name>:<line>: " for a line that is not
// '<measured subject> job|link <id>'. A subject named twice: the last wins.
absl::StatusOr<SubjectTable> ParseSubjectTable(absl::string_view text, const std::string& name);

// Reads and parses a file; InvalidArgument "cannot read '<path>'" when it
// cannot be read.
absl::StatusOr<SubjectTable> LoadSubjectTable(const std::string& path);

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_SUBJECT_TABLE_H_
