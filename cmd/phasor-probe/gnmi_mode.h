// `phasor-probe --gnmi TARGET...`: streams switch interface counters over
// gNMI instead of capturing packets (no EAL), and reports every interface
// direction's profile as JSON lines every --report-s and at the end, the
// same lines as `phasor profile`; with --publish and --publish-subjects the
// periodic ones go to phasord. SIGINT/SIGTERM end it with a final report.
#ifndef PHASOR_CMD_PHASOR_PROBE_GNMI_MODE_H_
#define PHASOR_CMD_PHASOR_PROBE_GNMI_MODE_H_

#include <atomic>
#include <ostream>
#include <string>

#include "cmd/common/gnmi_flags.h"
#include "integrations/client/profile_publisher.h"
#include "probe/profile_extractor.h"

namespace phasor::cmd {

struct GnmiProbeOptions {
  GnmiFlags gnmi;
  double report_s = 0;    // report every N s (0: at the end)
  double duration_s = 0;  // stop after N s (0: at a signal)
  double window_s = 600;  // each report extracts the newest window_s of readings
  probe::ExtractorOptions extract;
  client::PublisherOptions publish;  // endpoint empty: no publishing
  std::string publish_server_key, publish_keys, publish_subjects;
};

// Runs until the duration, a signal (`interrupted`) or every target refused
// for good. Writes JSON lines to `out`, one stats line per report and the
// summaries to `err`. Returns the exit status: 0, 2 for bad options (said on
// `err`), 1 when no target delivered counters.
int RunGnmiProbe(const GnmiProbeOptions& options, const std::atomic<bool>& interrupted,
                 std::ostream& out, std::ostream& err);

}  // namespace phasor::cmd

#endif  // PHASOR_CMD_PHASOR_PROBE_GNMI_MODE_H_
