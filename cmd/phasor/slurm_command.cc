// `phasor slurm serve|prolog|epilog|task-prolog` (phasor as Slurm's
// placement plugin, docs/slurm.md) and `phasor offset --job ID`.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cmd/phasor/commands.h"
#include "integrations/client/client.h"
#include "integrations/slurm/controller.h"
#include "integrations/slurm/hook_server.h"
#include "integrations/slurm/job_spec.h"
#include "integrations/slurm/node_config.h"
#include "integrations/slurm/node_server.h"
#include "integrations/slurm/slurm_commands.h"
#include "protocol/curve_keys.h"
#include "spdlog/spdlog.h"

namespace phasor::cmd {
namespace {

struct SlurmCurveFlags {
  std::string server_key;   // phasord's public key file
  std::string client_keys;  // key pair prefix (<prefix>.pub, <prefix>.secret)
};

void AddSlurmCurveFlags(CLI::App* cmd, SlurmCurveFlags& f) {
  cmd->add_option("--server-key", f.server_key, "phasord's CURVE public key file (CURVE on when given)");
  cmd->add_option("--client-keys", f.client_keys, "this client's key pair prefix (<prefix>.pub, <prefix>.secret)");
}

std::optional<client::CurveClientKeys> SlurmCurveOrFail(const std::string& command, const SlurmCurveFlags& f) {
  if (f.server_key.empty() && f.client_keys.empty()) return std::nullopt;
  if (f.server_key.empty() || f.client_keys.empty()) {
    FailCommand(command, kExitBadInput, "--server-key and --client-keys go together");
  }
  absl::StatusOr<protocol::CurveClientKeys> keys =
      protocol::LoadCurveClientKeys(f.server_key, f.client_keys, "--server-key", "--client-keys");
  if (!keys.ok()) FailCommand(command, kExitBadInput, std::string(keys.status().message()));
  return *keys;
}

std::atomic<bool> g_slurm_stop{false};
void OnSlurmSignal(int) { g_slurm_stop = true; }

struct ServeFlags {
  slurm::SlurmControllerOptions controller;
  std::string socket;
  int poll_ms = 1000;
  slurm::SlurmCliOptions cli;
  SlurmCurveFlags curve;
  slurm::NodeServerOptions nodes;
  std::string log_level = "info";
  std::string keep_packing = "on";
};

void RunServe(ServeFlags& f) {
  const std::string command = "slurm serve";
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  if (f.poll_ms < 10) FailCommand(command, kExitBadInput, "--poll-ms: must be at least 10");
  f.controller.keep_packing = f.keep_packing == "on";
  f.controller.curve = SlurmCurveOrFail(command, f.curve);
  // A proposal is dropped when no poll that began a grace after it shows its
  // job: the grace must cover a poll.
  f.controller.unbound_grace_ms = std::max<int64_t>(f.controller.unbound_grace_ms, f.poll_ms);
  slurm::SlurmCli slurm_cli(f.cli);
  f.controller.slurm = &slurm_cli;
  absl::StatusOr<std::unique_ptr<slurm::SlurmController>> controller = slurm::SlurmController::Create(f.controller);
  if (!controller.ok()) FailCommand(command, kExitBadInput, std::string(controller.status().message()));
  std::unique_ptr<slurm::NodeServer> node_server;
  if (!f.nodes.endpoint.empty()) {
    absl::StatusOr<std::unique_ptr<slurm::NodeServer>> n = slurm::NodeServer::Start(f.nodes, controller->get());
    if (!n.ok()) {
      FailCommand(command, n.status().code() == absl::StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure,
                  std::string(n.status().message()));
    }
    node_server = *std::move(n);
  }
  absl::StatusOr<std::unique_ptr<slurm::HookServer>> server = slurm::HookServer::Listen(f.socket, controller->get());
  if (!server.ok()) FailCommand(command, kExitFailure, std::string(server.status().message()));
  ::signal(SIGINT, OnSlurmSignal);
  ::signal(SIGTERM, OnSlurmSignal);
  ::signal(SIGPIPE, SIG_IGN);
  // The first poll runs while the socket is served: until it is done,
  // submissions are answered at once (left to Slurm), never queued.
  std::thread poller([&] {
    auto next = std::chrono::steady_clock::now();
    if (absl::Status s = (*controller)->Poll(); !s.ok()) {
      spdlog::warn("phasor slurm: first poll: {}", std::string(s.message()));
    }
    while (!g_slurm_stop) {
      next += std::chrono::milliseconds(f.poll_ms);
      while (!g_slurm_stop && std::chrono::steady_clock::now() < next) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (g_slurm_stop) break;
      if (absl::Status s = (*controller)->Poll(); !s.ok()) {
        spdlog::warn("phasor slurm: poll: {}", std::string(s.message()));
      }
      // A slow poll does not make the next ones pile up.
      next = std::max(next, std::chrono::steady_clock::now());
    }
  });
  std::thread stopper([&] {
    while (!g_slurm_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*server)->Stop();
  });
  spdlog::info("phasor slurm: serving {} (phasord {}, poll every {} ms)", f.socket, f.controller.phasord_endpoint,
               f.poll_ms);
  (*server)->Serve();
  poller.join();
  stopper.join();
  node_server.reset();
}

std::string SlurmEnv(const char* name) {
  const char* v = ::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

bool JobIdOk(const std::string& job) {
  return !job.empty() && job.size() <= 20 && std::all_of(job.begin(), job.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A node config, or nullopt after printing why (Prolog and Epilog never fail).
std::optional<slurm::NodeConfig> LoadNodeConfigOrSay(const std::string& op, const std::string& path) {
  absl::StatusOr<slurm::NodeConfig> c = slurm::LoadNodeConfig(path);
  if (!c.ok()) {
    std::cerr << "phasor slurm " << op << ": --config " << c.status().message() << "\n";
    return std::nullopt;
  }
  return *c;
}

// The controller's reply as fields; prints and returns nullopt on failure.
std::optional<std::map<std::string, std::string>> AskOrSay(const std::string& op, const std::string& job,
                                                           const slurm::NodeConfig& config,
                                                           const std::string& request) {
  absl::StatusOr<std::string> reply = slurm::AskController(config, request);
  if (!reply.ok()) {
    std::cerr << "phasor slurm " << op << ": job " << job << ": " << reply.status().message() << "\n";
    return std::nullopt;
  }
  absl::StatusOr<std::map<std::string, std::string>> fields = slurm::ParseHookLines(*reply);
  if (!fields.ok() || (*fields)["ok"] != "1") {
    std::cerr << "phasor slurm " << op << ": job " << job << ": "
              << (fields.ok() ? (*fields)["reason"] : std::string(fields.status().message())) << "\n";
    return std::nullopt;
  }
  return *fields;
}

bool ShellSafe(const std::string& v) {
  if (v.empty()) return false;
  for (char c : v) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/:._-+*@[]").find(c) != std::string_view::npos)) {
      return false;
    }
  }
  return true;
}

// A ring of node names ("n01,n02"): each name safe in a shell, 64 KiB at most.
bool RingSafe(const std::string& ring) {
  if (ring.empty() || ring.size() >= 65536) return false;
  for (absl::string_view node : absl::StrSplit(ring, ',')) {
    if (!ShellSafe(std::string(node))) return false;
  }
  return true;
}

// Prolog and Epilog must never fail the job's node (a failing Prolog drains
// it): problems are printed on stderr (slurmd's log) and the status is 0.
void RunProlog(const std::string& config_path) {
  const std::string job = SlurmEnv("SLURM_JOB_ID");
  if (!JobIdOk(job)) return;
  const std::string comment = SlurmEnv("SLURM_JOB_COMMENT");
  if (!slurm::OptsIn(comment)) return;  // not phasor's job
  // A job without a token was left to Slurm at its submission.
  absl::StatusOr<slurm::JobSpec> spec = slurm::ParseJobSpec(comment);
  if (!spec.ok() || spec->token.empty()) return;
  std::string request = absl::StrCat("op=start\njob=", job, "\ntoken=", spec->token, "\n");
  for (auto [key, var] : {std::pair{"nodelist", "SLURM_JOB_NODELIST"}, {"node", "SLURMD_NODENAME"}}) {
    const std::string v = SlurmEnv(var);
    if (!v.empty() && v.size() < 2048) absl::StrAppend(&request, key, "=", slurm::EncodeHookValue(v), "\n");
  }
  std::optional<slurm::NodeConfig> config = LoadNodeConfigOrSay("prolog", config_path);
  if (!config) return;
  std::optional<std::map<std::string, std::string>> reply = AskOrSay("prolog", job, *config, request);
  if (!reply) return;  // not committed: no mark, the tasks do not wait
  // Committed: mark the job for the TaskProlog (which runs as the job's
  // user), with the job's nodes in its ring's order.
  std::error_code ec;
  std::filesystem::create_directories(config->jobs_dir, ec);
  ::chmod(config->jobs_dir.c_str(), 0755);
  const std::string mark = config->jobs_dir + "/" + job;
  std::ofstream out(mark);
  out << "committed\n";
  if (auto ring = reply->find("ring"); ring != reply->end() && RingSafe(ring->second)) {
    out << "ring=" << ring->second << "\n";
  }
  out.close();
  ::chmod(mark.c_str(), 0644);
}

void RunEpilog(const std::string& config_path) {
  const std::string job = SlurmEnv("SLURM_JOB_ID");
  if (!JobIdOk(job)) return;
  std::optional<slurm::NodeConfig> config = LoadNodeConfigOrSay("epilog", config_path);
  if (!config) return;
  // Every job's end: phasor releases its own jobs, and re-plans the waiting
  // ones while this node is still held.
  std::string request = absl::StrCat("op=end\njob=", job, "\n");
  if (const std::string node = SlurmEnv("SLURMD_NODENAME"); !node.empty() && node.size() < 256) {
    absl::StrAppend(&request, "node=", slurm::EncodeHookValue(node), "\n");
  }
  (void)AskOrSay("epilog", job, *config, request);
  std::error_code ec;
  std::filesystem::remove(config->jobs_dir + "/" + job, ec);
}


struct OffsetExports {
  std::string job;
  std::string request_endpoint;
  std::string offset_endpoint;
  std::string mode = "once";
  int fail_open_ms = 2000;
  std::string server_key;   // phasord's public key file ("" plain)
  std::string client_keys;  // the agent's key pair prefix
  std::vector<std::string> ring;  // the job's nodes in its ring's order (the Prolog's mark)
  int node_rank = -1;             // this node's place in it (-1: not in it)
};

// The TaskProlog's lines: Slurm puts each "export NAME=value" into every
// task's environment.
void PrintOffsetExports(const OffsetExports& e, const v1::OffsetUpdate& offset) {
  std::cout << "export PHASOR_JOB=" << e.job << "\n"
            << "export PHASOR_REQUEST_ENDPOINT=" << e.request_endpoint << "\n";
  if (!e.offset_endpoint.empty()) std::cout << "export PHASOR_OFFSET_ENDPOINT=" << e.offset_endpoint << "\n";
  std::cout << "export PHASOR_MODE=" << e.mode << "\n"
            << "export PHASOR_FAIL_OPEN_MS=" << e.fail_open_ms << "\n";
  if (!e.server_key.empty()) {
    std::cout << "export PHASOR_SERVER_KEY=" << e.server_key << "\n"
              << "export PHASOR_CLIENT_KEY=" << e.client_keys << "\n";
  }
  if (!e.ring.empty()) {
    std::cout << "export PHASOR_RING_NODES=" << absl::StrJoin(e.ring, ",") << "\n";
    if (e.node_rank >= 0) std::cout << "export PHASOR_NODE_RANK=" << e.node_rank << "\n";
  }
  std::cout << "export PHASOR_ORIGIN_EPOCH_US=" << offset.origin_epoch_us() << "\n"
            << "export PHASOR_PERIOD_US=" << offset.period_us() << "\n"
            << "export PHASOR_SHIFT_US=" << offset.shift_us() << "\n"
            << "export PHASOR_OFFSET_VERSION=" << offset.version() << "\n";
}

absl::StatusOr<v1::OffsetUpdate> FetchOffset(const std::string& job, const std::string& endpoint, int timeout_ms,
                                             std::optional<client::CurveClientKeys> curve) {
  client::ClientOptions o;
  o.endpoint = endpoint;
  o.timeout_ms = timeout_ms;
  o.curve = std::move(curve);
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(o);
  if (!c.ok()) return c.status();
  return (*c)->GetOffset(job);
}

// The TaskProlog, as the job's user: the offset of a job the Prolog marked
// (committed on this node), from phasord; nothing for other jobs.
void RunTaskProlog(const std::string& config_path) {
  const std::string job = SlurmEnv("SLURM_JOB_ID");
  if (!JobIdOk(job)) return;
  absl::StatusOr<slurm::NodeConfig> config = slurm::LoadNodeConfig(config_path);
  if (!config.ok()) {
    std::cerr << "phasor slurm task-prolog: --config " << config.status().message() << "\n";
    return;
  }
  const std::string mark = config->jobs_dir + "/" + job;
  if (!std::filesystem::exists(mark)) return;
  OffsetExports e{job, config->phasord_request_endpoint, config->phasord_offset_endpoint, config->agent_mode,
                  config->agent_fail_open_ms, config->phasord_public_key_file, config->agent_key_prefix, {}, -1};
  {
    std::ifstream in(mark);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("ring=", 0) != 0 || !RingSafe(line.substr(5))) continue;
      e.ring = absl::StrSplit(line.substr(5), ',', absl::SkipEmpty());
    }
    const std::string node = SlurmEnv("SLURMD_NODENAME");
    for (size_t i = 0; i < e.ring.size(); ++i) {
      if (e.ring[i] == node) e.node_rank = static_cast<int>(i);
    }
  }
  for (const std::string* v : {&e.request_endpoint, &e.offset_endpoint, &e.server_key, &e.client_keys}) {
    if (!v->empty() && !ShellSafe(*v)) {
      std::cerr << "phasor slurm task-prolog: '" << *v << "' has characters a shell would read\n";
      return;
    }
  }
  std::optional<client::CurveClientKeys> curve;
  if (!e.server_key.empty()) {
    absl::StatusOr<protocol::CurveClientKeys> keys =
        protocol::LoadCurveClientKeys(e.server_key, e.client_keys, "phasord_public_key_file", "agent_key_prefix");
    if (!keys.ok()) {
      std::cerr << "phasor slurm task-prolog: " << keys.status().message() << "\n";
      return;
    }
    curve = *keys;
  }
  absl::StatusOr<v1::OffsetUpdate> offset = FetchOffset(job, e.request_endpoint, config->phasord_timeout_ms, curve);
  if (!offset.ok()) {
    std::cerr << "phasor slurm task-prolog: job " << job << ": " << offset.status().message() << "\n";
    return;
  }
  PrintOffsetExports(e, *offset);
}

struct OffsetFlags {
  std::string job;
  std::string phasord;
  std::string offset_endpoint;
  std::string mode = "once";
  int fail_open_ms = 2000;
  int timeout_ms = 2000;
  SlurmCurveFlags curve;
};

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
  absl::StatusOr<v1::OffsetUpdate> offset =
      FetchOffset(f.job, f.phasord, f.timeout_ms, SlurmCurveOrFail(command, f.curve));
  if (!offset.ok()) {
    FailCommand(command, offset.status().code() == absl::StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure,
                std::string(offset.status().message()));
  }
  PrintOffsetExports({f.job, f.phasord, f.offset_endpoint, f.mode, f.fail_open_ms, f.curve.server_key,
                      f.curve.client_keys, {}, -1},
                     *offset);
}

}  // namespace

