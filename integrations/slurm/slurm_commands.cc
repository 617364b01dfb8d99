#include "integrations/slurm/slurm_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace phasor::slurm {
namespace {

// Node names and job ids reach scontrol as arguments, never through a
// shell; they still must be what Slurm names them.
bool SafeName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool SafeCount(const std::string& s) {
  if (s.empty() || s.size() > 24) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> SlurmCli::Run(const std::vector<std::string>& argv) const {
  const std::string program = options_.bin_dir.empty() ? argv[0] : options_.bin_dir + "/" + argv[0];
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return absl::UnavailableError(absl::StrCat("pipe: ", std::strerror(errno)));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return absl::UnavailableError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  args[0] = const_cast<char*>(program.c_str());
  pid_t pid = 0;
  const int spawned = options_.bin_dir.empty()
                          ? posix_spawnp(&pid, program.c_str(), &actions, nullptr, args.data(), environ)
                          : posix_spawn(&pid, program.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  if (spawned != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return absl::UnavailableError(absl::StrCat(argv[0], ": cannot run: ", std::strerror(spawned)));
  }
  std::string stdout_text, stderr_text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  bool timed_out = false;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (pollfd& p : fds) {
      if (p.fd < 0 || p.revents == 0) continue;
      char buf[65536];
      const ssize_t got = ::read(p.fd, buf, sizeof(buf));
      if (got > 0) {
        (p.fd == out[0] ? stdout_text : stderr_text).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        p.fd = -1;
        --open_fds;
      }
    }
  }
  ::close(out[0]);
  ::close(err[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return absl::UnavailableError(absl::StrCat(argv[0], ": no answer in ", options_.timeout_ms, " ms"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why(absl::StripAsciiWhitespace(stderr_text.substr(0, 300)));
    return absl::UnavailableError(absl::StrCat(absl::StrJoin(argv, " ").substr(0, 200), ": failed",
                                               why.empty() ? "" : ": ", why));
  }
  return stdout_text;
}

absl::StatusOr<ClusterState> SlurmCli::Poll() {
  ClusterState state;
  absl::StatusOr<std::string> sinfo = Run({"sinfo", "--json"});
  if (!sinfo.ok()) return sinfo.status();
  absl::StatusOr<std::vector<SlurmNode>> nodes = ParseSinfoJson(*sinfo);
  if (!nodes.ok()) return nodes.status();
  state.nodes = *std::move(nodes);
  absl::StatusOr<std::string> squeue = Run({"squeue", "--json", "--all"});
  if (!squeue.ok()) return squeue.status();
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueueJson(*squeue);
  if (!jobs.ok()) return jobs.status();
  state.jobs = *std::move(jobs);
  absl::StatusOr<std::string> partitions = Run({"scontrol", "show", "partition", "--oneliner"});
  if (!partitions.ok()) return partitions.status();
  absl::StatusOr<std::vector<SlurmPartition>> parts = ParseScontrolPartitions(*partitions);
  if (!parts.ok()) return parts.status();
  state.partitions = *std::move(parts);
  absl::StatusOr<std::string> reservations = Run({"scontrol", "show", "reservation", "--oneliner"});
  if (!reservations.ok()) return reservations.status();
  absl::StatusOr<std::vector<SlurmReservation>> resv = ParseScontrolReservations(*reservations);
  if (!resv.ok()) return resv.status();
  state.reservations = *std::move(resv);
  return state;
}

absl::Status SlurmCli::UpdatePendingJob(const std::string& job_id, const std::vector<std::string>& nodes,
                                        const std::string& num_nodes) {
  if (!SafeName(job_id)) return absl::InvalidArgumentError(absl::StrCat("job id '", job_id.substr(0, 32), "'"));
  for (const std::string& n : nodes) {
    if (!SafeName(n)) return absl::InvalidArgumentError(absl::StrCat("node name '", n.substr(0, 32), "'"));
  }
  const std::string count = nodes.empty() ? num_nodes : absl::StrCat(nodes.size(), "-", nodes.size());
  if (!SafeCount(count)) return absl::InvalidArgumentError(absl::StrCat("node count '", count.substr(0, 32), "'"));
  absl::StatusOr<std::string> out = Run({"scontrol", "update", "JobId=" + job_id,
                                         "ReqNodeList=" + absl::StrJoin(nodes, ","), "NumNodes=" + count});
  if (!out.ok()) return absl::FailedPreconditionError(out.status().message());
  return absl::OkStatus();
}

}  // namespace phasor::slurm
