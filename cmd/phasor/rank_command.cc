// `phasor rank [FILE]`: the JSON contract of SPEC section 5 from a file or
// stdin to stdout, or a readable report with --format table.
#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cmd/phasor/commands.h"
#include "diagnose/report.h"
#include "placer/candidate_routing.h"
#include "placer/link_score.h"
#include "placer/rank_json.h"
#include "topology/router.h"
#include "topology/topology_file.h"
#include "placer/packing.h"
#include "placer/candidates.h"
#include "placer/ranker.h"

namespace phasor::cmd {
namespace {

struct RankFlags {
  std::string input = "-";
  std::string format = "json";
  int width = 72;
  std::string topology;  // route candidates given as servers through this fabric
  placer::RankLimits limits;  // raised with --max-... and --deadline-ms
};

[[noreturn]] void FailRank(int code, const std::string& message) {
  FailCommand("rank", code, message);
}

std::string ReadInput(const std::string& path) { return ReadInputOrFail("rank", path); }


void PrintTable(const placer::RankRequest& request, const placer::Ranking& ranking, int width) {
  std::map<std::string, const placer::Job*> jobs;
  for (const placer::Job& j : request.jobs) jobs[j.id] = &j;
  std::map<std::string, const placer::Candidate*> candidates;
  for (const placer::Candidate& c : request.candidates) candidates[c.id] = &c;

  std::cout << absl::StrFormat("%-4s %-16s %8s %8s %6s %6s\n", "rank", "candidate", "score",
                               "min", "cycle", "exact");
  int rank = 0;
  for (const placer::RankedCandidate& c : ranking.ranked) {
    std::cout << absl::StrFormat("%-4d %-16s %8.4f %8.4f %6s %6s\n", ++rank, c.candidate, c.score,
                                 c.min_link_score, c.cycle ? "yes" : "no", c.exact ? "yes" : "no");
  }
  for (const placer::RejectedCandidate& r : ranking.rejected) {
    std::cout << absl::StrFormat("%-4s %-16s rejected: %s\n", "-", r.candidate, r.reason);
  }
  for (const placer::RankedCandidate& c : ranking.ranked) {
    std::cout << "\ncandidate " << c.candidate << (c.proposed_by_phasor ? " (proposed by phasor)" : "") << ": shifts";
    for (const auto& [job, shift] : c.shifts_us) {
      std::cout << absl::StrFormat("  %s=%.1f ms", job, shift / 1000.0);
    }
    std::cout << "\n";
    for (const auto& [job, order] : c.rank_order) {
      std::cout << "  rank order of " << job << ":";
      for (const std::string& server : order) std::cout << " " << server;
      std::cout << "\n";
    }
    const placer::Candidate& cand = *candidates.at(c.candidate);
    for (const placer::LinkResult& l : c.links) {
      std::cout << absl::StrFormat(
          "  link %s (%.0f Gbit/s): score %.4f, optimum %.4f, quantum %u us, "
          "circle %u bins\n",
          l.id, l.capacity_gbps, l.score, l.optimal_score, l.quantum_us,
          static_cast<unsigned>(l.circle_bins));
      // Redraw the circle: load with every job started together, then shifted.
      std::vector<placer::LinkDemand> demands;
      for (const std::string& job : l.jobs) {
        // The job's shares: the candidate's, or the running part's.
        const auto own = cand.links.find(job);
        const auto& shares = own != cand.links.end() ? own->second : request.running.links.at(job);
        demands.push_back({&jobs.at(job)->profile, shares.at(l.id)});
      }
      auto circle = placer::BuildUnifiedCircle(demands, request.options.circle);
      if (!circle.ok()) continue;
      std::vector<uint32_t> zero(l.jobs.size(), 0), shifted(l.jobs.size(), 0);
      for (size_t p = 0; p < l.jobs.size(); ++p) {
        for (const auto& [job, shift] : c.shifts_us) {
          if (job == l.jobs[p]) {
            shifted[p] = static_cast<uint32_t>((uint64_t{shift} + circle->quantum_us / 2) /
                                               circle->quantum_us % circle->JobBins(p));
          }
        }
      }
      const double cap = l.capacity_gbps;
      const double before = placer::LinkScore(*circle, cap, zero);
      std::cout << absl::StrFormat("    one unified period = %.1f ms; '!' = over capacity\n",
                                   circle->bins * circle->quantum_us / 1000.0);
      for (const auto& [label, shifts, score] :
           {std::tuple{"started together", zero, before}, std::tuple{"with phasor", shifted, l.score}}) {
        std::cout << absl::StrFormat("    %s (score %.4f)\n", label, score);
        for (size_t p = 0; p < l.jobs.size(); ++p) {
          // The job's own demand, rotated by its shift.
          std::vector<double> own(circle->bins, 0.0);
          const auto& d = circle->jobs[p].gbps;
          for (uint64_t k = 0; k < circle->bins; ++k) {
            own[k] = d[(k + d.size() - shifts[p] % d.size()) % d.size()];
          }
          std::cout << absl::StrFormat("    %12s |%s|\n", l.jobs[p], diagnose::ShadedRow(own, cap, 1e300, width));
        }
        const std::vector<double> load = placer::LoadOnCircle(*circle, shifts);
        std::cout << absl::StrFormat("    %12s |%s|\n", "link load", diagnose::ShadedRow(load, cap, cap, width));
      }
    }
  }
}

void RunRank(const RankFlags& flags) {
  if (flags.format != "json" && flags.format != "table") {
    FailRank(kExitBadInput, "--format: must be json or table, got '" + flags.format + "'");
  }
  const std::string text = ReadInput(flags.input);
  absl::StatusOr<placer::RankRequest> request = placer::ParseRankRequest(text);
  if (!request.ok()) FailRank(kExitBadInput, std::string(request.status().message()));
  std::vector<placer::RejectedCandidate> unrouted;
  if (!flags.topology.empty()) {
    absl::StatusOr<topology::Topology> fabric = topology::LoadTopologyFile(flags.topology);
    if (!fabric.ok()) FailRank(kExitBadInput, "--topology: " + std::string(fabric.status().message()));
    const topology::Router router(*fabric);
    if (!request->free_servers.empty()) {
      // phasor's own candidates from the free servers, then the host's
      // packing kept (as phasord does; placer/candidates.h, placer/packing.h).
      absl::StatusOr<placer::PackingView> view = placer::PackingViewOf(*fabric, request->free_servers);
      if (!view.ok()) FailRank(kExitBadInput, std::string(view.status().message()));
      placer::AddOwnCandidates(*fabric, router, *request);
      placer::KeepPacking(*view, *request, unrouted);
    }
    placer::RouteCandidates(*fabric, router, *request, unrouted);
  } else if (!request->free_servers.empty()) {
    FailRank(kExitBadInput, "free_servers: needs --topology (the fabric their racks are in)");
  }
  absl::StatusOr<placer::Ranking> ranked = placer::RankWithin(*request, flags.limits);
  if (!ranked.ok()) {
    // Bad input and a request over a limit are both the input's: one line, exit 2.
    std::string message(ranked.status().message());
    if (absl::IsResourceExhausted(ranked.status())) absl::StrAppend(&message, " (raise it with its --max- or --deadline-ms flag)");
    FailRank(kExitBadInput, message);
  }
  placer::Ranking ranking = *std::move(ranked);
  ranking.rejected.insert(ranking.rejected.end(), unrouted.begin(), unrouted.end());
  if (flags.format == "table") {
    PrintTable(*request, ranking, flags.width);
  } else {
    std::cout << placer::RankingToJson(ranking).dump(2) << "\n";
  }
}

}  // namespace

void AddRankCommand(CLI::App& app) {
  auto flags = std::make_shared<RankFlags>();
  CLI::App* cmd = app.add_subcommand(
      "rank",
      "Rank candidate placements (SPEC section 5): reads the JSON request from FILE or stdin,\n"
      "writes {\"ranked\": [...], \"rejected\": [...]} to stdout.");
  cmd->add_option("FILE", flags->input, "request file; '-' or nothing reads stdin");
  cmd->add_option("--format", flags->format, "json (the contract) or table (for people)")
      ->capture_default_str();
  cmd->add_option("--width", flags->width, "columns of the load drawings with --format table")
      ->check(CLI::Range(16, 400))
      ->capture_default_str();
  cmd->add_option("--topology", flags->topology,
                  "topology YAML (docs/topology.md): candidates may give \"servers\" per job, "
                  "routed to links and shares by the traffic model");
  // Resource limits of one request (placer::RankLimits, docs/placer.md).
  placer::RankLimits& limits = flags->limits;
  cmd->add_option("--max-job-bins", limits.max_job_bins,
                  "limit: bins of one job's pattern (its gbps entries; options.max_bins)")
      ->capture_default_str();
  cmd->add_option("--max-link-bins", limits.max_link_bins,
                  "limit: bins one contended link may hold while it is solved")
      ->capture_default_str();
  cmd->add_option("--max-jobs-x-links", limits.max_jobs_x_links, "limit: jobs x links of the request")
      ->capture_default_str();
  cmd->add_option("--max-candidates", limits.max_candidates, "limit: candidates of the request")
      ->capture_default_str();
  cmd->add_option("--max-evaluations", limits.max_evaluations,
                  "limit: the largest solver budget (bin evaluations) the options may ask for")
      ->capture_default_str();
  cmd->add_option("--deadline-ms", limits.deadline_ms, "limit: wall-clock time of the request")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([flags] { RunRank(*flags); });
}

}  // namespace phasor::cmd
