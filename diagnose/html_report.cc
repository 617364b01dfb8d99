// The HTML report: one self-contained page (inline CSS and SVG; no scripts,
// web fonts or links outside the page), readable at a glance.
//
// Pictures, per contended link and for both "now" and "with phasor":
//   - the unified circle: one ring per job (innermost = first job), its Up
//     phases (UpArcs) as arcs in the job's colour, 12 o'clock = bin 0,
//     clockwise; the outermost red ring marks where the link load exceeds
//     capacity;
//   - the load over one unified period: the jobs' demands stacked as step
//     areas in their colours, the capacity as a dashed line, the excess above
//     it shaded red. Above 1200 bins, bins are averaged into 1200 columns.
#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "diagnose/report.h"

namespace phasor::diagnose {
namespace {

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
                                    "#edc948", "#9c755f", "#ff9da7", "#86bcb6", "#bab0ac"};
constexpr const char* kExcessColour = "#d62728";
constexpr size_t kMaxColumns = 1200;

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}


std::string MsLabel(double us) {
  return us >= 100000 ? absl::StrFormat("%.0f ms", us / 1000.0)
                      : absl::StrFormat("%.1f ms", us / 1000.0);
}

std::string Num(double x) { return absl::StrFormat("%.1f", x); }

// The score as a coloured badge: green at 1, amber below 0.95, red below 0.8.
std::string ScoreBadge(double score) {
  const char* cls = score >= 0.9995 ? "good" : score >= 0.95 ? "fair" : "bad";
  return absl::StrFormat("<span class=\"score %s\">%.4f</span>", cls, score);
}

class Page {
 public:
  explicit Page(const Diagnosis& d) : d_(d) {
    for (size_t i = 0; i < d.jobs.size(); ++i)
      colour_[d.jobs[i].id] = kPalette[i % std::size(kPalette)];
  }

  std::string Render(const HtmlOptions& options);

 private:
  std::string Colour(const std::string& job) const {
    auto it = colour_.find(job);
    return it == colour_.end() ? "#888888" : it->second;
  }
  std::string JobChip(const std::string& job) const {
    return absl::StrFormat("<span class=\"chip\"><i style=\"background:%s\"></i>%s</span>",
                           Colour(job), Escape(job));
  }
  std::string Summary();
  std::string ClusterTable();
  std::string JobTable();
  std::string LinkSection(size_t index, const LinkDiagnosis& l);
  std::string CircleSvg(const LinkDiagnosis& l, bool after);
  std::string LoadSvg(const LinkDiagnosis& l, bool after);

  const Diagnosis& d_;
  std::map<std::string, std::string> colour_;
  int clip_ids_ = 0;
};

std::string Page::Summary() {
  std::string out = "<div class=\"cards\">";
  absl::StrAppendFormat(&out,
                        "<div class=\"card\"><b>Placement score</b><div class=\"big\">%s &rarr; "
                        "%s</div><small>now &rarr; with phasor's shifts (mean of %d contended "
                        "links)</small></div>",
                        ScoreBadge(d_.current_score), ScoreBadge(d_.achievable_score),
                        static_cast<int>(d_.links.size()));
  absl::StrAppendFormat(&out,
                        "<div class=\"card\"><b>Excess over capacity</b><div class=\"big\">%s/h "
                        "&rarr; %s/h</div><small>bytes per hour the links' demand exceeds their "
                        "capacity</small></div>",
                        FormatBytes(d_.excess_bytes_per_hour_before()),
                        FormatBytes(d_.excess_bytes_per_hour_after()));
  absl::StrAppendFormat(
      &out,
      "<div class=\"card\"><b>Solution</b><div class=\"big\">%s</div><small>%s; %d jobs, "
      "%d contended links, %d other links</small></div>",
      d_.exact ? "proven optimal" : "best found",
      d_.cycle ? "loop in the affinity graph" : "no loop", static_cast<int>(d_.jobs.size()),
      static_cast<int>(d_.links.size()), static_cast<int>(d_.quiet_links.size()));
  out += "</div>\n";
  return out;
}

