// `phasor slurm serve|prolog|epilog` (phasor as Slurm's placement plugin,
// docs/slurm.md) and `phasor offset --job ID` (the TaskProlog's exports).
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cmd/phasor/commands.h"
#include "integrations/client/client.h"
#include "integrations/slurm/controller.h"
#include "integrations/slurm/hook_server.h"
#include "integrations/slurm/job_spec.h"
#include "integrations/slurm/slurm_state.h"
#include "protocol/curve_keys.h"
#include "spdlog/spdlog.h"

namespace phasor::cmd {
namespace {

struct CurveFlags {
  std::string server_key;   // phasord's public key file
  std::string client_keys;  // key pair prefix (<prefix>.pub, <prefix>.secret)
};

void AddCurveFlags(CLI::App* cmd, CurveFlags& f) {
  cmd->add_option("--server-key", f.server_key, "phasord's CURVE public key file (CURVE on when given)");
  cmd->add_option("--client-keys", f.client_keys, "this client's key pair prefix (<prefix>.pub, <prefix>.secret)");
}

std::optional<client::CurveClientKeys> CurveOrFail(const std::string& command, const CurveFlags& f) {
  if (f.server_key.empty() && f.client_keys.empty()) return std::nullopt;
  if (f.server_key.empty() || f.client_keys.empty()) {
    FailCommand(command, kExitBadInput, "--server-key and --client-keys go together");
  }
  client::CurveClientKeys keys;
  for (auto [path, slot] : {std::pair{f.server_key, &keys.server_public_key},
                            {f.client_keys + ".pub", &keys.client_public_key},
                            {f.client_keys + ".secret", &keys.client_secret_key}}) {
    absl::StatusOr<std::string> key = protocol::ReadKeyFile(path);
    if (!key.ok()) FailCommand(command, kExitBadInput, std::string(key.status().message()));
    *slot = *key;
  }
  return keys;
}

// The whole stdout of a fixed command line (no job data in it), or nullopt.
std::optional<std::string> CommandOutput(const std::string& command_line) {
  FILE* p = ::popen(command_line.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = ::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  return ::pclose(p) == 0 ? std::optional<std::string>(out) : std::nullopt;
}

absl::Status PollSlurm(slurm::SlurmController& controller, const std::string& bin_dir) {
  const std::string prefix = bin_dir.empty() ? "" : bin_dir + "/";
  std::optional<std::string> sinfo = CommandOutput(prefix + "sinfo --json 2>/dev/null");
  if (!sinfo) return absl::UnavailableError("sinfo --json failed");
  std::optional<std::string> squeue = CommandOutput(prefix + "squeue --json --all 2>/dev/null");
  if (!squeue) return absl::UnavailableError("squeue --json failed");
  absl::StatusOr<std::vector<slurm::SlurmNode>> nodes = slurm::ParseSinfoJson(*sinfo);
  if (!nodes.ok()) return nodes.status();
  // sinfo lists a node once per partition.
  std::vector<slurm::SlurmNode> unique;
  std::set<std::string> seen;
  for (slurm::SlurmNode& n : *nodes) {
    if (seen.insert(n.name).second) unique.push_back(std::move(n));
  }
  absl::StatusOr<std::vector<slurm::SlurmJob>> jobs = slurm::ParseSqueueJson(*squeue);
  if (!jobs.ok()) return jobs.status();
  return controller.Refresh(unique, *jobs);
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

struct ServeFlags {
  slurm::SlurmControllerOptions controller;
  std::string socket;
  int poll_ms = 1000;
  std::string slurm_bin_dir;
  CurveFlags curve;
  std::string log_level = "info";
  std::string keep_packing = "on";
};

void RunServe(ServeFlags& f) {
  const std::string command = "slurm serve";
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  if (f.poll_ms < 10) FailCommand(command, kExitBadInput, "--poll-ms: must be at least 10");
  f.controller.keep_packing = f.keep_packing == "on";
  f.controller.curve = CurveOrFail(command, f.curve);
  absl::StatusOr<std::unique_ptr<slurm::SlurmController>> controller = slurm::SlurmController::Create(f.controller);
  if (!controller.ok()) FailCommand(command, kExitBadInput, std::string(controller.status().message()));
  absl::StatusOr<std::unique_ptr<slurm::HookServer>> server = slurm::HookServer::Listen(f.socket, controller->get());
  if (!server.ok()) FailCommand(command, kExitFailure, std::string(server.status().message()));
  ::signal(SIGINT, OnSignal);
  ::signal(SIGTERM, OnSignal);
  ::signal(SIGPIPE, SIG_IGN);
  if (absl::Status s = PollSlurm(**controller, f.slurm_bin_dir); !s.ok()) {
    spdlog::warn("phasor slurm: first poll: {}", std::string(s.message()));
  }
  std::thread poller([&] {
    auto next = std::chrono::steady_clock::now();
    while (!g_stop) {
      next += std::chrono::milliseconds(f.poll_ms);
      while (!g_stop && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (g_stop) break;
      if (absl::Status s = PollSlurm(**controller, f.slurm_bin_dir); !s.ok()) {
        spdlog::warn("phasor slurm: poll: {}", std::string(s.message()));
      }
    }
  });
  std::thread stopper([&] {
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*server)->Stop();
  });
  spdlog::info("phasor slurm: serving {} (phasord {}, poll every {} ms)", f.socket, f.controller.phasord_endpoint,
               f.poll_ms);
  (*server)->Serve();
  poller.join();
  stopper.join();
}

std::string Env(const char* name) {
  const char* v = ::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// Prolog/Epilog must never fail the job's node (a failing Prolog drains it):
// problems are printed on stderr and the status is 0.
void RunLifecycle(const std::string& op, const std::string& socket, int timeout_ms) {
  const std::string job = Env("SLURM_JOB_ID");
  if (job.empty() || job.size() > 32) {
    std::cerr << "phasor slurm " << op << ": SLURM_JOB_ID missing or too long\n";
    return;
  }
  std::string request = absl::StrCat("op=", op == "prolog" ? "start" : "end", "\njob=", job, "\n");
  if (op == "prolog") {
    const std::string comment = Env("SLURM_JOB_COMMENT");
    if (!slurm::OptsIn(comment)) return;  // not phasor's job
    absl::StatusOr<slurm::JobSpec> spec = slurm::ParseJobSpec(comment);
    if (!spec.ok() || spec->token.empty()) {
      std::cerr << "phasor slurm prolog: job " << job << " opts in but carries no token (left to Slurm)\n";
      return;
    }
    const std::string nodelist = Env("SLURM_JOB_NODELIST");
    absl::StrAppend(&request, "token=", spec->token, "\n");
    if (!nodelist.empty() && nodelist.size() < 1024 && nodelist.find('\n') == std::string::npos) {
      absl::StrAppend(&request, "nodelist=", nodelist, "\n");
    }
  }
  absl::StatusOr<std::string> reply = slurm::AskHookServer(socket, request, timeout_ms);
  if (!reply.ok()) {
    std::cerr << "phasor slurm " << op << ": job " << job << ": " << reply.status().message() << "\n";
  } else if (!absl::StartsWith(*reply, "ok=1")) {
    std::cerr << "phasor slurm " << op << ": job " << job << ": " << *reply;
  }
}

struct OffsetFlags {
  std::string job;
  std::string phasord;
  std::string offset_endpoint;
  std::string mode = "once";
  int fail_open_ms = 2000;
  int timeout_ms = 2000;
  CurveFlags curve;
};

bool ShellSafe(const std::string& v) {
  if (v.empty()) return false;
  for (char c : v) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/:._-+*@[]").find(c) != std::string_view::npos)) {
      return false;
    }
  }
  return true;
}

void RunOffset(const OffsetFlags& f) {
  const std::string command = "offset";
  for (auto [flag, value] : {std::pair{"--job", f.job}, {"--phasord", f.phasord}}) {
    if (!ShellSafe(value)) FailCommand(command, kExitBadInput, absl::StrCat(flag, ": '", value, "' is empty or has characters a shell would read"));
  }
  for (auto [flag, value] : {std::pair{"--offset-endpoint", f.offset_endpoint}, {"--server-key", f.curve.server_key},
                             {"--client-keys", f.curve.client_keys}}) {
    if (!value.empty() && !ShellSafe(value)) {
      FailCommand(command, kExitBadInput, absl::StrCat(flag, ": '", value, "' has characters a shell would read"));
    }
  }
  if (f.mode != "once" && f.mode != "pace") FailCommand(command, kExitBadInput, "--mode: '" + f.mode + "' is not once or pace");
  if (f.fail_open_ms < 0) FailCommand(command, kExitBadInput, "--fail-open-ms: must not be negative");
  client::ClientOptions o;
  o.endpoint = f.phasord;
  o.timeout_ms = f.timeout_ms;
  o.curve = CurveOrFail(command, f.curve);
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
  if (!c.ok()) FailCommand(command, kExitBadInput, std::string(c.status().message()));
  absl::StatusOr<v1::OffsetUpdate> offset = (*c)->GetOffset(f.job);
  if (!offset.ok()) FailCommand(command, kExitFailure, std::string(offset.status().message()));
  std::cout << "export PHASOR_JOB=" << f.job << "\n"
            << "export PHASOR_REQUEST_ENDPOINT=" << f.phasord << "\n";
  if (!f.offset_endpoint.empty()) std::cout << "export PHASOR_OFFSET_ENDPOINT=" << f.offset_endpoint << "\n";
  std::cout << "export PHASOR_MODE=" << f.mode << "\n"
            << "export PHASOR_FAIL_OPEN_MS=" << f.fail_open_ms << "\n";
  if (!f.curve.server_key.empty()) {
    std::cout << "export PHASOR_SERVER_KEY=" << f.curve.server_key << "\n"
              << "export PHASOR_CLIENT_KEY=" << f.curve.client_keys << "\n";
  }
  std::cout << "export PHASOR_ORIGIN_EPOCH_US=" << offset->origin_epoch_us() << "\n"
            << "export PHASOR_PERIOD_US=" << offset->period_us() << "\n"
            << "export PHASOR_SHIFT_US=" << offset->shift_us() << "\n"
            << "export PHASOR_OFFSET_VERSION=" << offset->version() << "\n";
}

}  // namespace

void AddSlurmCommand(CLI::App& app) {
  CLI::App* slurm = app.add_subcommand("slurm", "phasor as the placement plugin of a Slurm cluster (docs/slurm.md)");
  slurm->require_subcommand(1);

  auto serve_flags = std::make_shared<ServeFlags>();
  ServeFlags& f = *serve_flags;
  CLI::App* serve = slurm->add_subcommand(
      "serve", "the controller: polls sinfo/squeue, answers job_submit.lua, commits and releases jobs in phasord");
  serve->add_option("--topology", f.controller.topology_path, "Slurm topology.conf (or phasor YAML)")->required();
  serve->add_option("--phasord", f.controller.phasord_endpoint, "phasord's request endpoint")->required();
  serve->add_option("--socket", f.socket, "the Unix socket job_submit.lua, Prolog and Epilog talk to")->required();
  serve->add_option("--state", f.controller.state_path, "the token/job state file (JSON)")->required();
  serve->add_option("--poll-ms", f.poll_ms, "how often sinfo and squeue are read")->capture_default_str();
  serve->add_option("--slurm-bin-dir", f.slurm_bin_dir, "where sinfo and squeue are (default: PATH)");
  serve->add_option("--submit-timeout-ms", f.controller.submit_timeout_ms, "phasord's deadline for a submit")
      ->capture_default_str();
  serve->add_option("--max-candidates", f.controller.max_candidates, "candidates ranked per submit")->capture_default_str();
  serve->add_option("--keep-packing", f.keep_packing,
                    "on: no candidate leaving fewer idle nodes or idle leaves than Slurm's first is ranked")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  serve->add_option("--proposal-ttl-ms", f.controller.proposal_ttl_ms, "how long a proposal's nodes stay promised")
      ->capture_default_str();
  serve->add_option("--profile-dir", f.controller.profiles.profile_dir, "directory of profile=FILE profiles");
  serve->add_option("--model-catalog", f.controller.profiles.model_catalog_dir, "model catalogue for model=NAME (data/models)");
  serve->add_option("--model-gpus-per-node", f.controller.profiles.model_gpus_per_node, "GPUs per node for model lookups")
      ->capture_default_str();
  serve->add_option("--node-gbps", f.controller.slurm_import.node_link_gbps, "topology.conf: server <-> switch links")
      ->capture_default_str();
  serve->add_option("--switch-gbps", f.controller.slurm_import.switch_link_gbps, "topology.conf: switch <-> switch links")
      ->capture_default_str();
  serve->add_option("--dump-dir", f.controller.dump_dir, "write every submit's RankRequest there (<token>.json)");
  serve->add_option("--log-level", f.log_level, "debug, info, warn, error")->capture_default_str();
  AddCurveFlags(serve, f.curve);
  serve->callback([serve_flags] { RunServe(*serve_flags); });

  for (const char* op : {"prolog", "epilog"}) {
    auto socket = std::make_shared<std::string>();
    auto timeout = std::make_shared<int>(10000);
    CLI::App* cmd = slurm->add_subcommand(
        op, std::string(op) == "prolog" ? "Prolog: commit the job (reads SLURM_JOB_ID, SLURM_JOB_COMMENT, SLURM_JOB_NODELIST)"
                                        : "Epilog: release the job (reads SLURM_JOB_ID)");
    cmd->add_option("--socket", *socket, "the controller's Unix socket")->required();
    cmd->add_option("--timeout-ms", *timeout, "how long to wait for the controller")->capture_default_str();
    const std::string name = op;
    cmd->callback([name, socket, timeout] { RunLifecycle(name, *socket, *timeout); });
  }

  auto offset_flags = std::make_shared<OffsetFlags>();
  OffsetFlags& o = *offset_flags;
  CLI::App* offset =
      app.add_subcommand("offset", "print a job's offset as `export PHASOR_...` lines (Slurm's TaskProlog)");
  offset->add_option("--job", o.job, "the job id (SLURM_JOB_ID)")->required();
  offset->add_option("--phasord", o.phasord, "phasord's request endpoint")->required();
  offset->add_option("--offset-endpoint", o.offset_endpoint, "phasord's offset (PUB) endpoint, for the agent");
  offset->add_option("--mode", o.mode, "the agent's mode: once or pace")->capture_default_str();
  offset->add_option("--fail-open-ms", o.fail_open_ms, "the agent's fail-open bound")->capture_default_str();
  offset->add_option("--timeout-ms", o.timeout_ms, "how long to wait for phasord")->capture_default_str();
  AddCurveFlags(offset, o.curve);
  offset->callback([offset_flags] { RunOffset(*offset_flags); });
}

}  // namespace phasor::cmd