void AddSlurmCommand(CLI::App& app) {
  CLI::App* slurm = app.add_subcommand("slurm", "phasor as the placement plugin of a Slurm cluster (docs/slurm.md)");
  slurm->require_subcommand(1);

  auto serve_flags = std::make_shared<ServeFlags>();
  ServeFlags& f = *serve_flags;
  CLI::App* serve = slurm->add_subcommand(
      "serve", "the controller: polls Slurm, answers job_submit.lua, places pending jobs, commits and releases jobs in phasord");
  serve->add_option("--topology", f.controller.topology_path, "Slurm topology.conf (or phasor YAML)")->required();
  serve->add_option("--phasord", f.controller.phasord_endpoint, "phasord's request endpoint")->required();
  serve->add_option("--socket", f.socket, "the Unix socket job_submit.lua (and single-host Prolog/Epilog) talk to")
      ->required();
  serve->add_option("--state", f.controller.state_path, "the state file (JSON)")->required();
  serve->add_option("--node-endpoint", f.nodes.endpoint,
                    "where compute nodes' Prolog/Epilog reach the controller (tcp://ADDRESS:PORT with CURVE, or ipc://)");
  serve->add_option("--node-secret-key", f.nodes.secret_key_file, "the controller's CURVE secret key file");
  serve->add_option("--node-public-key", f.nodes.public_key_file, "the controller's CURVE public key file");
  serve->add_option("--node-allowed-clients", f.nodes.allowed_clients_file,
                    "the nodes' public keys the controller admits (one per line)");
  serve->add_option("--poll-ms", f.poll_ms, "how often Slurm is polled and pending jobs re-planned")->capture_default_str();
  serve->add_option("--slurm-bin-dir", f.cli.bin_dir, "where sinfo, squeue and scontrol are (default: PATH)");
  serve->add_option("--submit-timeout-ms", f.controller.submit_timeout_ms, "phasord's deadline for a submit")
      ->capture_default_str();
  serve->add_option("--replan-timeout-ms", f.controller.replan_timeout_ms,
                    "phasord's deadline for placing one pending job")
      ->capture_default_str();
  serve->add_option("--unbound-grace-ms", f.controller.unbound_grace_ms,
                    "how long a proposal waits for its job to show in a poll (at least --poll-ms)")
      ->capture_default_str();
  serve->add_option("--max-candidates", f.controller.max_candidates, "candidates ranked per job")->capture_default_str();
  serve->add_option("--keep-packing", f.keep_packing,
                    "on: no candidate leaving fewer idle nodes or idle leaves than Slurm's first is ranked")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  serve->add_option("--profile-dir", f.controller.profiles.profile_dir, "directory of profile=FILE profiles");
  serve->add_option("--model-catalog", f.controller.profiles.model_catalog_dir, "model catalogue for model=NAME (data/models)");
  serve->add_option("--model-gpus-per-node", f.controller.profiles.model_gpus_per_node, "GPUs per node for model lookups")
      ->capture_default_str();
  serve->add_option("--node-gbps", f.controller.slurm_import.node_link_gbps, "topology.conf: server <-> switch links")
      ->capture_default_str();
  serve->add_option("--switch-gbps", f.controller.slurm_import.switch_link_gbps, "topology.conf: switch <-> switch links")
      ->capture_default_str();
  serve->add_option("--dump-dir", f.controller.dump_dir, "write the RankRequest behind every pin there (<token>.json)");
  serve->add_option("--log-level", f.log_level, "debug, info, warn, error")->capture_default_str();
  AddSlurmCurveFlags(serve, f.curve);
  serve->callback([serve_flags] { RunServe(*serve_flags); });

  auto config = std::make_shared<std::string>("/etc/phasor/slurm-node.yaml");
  for (const char* op : {"prolog", "epilog", "task-prolog"}) {
    const std::string name = op;
    CLI::App* cmd = slurm->add_subcommand(
        op, name == "prolog"     ? "Prolog: commit the job (SLURM_JOB_ID, SLURM_JOB_COMMENT, SLURM_JOB_NODELIST)"
            : name == "epilog" ? "Epilog, for every job: release it, re-plan the waiting jobs (SLURM_JOB_ID)"
                               : "TaskProlog: the job's offset as export lines (SLURM_JOB_ID)");
    cmd->add_option("--config", *config, "the node configuration file (docs/slurm.md)")->capture_default_str();
    cmd->callback([name, config] {
      if (name == "prolog") RunProlog(*config);
      if (name == "epilog") RunEpilog(*config);
      if (name == "task-prolog") RunTaskProlog(*config);
    });
  }

  auto offset_flags = std::make_shared<OffsetFlags>();
  OffsetFlags& o = *offset_flags;
  CLI::App* offset = app.add_subcommand("offset", "print a job's offset as `export PHASOR_...` lines");
  offset->add_option("--job", o.job, "the job id (SLURM_JOB_ID)")->required();
  offset->add_option("--phasord", o.phasord, "phasord's request endpoint")->required();
  offset->add_option("--offset-endpoint", o.offset_endpoint, "phasord's offset (PUB) endpoint, for the agent");
  offset->add_option("--mode", o.mode, "the agent's mode: once or pace")->capture_default_str();
  offset->add_option("--fail-open-ms", o.fail_open_ms, "the agent's fail-open bound")->capture_default_str();
  offset->add_option("--timeout-ms", o.timeout_ms, "how long to wait for phasord")->capture_default_str();
  AddSlurmCurveFlags(offset, o.curve);
  offset->callback([offset_flags] { RunOffset(*offset_flags); });
}

}  // namespace phasor::cmd