std::string Page::ClusterTable() {
  std::string out =
      "<h2>Contended links, largest gain first</h2>\n<table class=\"grid\"><tr><th>#</th>"
      "<th>link</th><th>capacity</th><th>jobs (share)</th><th>score now</th><th>with "
      "phasor</th><th>gain</th><th>excess/h now</th><th>excess/h with phasor</th></tr>\n";
  double max_gain = 1e-9;
  for (const LinkDiagnosis& l : d_.links) max_gain = std::max(max_gain, l.gain());
  for (size_t i = 0; i < d_.links.size(); ++i) {
    const LinkDiagnosis& l = d_.links[i];
    std::string jobs;
    for (const JobOnLink& j : l.jobs) {
      absl::StrAppend(&jobs, JobChip(j.job), absl::StrFormat("<small>%.2f</small> ", j.share));
    }
    const double bar = std::max(0.0, l.gain()) / max_gain * 80;
    absl::StrAppendFormat(
        &out,
        "<tr><td>%d</td><td><a href=\"#link-%d\">%s</a></td><td>%s Gbit/s</td><td>%s</td>"
        "<td>%s</td><td>%s</td><td class=\"gain\"><span class=\"bar\" style=\"width:%.0fpx\">"
        "</span>%+.4f</td><td>%s</td><td>%s</td></tr>\n",
        static_cast<int>(i + 1), static_cast<int>(i), Escape(l.id), Num(l.capacity_gbps), jobs,
        ScoreBadge(l.current_score), ScoreBadge(l.achievable_score), bar, l.gain(),
        FormatBytes(l.excess_bytes_per_hour_before), FormatBytes(l.excess_bytes_per_hour_after));
  }
  if (d_.links.empty()) out += "<tr><td colspan=\"9\">No two jobs share a link.</td></tr>\n";
  out += "</table>\n";
  if (!d_.quiet_links.empty()) {
    out += "<p class=\"quiet\"><b>Not contended</b> (fewer than two jobs with traffic): ";
    std::vector<std::string> items;
    for (const QuietLink& q : d_.quiet_links) {
      std::string jobs;
      for (const std::string& j : q.jobs) absl::StrAppend(&jobs, " ", Escape(j));
      items.push_back(absl::StrCat("<span class=\"ql\">", Escape(q.id), "</span>",
                                   q.jobs.empty() ? "" : absl::StrCat(" (", jobs.substr(1), ")")));
    }
    out += absl::StrJoin(items, ", ") + "</p>\n";
  }
  return out;
}

std::string Page::JobTable() {
  std::string out =
      "<h2>Jobs and recommended shifts</h2>\n<table class=\"grid\"><tr><th>job</th><th>period</th>"
      "<th>mean demand</th><th>phase now</th><th>(from)</th><th>recommended shift</th>"
      "<th>contended links</th></tr>\n";
  for (const JobSummary& j : d_.jobs) {
    std::vector<std::string> links;
    for (const std::string& id : j.links) {
      for (size_t i = 0; i < d_.links.size(); ++i) {
        if (d_.links[i].id == id) {
          links.push_back(
              absl::StrFormat("<a href=\"#link-%d\">%s</a>", static_cast<int>(i), Escape(id)));
        }
      }
    }
    absl::StrAppendFormat(&out,
                          "<tr><td>%s</td><td>%s</td><td>%s Gbit/s</td><td>%s</td><td>%s</td>"
                          "<td><b>%s</b></td><td>%s</td></tr>\n",
                          JobChip(j.id), MsLabel(j.period_us), Num(j.mean_gbps), MsLabel(j.current_shift_us),
                          PhaseSourceName(j.phase_source), MsLabel(j.recommended_shift_us),
                          links.empty() ? "-" : absl::StrJoin(links, ", "));
  }
  out += "</table>\n";
  absl::StrAppendFormat(&out,
                        "<p class=\"note\">A job should start its iterations at epoch + shift + n "
                        "&times; period. Phases now come from each profile's t0_epoch_us (else "
                        "phasord's offset) relative to the earliest one (%s); a job with neither "
                        "is assumed at shift 0.</p>\n",
                        d_.epoch_us ? absl::StrCat("epoch ", *d_.epoch_us, " us") : "none given");
  return out;
}

// The circles' centre and the SVG's size (wider than high: room for the
// time labels at 3 and 9 o'clock).
constexpr double kCircleW = 420, kCircleH = 370, kCx = kCircleW / 2, kCy = kCircleH / 2;

