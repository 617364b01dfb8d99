// Renderers of a Diagnosis (diagnose/diagnosis.h): a table a person reads in
// a terminal, JSON for machines, and a self-contained HTML page (inline SVG
// and CSS, no scripts, fonts or URLs: it opens offline).
//
// Pure functions of the diagnosis; thread-safe. docs/diagnose.md shows each.
#ifndef PHASOR_DIAGNOSE_REPORT_H_
#define PHASOR_DIAGNOSE_REPORT_H_

#include <string>
#include <vector>

#include "diagnose/diagnosis.h"
#include "nlohmann/json.hpp"

namespace phasor::diagnose {

struct TableOptions {
  // Also draw each link's load over one unified period, before and after, as
  // rows of shaded cells (as `phasor rank --format table` does). Default off.
  bool detail = false;
  // Cells per drawing row (16..400). Default 72.
  int width = 72;
};

// The cluster view: one row per contended link, largest gain first, then the
// recommended shifts; with `detail` the per-link drawings.
std::string RenderTable(const Diagnosis& diagnosis, const TableOptions& options = {});

// Every number of the diagnosis (loads included), field names as in the
// C++ structs. docs/diagnose.md lists them.
nlohmann::ordered_json DiagnosisToJson(const Diagnosis& diagnosis);

struct HtmlOptions {
  // The page title (and heading). Default "phasor diagnose".
  std::string title = "phasor diagnose";
  // Where the data came from, printed under the heading (file names, endpoint).
  std::string source;
};

// The HTML report: cluster table at the top (rows link to the link sections),
// then per link its numbers, the unified circle before and after the shifts
// (one ring per job, Up phases as arcs) and the load over one unified period
// against capacity with the excess shaded.
std::string RenderHtml(const Diagnosis& diagnosis, const HtmlOptions& options = {});

// Pieces the renderers share (and `phasor rank --format table`):

// "12.3 GB": bytes with a decimal (SI) unit.
std::string FormatBytes(double bytes);

// One row of `width` cells drawing `values` (one per circle bin) averaged per
// cell: ' ' idle, then ░▒▓█ by fraction of `full`; '!' where some bin of the
// cell exceeds `limit`.
std::string ShadedRow(const std::vector<double>& values, double full, double limit, int width);

}  // namespace phasor::diagnose

#endif  // PHASOR_DIAGNOSE_REPORT_H_
