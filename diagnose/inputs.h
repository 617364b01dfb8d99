// The inputs of a diagnosis turned into one placer::RankRequest holding the
// placement as its single candidate (link form):
//   - the `phasor rank` JSON of SPEC 5 (links, jobs with profiles, a
//     candidate), candidates in server form routed on a topology;
//   - profile lines (the JSON-lines output of `phasor profile` and
//     phasor-probe, probe/profile_report.h) + a placement file + a topology;
//   - profiles measured in process (probe::MeasuredProfile, typed, no JSON
//     in between) + a placement file + a topology.
//
// Placement file (JSON; docs/diagnose.md):
//   {"id": "running",                                  // optional, default "placement"
//    "servers": {"a": ["s1", "s2"], "b": ["s2", "s3"]}, // job -> servers, rank order
//    "subjects": {"a": "10.0.0.1>10.0.0.2/qp=0x000011"}, // optional: job -> profile subject
//                                                        // (default: the job id)
//    "options": {"quantum_us": 1000, "max_bins": 65536}} // optional, as in `phasor rank`
//
// Every error is InvalidArgument (NotFound for a missing topology file) and
// starts with the file name and the field: "<name>:<line>: profile.period_us:
// must be a positive integer", "<name>: servers.z: no profile for subject 'z'".
//
// Pure functions apart from reading the topology file; thread-safe.
#ifndef PHASOR_DIAGNOSE_INPUTS_H_
#define PHASOR_DIAGNOSE_INPUTS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "placer/ranker.h"
#include "probe/measure.h"

namespace phasor::diagnose {

// One line of `phasor profile` output.
struct ProfileLine {
  std::string subject;
  std::string source;
  bool periodic = false;
  placer::TrafficProfile profile;  // set when periodic
  std::string reason;              // why not periodic
};

// Parses JSON lines (blank lines are skipped); `name` (a file name) prefixes
// errors with the 1-based line number. Also the lines phasor-probe prints
// with a "stats" member (they are skipped). InvalidArgument for an empty
// input, a line that is not a JSON object, a missing subject, a periodic line
// without a valid profile, or a subject given twice.
absl::StatusOr<std::vector<ProfileLine>> ParseProfileLines(std::string_view text,
                                                           const std::string& name);

// The profile lines of measured profiles. InvalidArgument, prefixed with
// `name`, for a subject given twice or a periodic profile the placer would
// not accept (naming the subject and field).
absl::StatusOr<std::vector<ProfileLine>> ProfileLinesFromMeasured(
    const std::vector<probe::MeasuredProfile>& measured, const std::string& name);

struct Placement {
  std::string id = "placement";
  std::map<std::string, std::vector<std::string>> servers;  // job -> servers
  std::map<std::string, std::string> subjects;              // job -> profile subject
  placer::RankOptions options;
};

// Parses a placement file (see the header comment).
absl::StatusOr<Placement> ParsePlacement(std::string_view text, const std::string& name);

// A request with one job per placed job (its profile is the line of its
// subject) and the placement as its one candidate in server form. Errors
// name the placement file (`placement_name`) and the job: no line for the
// subject, or the subject has no periodic pattern.
absl::StatusOr<placer::RankRequest> RequestFromProfiles(const std::vector<ProfileLine>& profiles,
                                                        const std::string& profiles_name,
                                                        const Placement& placement,
                                                        const std::string& placement_name);

// Routes the request's server-form candidates on the topology YAML at
// `topology_path` (placer/candidate_routing.h). A candidate that cannot be
// routed is an InvalidArgument error naming it ("candidate 'p': server 's9'
// ..."); a missing or invalid topology file is the loader's error prefixed
// with "topology: ".
absl::Status RoutePlacement(const std::string& topology_path, placer::RankRequest& request);

}  // namespace phasor::diagnose

#endif  // PHASOR_DIAGNOSE_INPUTS_H_