// Point on a circle of radius r around (kCx, kCy) at fraction f of a turn,
// clockwise from 12 o'clock.
std::pair<double, double> Polar(double r, double f) {
  const double a = 2 * std::numbers::pi * f;
  return {kCx + r * std::sin(a), kCy - r * std::cos(a)};
}

std::string ArcPath(double r, double f0, double f1) {
  if (f1 - f0 >= 1 - 1e-9) {
    return absl::StrFormat("M %.2f %.2f A %.2f %.2f 0 1 1 %.2f %.2f A %.2f %.2f 0 1 1 %.2f %.2f",
                           kCx, kCy - r, r, r, kCx, kCy + r, r, r, kCx, kCy - r);
  }
  const auto [x0, y0] = Polar(r, f0);
  const auto [x1, y1] = Polar(r, f1);
  return absl::StrFormat("M %.2f %.2f A %.2f %.2f 0 %d 1 %.2f %.2f", x0, y0, r, r,
                         f1 - f0 > 0.5 ? 1 : 0, x1, y1);
}

std::string Page::CircleSvg(const LinkDiagnosis& l, bool after) {
  constexpr double kOuter = 140, kInner = 46;
  const size_t n = l.jobs.size();
  const double band = (kOuter - 14 - kInner) / static_cast<double>(std::max<size_t>(n, 1));
  const double stroke = std::max(3.0, band * 0.78);
  const double nbins = static_cast<double>(l.bins);
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 "
      "%.0f %.0f\" role=\"img\"><title>unified circle of %s, %s</title>",
      kCircleW, kCircleH, kCircleW, kCircleH, Escape(l.id), after ? "with phasor" : "now");
  // Time ticks every quarter of the unified period.
  for (int q = 0; q < 4; ++q) {
    const auto [x0, y0] = Polar(kOuter + 2, q / 4.0);
    const auto [x1, y1] = Polar(kOuter + 8, q / 4.0);
    const auto [tx, ty] = Polar(kOuter + (q % 2 == 0 ? 17 : 11), q / 4.0);
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"%s\" "
                          "dominant-baseline=\"middle\">%s</text>",
                          x0, y0, x1, y1, tx, ty,
                          q == 1   ? "start"
                          : q == 3 ? "end"
                                   : "middle",
                          MsLabel(l.period_us() * q / 4.0));
  }
  // Overload ring: where the link load exceeds capacity.
  const std::vector<double>& load = after ? l.load_after : l.load_before;
  absl::StrAppendFormat(&out,
                        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"none\" stroke=\"#eee\" "
                        "stroke-width=\"7\"/>",
                        kCx, kCy, kOuter - 4);
  for (uint64_t k = 0; k < l.bins;) {
    if (!(load[k] > l.capacity_gbps + 1e-9)) {
      ++k;
      continue;
    }
    const uint64_t begin = k;
    while (k < l.bins && load[k] > l.capacity_gbps + 1e-9) ++k;
    absl::StrAppendFormat(&out, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"7\"/>",
                          ArcPath(kOuter - 4, begin / nbins, k / nbins), kExcessColour);
  }
  // One ring per job, innermost first.
  for (size_t p = 0; p < n; ++p) {
    const JobOnLink& j = l.jobs[p];
    const double r = kInner + band * (static_cast<double>(p) + 0.5);
    absl::StrAppendFormat(&out,
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"none\" "
                          "stroke=\"#e8e8e8\" stroke-width=\"%.1f\"/>",
                          kCx, kCy, r, stroke);
    const uint32_t shift = after ? j.recommended_shift_bins : j.current_shift_bins;
    std::string d;
    for (const Arc& a : UpArcs(j, l.bins, shift, d_.up_threshold)) {
      absl::StrAppend(&d, ArcPath(r, a.begin / nbins, a.end / nbins), " ");
    }
    if (!d.empty()) {
      absl::StrAppendFormat(&out,
                            "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\">"
                            "<title>%s: Up phases</title></path>",
                            d, Colour(j.job), stroke, Escape(j.job));
    }
    // The ring's label, just left of 12 o'clock.
    absl::StrAppendFormat(&out,
                          "<text x=\"%.1f\" y=\"%.1f\" class=\"ring\" text-anchor=\"end\" "
                          "dominant-baseline=\"middle\">%s</text>",
                          kCx - 4, kCy - r, Escape(j.job));
  }
  absl::StrAppendFormat(&out,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"center\">%s"
                        "</text><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                        "class=\"centersub\">score</text>",
                        kCx, kCy + 4,
                        absl::StrFormat("%.3f", after ? l.achievable_score : l.current_score), kCx,
                        kCy + 20);
  out += "</svg>";
  return out;
}

