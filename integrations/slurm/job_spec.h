// How a Slurm job opts in to phasor, and which traffic profile it gets.
//
// A job opts in with a comment that starts with the word "phasor"
// (`sbatch --comment "phasor model=resnet50"`), followed by optional
// key=value words:
//   model=NAME     a measured model of the catalogue (sim/model_catalog.h)
//   profile=FILE   a profile JSON file (SPEC section 2) in the operator's
//                  profile directory (a plain file name: no '/')
//   token=HEX      set by phasor's job_submit.lua, not by users
// and, after a word "--", free text that phasor does not read (any
// characters but control characters). Values are 1..64 characters of
// [A-Za-z0-9._-]. Without model= and profile= a job gets the documented
// default profile (DefaultProfile()).
//
// Pure functions except ProfileResolver::Resolve, which reads files; all
// thread-safe.
#ifndef PHASOR_INTEGRATIONS_SLURM_JOB_SPEC_H_
#define PHASOR_INTEGRATIONS_SLURM_JOB_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "placer/traffic_profile.h"
#include "models/model_catalog.h"

namespace phasor::slurm {

// The longest comment the hook and the controller read.
inline constexpr size_t kMaxCommentBytes = 1024;

struct JobSpec {
  std::string model;
  std::string profile_file;
  std::string token;
};

// Whether a comment opts in: its first word is "phasor".
bool OptsIn(std::string_view comment);

// InvalidArgument naming the word ("comment: 'model=a/b': ...") for a
// comment that opts in but is malformed; FailedPrecondition when it does
// not opt in at all.
absl::StatusOr<JobSpec> ParseJobSpec(std::string_view comment);

// The profile of a job that names none: a 100 ms iteration whose last 30 ms
// send 50 Gbit/s (a square wave starting at 70 ms).
placer::TrafficProfile DefaultProfile();

// `comment` (which opts in) with `token` as its only token: "phasor
// token=T" then the other phasor words, then the free text after "--" as it
// was. A token the user wrote is dropped (tokens are phasor's).
std::string WithToken(std::string_view comment, const std::string& token);

struct ProfileResolverOptions {
  // Directory of profile files for profile=FILE (default "": profile= refused).
  std::string profile_dir;
  // Model catalogue directory for model=NAME, e.g. "data/models" (default "":
  // model= refused).
  std::string model_catalog_dir;
  // GPUs per node when looking a model up in the catalogue (default 4, as
  // measured there).
  uint32_t model_gpus_per_node = 4;
};

class ProfileResolver {
 public:
  // InvalidArgument/NotFound when the catalogue directory is given but does
  // not load.
  static absl::StatusOr<ProfileResolver> Create(const ProfileResolverOptions& options);

  // The profile of a job on `nodes` nodes. NotFound for an unknown model or a
  // missing file, InvalidArgument for a file that is not a profile,
  // FailedPrecondition when the kind of source is not configured.
  absl::StatusOr<placer::TrafficProfile> Resolve(const JobSpec& spec, uint32_t nodes) const;

 private:
  ProfileResolverOptions options_;
  std::optional<models::ModelCatalog> catalog_;
};

}  // namespace phasor::slurm

#endif  // PHASOR_INTEGRATIONS_SLURM_JOB_SPEC_H_
