// From flows to subjects to JSON: the static flow -> job table, grouping of
// per-flow series into per-subject series, and the JSON line phasor-probe
// and `phasor profile` print for each subject.
//
// Output line (one JSON object per subject; "profile" is a SPEC section 2
// profile that can be pasted as is into `jobs[].profile` of `phasor rank`):
//   {"subject": "job-a", "source": "pcap:/x.pcap", "periodic": true,
//    "profile": {"period_us": 123400, "bin_us": 1000, "gbps": [...],
//                "t0_epoch_us": 1700000000123456},
//    "confidence": 0.93, "up_fraction": 0.30, "peak_gbps": 40.1, "mean_gbps": 13.2}
// and when there is no pattern (no "profile"):
//   {"subject": ..., "source": ..., "periodic": false,
//    "reason": "no periodic pattern: ...", "confidence": 0.01, "mean_gbps": 3.1}
// Live polled sources (--netdev) add how the reads went:
//   "sampling": {"interval_us": 10000, "reads": 1001, "late": 0,
//                "jitter_mean_us": 61.2, "jitter_p99_us": 410, "jitter_max_us": 1203}
#ifndef PHASOR_PROBE_PROFILE_REPORT_H_
#define PHASOR_PROBE_PROFILE_REPORT_H_

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "probe/capture_source.h"
#include "probe/flow_counter.h"
#include "probe/measure.h"
#include "probe/profile_extractor.h"
#include "probe/roce_parser.h"

namespace phasor::probe {

// Maps flows to jobs. Text format, one rule per line, first match wins:
//   <job> <src_ip|*> <dst_ip|*> [<dest_qp>|tcp[:<port>]|udp[:<port>]|*]   # comment
// (dest_qp decimal or 0x hex, matching RoCE flows only; tcp/udp match that
// transport's flows, with a port matching either end; * or nothing: any
// flow between the addresses). A placement (job -> servers) with the
// servers' addresses fills the same table (FromPlacement). Immutable after
// Parse: thread-safe lookups.
// Servers' IP addresses, for mapping a placement's server pairs to flows.
// Text format, one server per line: <server> <ip> [<ip>...]   # comment
struct ServerAddresses {
  std::map<std::string, std::vector<std::array<uint8_t, 16>>> ips;
  // InvalidArgument naming the line and field (a server given twice, an
  // address that does not parse, a server without one).
  static absl::StatusOr<ServerAddresses> Parse(const std::string& text, const std::string& name);
};

class FlowJobTable {
 public:
  // Rules for every ordered pair of distinct servers of each job, every
  // address of one to every address of the other, any transport; jobs in
  // name order (a server pair two jobs share maps to the first).
  // InvalidArgument naming the job and server when a server has no address.
  static absl::StatusOr<FlowJobTable> FromPlacement(
      const std::map<std::string, std::vector<std::string>>& job_servers,
      const ServerAddresses& addresses);

  // The rules of `first`, then those of `then`: a flow both map goes to
  // `first`'s job (phasor-probe: the static --flows table before the one
  // from phasord's placement).
  static FlowJobTable Concat(const FlowJobTable& first, const FlowJobTable& then);

  // InvalidArgument naming the line and field for a malformed rule.
  static absl::StatusOr<FlowJobTable> Parse(const std::string& text, const std::string& name);
  // NotFound for a missing file, else as Parse.
  static absl::StatusOr<FlowJobTable> Load(const std::string& path);

  // The job of a flow, or "" when no rule matches.
  std::string JobOf(const FlowKey& key) const;
  size_t size() const { return rules_.size(); }
  // The jobs the rules name, sorted, each once.
  std::vector<std::string> Jobs() const;

 private:
  struct Rule {
    std::string job;
    std::optional<std::array<uint8_t, 16>> src, dst;
    std::optional<uint32_t> qp;
    std::optional<Transport> transport;
    std::optional<uint16_t> port;
  };
  std::vector<Rule> rules_;
};

struct SubjectSeries {
  std::string subject;  // the job, or the flow ("10.0.0.1>10.0.0.2/qp=0x000011") when unmapped
  BinnedSeries series;
};

// Sums the flows of each job onto one series; flows no rule maps stay
// subjects of their own. Flows must share bin_us and t0 (FlowCounter::Merge
// output does). Subjects are sorted by name.
std::vector<SubjectSeries> GroupBySubject(const std::vector<FlowSeries>& flows,
                                          const FlowJobTable& table);

// The JSON object of one subject (see the header comment).
nlohmann::json ProfileJson(const std::string& subject, const std::string& source,
                           const ExtractedProfile& profile);

// The JSON object of one measured subject: as above, plus "sampling" when
// the source polled live.
nlohmann::json ProfileJson(const MeasuredProfile& measured);

// Counters of a capture as one JSON object:
//   {"stats": {"final": true, "packets": N, "pps": R, "dropped": D, "roce_bytes": B,
//              "kinds": {"roce": ..., "not_ip": ..., ...},
//              "opcode_classes": {"rc": ..., "uc": ..., ...},
//              "snapped": S, "late": L, "table_full": F}}
nlohmann::json StatsJson(const ProbeStats& stats, const CaptureStats& capture, bool final);

}  // namespace phasor::probe

#endif  // PHASOR_PROBE_PROFILE_REPORT_H_