std::string Page::LoadSvg(const LinkDiagnosis& l, bool after) {
  constexpr double kW = 600, kH = 230, kLeft = 52, kRight = 12, kTop = 14, kBottom = 30;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  const std::vector<double>& load = after ? l.load_after : l.load_before;
  const size_t bins = load.size();
  const size_t cols = std::min(bins, kMaxColumns);
  // Per column: each job's mean demand and the mean load.
  std::vector<std::vector<double>> stacked(l.jobs.size(), std::vector<double>(cols, 0.0));
  std::vector<double> total(cols, 0.0);
  for (size_t col = 0; col < cols; ++col) {
    const size_t b0 = bins * col / cols, b1 = std::max(b0 + 1, bins * (col + 1) / cols);
    const double width = static_cast<double>(b1 - b0);
    double below = 0;
    for (size_t p = 0; p < l.jobs.size(); ++p) {
      const JobOnLink& j = l.jobs[p];
      const uint32_t b = j.bins(), s = after ? j.recommended_shift_bins : j.current_shift_bins;
      double sum = 0;
      for (size_t k = b0; k < b1; ++k) sum += j.gbps[(k + b - s % b) % b];
      below += sum / width;
      stacked[p][col] = below;
    }
    double sum = 0;
    for (size_t k = b0; k < b1; ++k) sum += load[k];
    total[col] = sum / width;
  }
  double peak = 0;
  for (double v : load) peak = std::max(peak, v);
  const double ymax = std::max(l.capacity_gbps * 1.25, peak * 1.08);
  auto x = [&](double col) { return kLeft + pw * col / static_cast<double>(cols); };
  auto y = [&](double v) { return kTop + ph * (1 - v / ymax); };
  auto steps = [&](const std::vector<double>& v) {
    std::string d;
    for (size_t col = 0; col < cols; ++col) {
      absl::StrAppendFormat(&d, "L %.2f %.2f L %.2f %.2f ", x(col), y(v[col]), x(col + 1),
                            y(v[col]));
    }
    return d;
  };
  const int clip = clip_ids_++;
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 "
      "%.0f %.0f\" role=\"img\"><title>load on %s over one unified period, %s</title>"
      "<defs><clipPath id=\"over%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
      "height=\"%.1f\"/></clipPath><pattern id=\"hatch%d\" width=\"7\" height=\"7\" "
      "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"7\" "
      "height=\"7\" fill=\"%s\" fill-opacity=\"0.35\"/><rect width=\"3.5\" height=\"7\" "
      "fill=\"%s\"/></pattern></defs>",
      kW, kH, kW, kH, Escape(l.id), after ? "with phasor" : "now", clip, kLeft, kTop, pw,
      std::max(0.0, y(l.capacity_gbps) - kTop), clip, kExcessColour, kExcessColour);
  // Axes and grid.
  for (const double v : {0.0, l.capacity_gbps / 2, l.capacity_gbps}) {
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\" "
                          "dominant-baseline=\"middle\">%s</text>",
                          kLeft, y(v), kLeft + pw, y(v), kLeft - 5, y(v), Num(v));
  }
  for (int q = 0; q <= 4; ++q) {
    const double px = kLeft + pw * q / 4.0;
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"%s\">%s</text>",
                          px, kTop + ph, px, kTop + ph + 4, px, kTop + ph + 16,
                          q == 0   ? "start"
                          : q == 4 ? "end"
                                   : "middle",
                          MsLabel(l.period_us() * q / 4.0));
  }
  absl::StrAppendFormat(
      &out,
      "<text x=\"12\" y=\"%.1f\" class=\"tick\" transform=\"rotate(-90 12 %.1f)\" "
      "text-anchor=\"middle\">Gbit/s</text>",
      kTop + ph / 2, kTop + ph / 2);
  // Stacked job demands, top job drawn first so the lower ones stay visible.
  for (size_t p = l.jobs.size(); p-- > 0;) {
    std::string d = absl::StrFormat("M %.2f %.2f ", x(0), y(0));
    d += steps(stacked[p]);
    absl::StrAppendFormat(&d, "L %.2f %.2f Z", x(static_cast<double>(cols)), y(0));
    absl::StrAppendFormat(&out,
                          "<path d=\"%s\" fill=\"%s\" stroke=\"none\">"
                          "<title>%s</title></path>",
                          d, Colour(l.jobs[p].job), Escape(l.jobs[p].job));
  }
  // Excess: the load area clipped to above the capacity line.
  {
    std::string d = absl::StrFormat("M %.2f %.2f ", x(0), y(0));
    d += steps(total);
    absl::StrAppendFormat(&d, "L %.2f %.2f Z", x(static_cast<double>(cols)), y(0));
    absl::StrAppendFormat(&out,
                          "<path d=\"%s\" fill=\"url(#hatch%d)\" clip-path=\"url(#over%d)\">"
                          "<title>excess over capacity</title></path>",
                          d, clip, clip);
  }
  // Total load outline and capacity.
  {
    std::string d = absl::StrFormat("M %.2f %.2f ", x(0), y(total.empty() ? 0 : total[0]));
    d += steps(total);
    absl::StrAppendFormat(&out,
                          "<path d=\"%s\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.2\"/>", d);
  }
  absl::StrAppendFormat(&out,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                        "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/><text x=\"%.1f\" "
                        "y=\"%.1f\" class=\"cap\" text-anchor=\"end\">capacity %s Gbit/s</text>",
                        kLeft, y(l.capacity_gbps), kLeft + pw, y(l.capacity_gbps), kLeft + pw - 4,
                        y(l.capacity_gbps) - 5, Num(l.capacity_gbps));
  absl::StrAppendFormat(&out,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>"
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>",
                        kLeft, kTop, kLeft, kTop + ph, kLeft, kTop + ph, kLeft + pw, kTop + ph);
  out += "</svg>";
  return out;
}

std::string Page::LinkSection(size_t index, const LinkDiagnosis& l) {
  std::string out =
      absl::StrFormat("<section id=\"link-%d\">\n<h2>%d. Link %s</h2>\n", static_cast<int>(index),
                      static_cast<int>(index + 1), Escape(l.id));
  absl::StrAppendFormat(
      &out,
      "<p class=\"facts\">capacity <b>%s Gbit/s</b> &middot; unified period <b>%s</b> "
      "(%d bins of %u us) &middot; score <b>%s &rarr; %s</b> (gain %+.4f%s) &middot; excess "
      "<b>%s/h &rarr; %s/h</b></p>\n",
      Num(l.capacity_gbps), MsLabel(l.period_us()), static_cast<int>(l.bins), l.quantum_us,
      ScoreBadge(l.current_score), ScoreBadge(l.achievable_score), l.gain(),
      l.optimal_score > l.achievable_score + 1e-9
          ? absl::StrFormat("; this link alone could reach %.4f", l.optimal_score)
          : "",
      FormatBytes(l.excess_bytes_per_hour_before), FormatBytes(l.excess_bytes_per_hour_after));
  // Legend with each job's numbers.
  out +=
      "<table class=\"legend\"><tr><th>job</th><th>share</th><th>period</th><th>on circle</th>"
      "<th>mean</th><th>peak</th><th>shift now</th><th>recommended</th></tr>";
  for (const JobOnLink& j : l.jobs) {
    absl::StrAppendFormat(&out,
                          "<tr><td>%s</td><td>%.2f</td><td>%s</td><td>%s</td><td>%s Gbit/s</td>"
                          "<td>%s Gbit/s</td><td>%s</td><td><b>%s</b></td></tr>",
                          JobChip(j.job), j.share, MsLabel(j.period_us), MsLabel(j.quantized_period_us),
                          Num(j.mean_gbps), Num(j.peak_gbps), MsLabel(j.current_shift_us),
                          MsLabel(j.recommended_shift_us));
  }
  out += "</table>\n<div class=\"pair\">";
  for (const bool after : {false, true}) {
    std::string shifts;
    for (const JobOnLink& j : l.jobs) {
      absl::StrAppend(&shifts, " ", Escape(j.job), "=",
                      MsLabel(after ? j.recommended_shift_us : j.current_shift_us));
    }
    absl::StrAppendFormat(
        &out,
        "<div class=\"col %s\"><h3>%s</h3><p class=\"nums\">score %s &middot; excess %s/h "
        "&middot; shifts%s</p><div class=\"figs\">%s</div>%s</div>",
        after ? "after" : "before", after ? "With phasor's shifts" : "Now",
        ScoreBadge(after ? l.achievable_score : l.current_score),
        FormatBytes(after ? l.excess_bytes_per_hour_after : l.excess_bytes_per_hour_before), shifts,
        CircleSvg(l, after), LoadSvg(l, after));
  }
  out += "</div>\n</section>\n";
  return out;
}

constexpr const char* kStyle = R"css(
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 20px 28px;
       color: #222; max-width: 1340px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 2px solid #ddd; padding-bottom: 3px; }
h3 { font-size: 16px; margin: 4px 0; }
.src { color: #666; margin: 0 0 12px; }
.cards { display: flex; gap: 14px; flex-wrap: wrap; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: 8px 14px; min-width: 280px; }
.card .big { font-size: 22px; margin: 4px 0; }
.card small { color: #666; }
table.grid, table.legend { border-collapse: collapse; font-size: 14px; }
table.grid th, table.grid td, table.legend th, table.legend td {
  border-bottom: 1px solid #e4e4e4; padding: 4px 10px; text-align: left; }
table.grid th, table.legend th { background: #f4f4f4; }
.chip { white-space: nowrap; margin-right: 4px; }
.chip i { display: inline-block; width: 11px; height: 11px; border-radius: 2px;
          margin-right: 4px; vertical-align: -1px; }
.score { font-weight: bold; padding: 0 4px; border-radius: 3px; }
.score.good { color: #1b7a2a; } .score.fair { color: #a06000; } .score.bad { color: #c0161b; }
td.gain { white-space: nowrap; }
.bar { display: inline-block; height: 10px; background: #59a14f; margin-right: 6px; }
.quiet, .note { color: #555; font-size: 13px; }
.facts { font-size: 15px; }
.pair { display: flex; gap: 24px; flex-wrap: wrap; }
.col { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; width: 610px; }
.col.before { background: #fffafa; } .col.after { background: #fafffa; }
.nums { font-size: 14px; margin: 2px 0 6px; }
.figs { display: flex; flex-direction: column; align-items: center; }
svg text.tick { font-size: 11px; fill: #444; }
svg text.ring { font-size: 12px; font-weight: bold; fill: #333; paint-order: stroke;
               stroke: #fff; stroke-width: 3px; }
svg text.center { font-size: 22px; font-weight: bold; fill: #222; }
svg text.centersub { font-size: 12px; fill: #666; }
svg text.cap { font-size: 12px; fill: #222; }
)css";

std::string Page::Render(const HtmlOptions& options) {
  std::string out =
      absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">", "<title>",
                   Escape(options.title), "</title><style>", kStyle, "</style></head><body>\n");
  absl::StrAppendFormat(&out, "<h1>%s &mdash; placement %s</h1>\n", Escape(options.title),
                        Escape(d_.candidate));
  if (!options.source.empty()) {
    absl::StrAppendFormat(&out, "<p class=\"src\">from %s</p>\n", Escape(options.source));
  }
  out += Summary();
  out += ClusterTable();
  out += JobTable();
  out += absl::StrFormat(
      "<p class=\"note\">How to read the pictures: each circle is one unified period of the link "
      "(12 o'clock = time 0, clockwise). Each ring is one job; its coloured arcs are the job's Up "
      "phases (demand above its minimum by more than %.0f%% of its swing to the peak). The red "
      "outer ring marks where the "
      "link's load exceeds its capacity. Below, the jobs' demands are stacked over the same "
      "period; red is the excess above the dashed capacity line.</p>\n",
      d_.up_threshold * 100);
  for (size_t i = 0; i < d_.links.size(); ++i) out += LinkSection(i, d_.links[i]);
  out += "</body></html>\n";
  return out;
}

}  // namespace

std::string RenderHtml(const Diagnosis& diagnosis, const HtmlOptions& options) {
  Page page(diagnosis);
  return page.Render(options);
}

}  // namespace phasor::diagnose
