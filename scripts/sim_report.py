#!/usr/bin/env python3
"""Writes a self-contained HTML report (inline SVG, no scripts, no network) comparing two
`phasor simulate --trace` runs, plugin off and on.

usage: sim_report.py OFF.json OFF_SERIES.json ON.json ON_SERIES.json OUT.html [--title T]
                     [--compare COMPARE.json COMPARE_SERIES.json --compare-title T]

OFF.json / ON.json are the stdout of `phasor simulate --trace ...`; *_SERIES.json the files
written with `--series`. With --compare, the report opens with a three-mode section (plugin off,
Cassini mode, phasor) from the stdout and series of `phasor simulate ... --compare --series F`.
Only the Python standard library is used.
"""
import argparse
import html
import json
import math
import sys

W, H = 640, 300  # plot size in px
ML, MR, MT, MB = 60, 20, 30, 45  # margins
COLOURS = {"off": "#d9534f", "on": "#2a7ab9", "cassini": "#e8a33d", "phasor": "#2a7ab9"}


def fmt(x, digits=3):
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-2:
        return f"{x:.{digits}g}"
    return f"{x:.{digits}f}".rstrip("0").rstrip(".")


def axes(x0, x1, y0, y1, xlabel, ylabel, title, xticks=5, yticks=5):
    """SVG for the frame, ticks and labels; returns (svg parts, x mapper, y mapper)."""
    pw, ph = W - ML - MR, H - MT - MB
    sx = lambda x: ML + (x - x0) / (x1 - x0 or 1) * pw
    sy = lambda y: MT + ph - (y - y0) / (y1 - y0 or 1) * ph
    out = [f'<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="#fff" stroke="#888"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle" font-weight="bold">{html.escape(title)}</text>',
           f'<text x="{ML + pw / 2}" y="{H - 8}" text-anchor="middle">{html.escape(xlabel)}</text>',
           f'<text x="14" y="{MT + ph / 2}" text-anchor="middle" '
           f'transform="rotate(-90 14 {MT + ph / 2})">{html.escape(ylabel)}</text>']
    for i in range(xticks + 1):
        x = x0 + (x1 - x0) * i / xticks
        out.append(f'<line x1="{sx(x):.1f}" y1="{MT + ph}" x2="{sx(x):.1f}" y2="{MT + ph + 4}" stroke="#888"/>')
        out.append(f'<text x="{sx(x):.1f}" y="{MT + ph + 17}" text-anchor="middle" font-size="11">{fmt(x)}</text>')
    for i in range(yticks + 1):
        y = y0 + (y1 - y0) * i / yticks
        out.append(f'<line x1="{ML}" y1="{sy(y):.1f}" x2="{ML + pw}" y2="{sy(y):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{ML - 6}" y="{sy(y) + 4:.1f}" text-anchor="end" font-size="11">{fmt(y)}</text>')
    return out, sx, sy


def svg(parts):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
            f'font-family="sans-serif" font-size="12">' + "".join(parts) + "</svg>")


def legend(parts, entries, x, y):
    for i, (label, colour, dash) in enumerate(entries):
        yy = y + 16 * i
        parts.append(f'<line x1="{x}" y1="{yy}" x2="{x + 22}" y2="{yy}" stroke="{colour}" '
                     f'stroke-width="2.5" stroke-dasharray="{dash}"/>')
        parts.append(f'<text x="{x + 28}" y="{yy + 4}">{html.escape(label)}</text>')


def ccdf_plot(samples_off, samples_on, curves=None):
    """Tail distribution of iteration time / isolated iteration time: the fraction of iterations
    slower than x, log scale (down to 1e-4). `curves` (label, key, samples) replaces the two
    default curves (without / with phasor)."""
    if curves is None:
        curves = [("without phasor", "off", samples_off), ("with phasor", "on", samples_on)]
    both = [v for _, _, samples in curves for v in samples]
    if not both:
        return "<p>No iteration of a multi-server job was recorded.</p>"
    hi = max(1.05, min(max(both), 4.0))
    lo_exp = -4
    parts, sx, sy_lin = axes(1.0, hi, lo_exp, 0, "iteration time / isolated iteration time",
                             "fraction of iterations slower (log10)",
                             "Iteration-time distribution (tail, 1 - CDF)", yticks=4)
    sy = lambda frac: sy_lin(max(lo_exp, math.log10(frac)) if frac > 0 else lo_exp)
    for _, name, samples in curves:
        if not samples:
            continue
        s = sorted(min(v, hi) for v in samples)
        n = len(s)
        pts = [(sx(1.0), sy(1.0))]
        i = 0
        while i < n:
            j = i
            while j < n and s[j] == s[i]:
                j += 1
            pts.append((sx(s[i]), pts[-1][1]))
            pts.append((sx(s[i]), sy((n - j) / n)))
            i = j
        pts.append((sx(hi), pts[-1][1]))
        step = max(1, len(pts) // 1600)
        pts = pts[::step] + [pts[-1]]
        d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        parts.append(f'<polyline points="{d}" fill="none" stroke="{COLOURS[name]}" stroke-width="2.5"/>')
    legend(parts, [(label, COLOURS[name], "") for label, name, _ in curves], ML + 330, MT + 20)
    return svg(parts)


def ph_mid():
    return (H - MT - MB) * 0.55


def overload_time(series, capacity, t0, t1):
    """Seconds of the window in which demand exceeded capacity (points are [t, load, demand])."""
    total = 0.0
    for i, p in enumerate(series):
        end = series[i + 1][0] if i + 1 < len(series) else t1
        if p[2] > capacity * (1 + 1e-9):
            total += max(0.0, min(end, t1) - max(p[0], t0))
    return total


def busy_time(series, t0, t1):
    total = 0.0
    for i, p in enumerate(series):
        end = series[i + 1][0] if i + 1 < len(series) else t1
        if p[1] > 0:
            total += max(0.0, min(end, t1) - max(p[0], t0))
    return total


def load_plot(series, capacity, t0, t1, title, colour):
    top = max([capacity] + [p[2] for p in series]) * 1.1
    parts, sx, sy = axes(0, (t1 - t0) / 1e3, 0, top, "time in window (ms)", "Gbit/s", title)
    xe = sx((t1 - t0) / 1e3)
    parts.append(f'<line x1="{sx(0)}" y1="{sy(capacity):.1f}" x2="{xe}" y2="{sy(capacity):.1f}" '
                 f'stroke="#333" stroke-dasharray="6 4"/>')
    parts.append(f'<text x="{xe - 4}" y="{sy(capacity) - 5:.1f}" text-anchor="end" '
                 f'font-size="11">capacity {fmt(capacity)}</text>')

    def steps(index):
        pts, last = [], 0.0
        for p in series:
            x = sx((min(max(p[0], t0), t1) - t0) / 1e3)
            pts += [(x, sy(last)), (x, sy(p[index]))]
            last = p[index]
        pts.append((xe, sy(last)))
        return pts

    if series:
        load = steps(1)
        d = " ".join(f"{x:.1f},{y:.1f}" for x, y in load)
        area = d + f" {xe:.1f},{sy(0):.1f} {sx(0):.1f},{sy(0):.1f}"
        parts.append(f'<polygon points="{area}" fill="{colour}" fill-opacity="0.18" stroke="none"/>')
        parts.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="2"/>')
        dem = " ".join(f"{x:.1f},{y:.1f}" for x, y in steps(2))
        parts.append(f'<polyline points="{dem}" fill="none" stroke="#555" stroke-width="1.2" '
                     f'stroke-dasharray="3 3"/>')
    legend(parts, [("carried load", colour, ""), ("demand (at NIC rates)", "#555", "3 3")],
           ML + 10, MT + 14)
    return svg(parts)


def row(label, off, on, better_low=True, digits=3):
    ratio = ""
    if on and off:
        r = off / on if better_low else on / off
        ratio = f"{r:.2f}x"
    elif off and not on and better_low:
        ratio = "&infin;"
    return (f"<tr><td>{html.escape(label)}</td><td>{fmt(off, digits)}</td><td>{fmt(on, digits)}</td>"
            f"<td>{ratio}</td></tr>")


def compare_section(runs, series, title):
    """The three-mode comparison (off, cassini, phasor) of `phasor simulate --compare`."""
    modes = runs["modes"]
    r = runs["runs"]
    labels = {"off": "plugin off", "cassini": "Cassini mode", "phasor": "phasor"}

    def line(label, get, digits=4):
        off = get(r["off"])
        cells = "".join(f"<td>{fmt(get(r[m]), digits)}</td>" for m in modes)
        gains = ""
        for m in modes[1:]:
            v = get(r[m])
            gains += f"<td>{off / v:.2f}x</td>" if v else ("<td>&infin;</td>" if off else "<td>-</td>")
        return f"<tr><td>{html.escape(label)}</td>{cells}{gains}</tr>"

    head = "".join(f"<th>{labels[m]}</th>" for m in modes) + "".join(
        f"<th>gain, {labels[m]}</th>" for m in modes[1:])
    table = "".join([
        line("job completion time, mean (s)", lambda x: x["jct_s"]["mean"]),
        line("job completion time, p99 (s)", lambda x: x["jct_s"]["p99"]),
        line("iteration slowdown, p99", lambda x: x["iteration_slowdown"]["p99"]),
        line("iteration slowdown, mean", lambda x: x["iteration_slowdown"]["mean"]),
        line("excess bytes (ECN-mark proxy)", lambda x: x["excess_bytes"]),
    ])
    c = r["off"]["cluster"]
    curves = [(labels[m], m, series[m]["slowdown_samples"]) for m in modes]
    return f"""<h1>{html.escape(title)}</h1>
<p class="note">{c["servers"]} servers / {c["gpus"]} GPUs, {c["links"]} directed links, scheduler
<b>{html.escape(r["off"]["scheduler"])}</b>-style, {r["off"]["jobs_completed"]} jobs. Three modes on the same
jobs: the host alone; <b>Cassini mode</b> (the paper's algorithm: candidates whose affinity graph has a
loop are discarded, candidates ranked by compatibility score, running jobs re-shifted, once mode, no
re-alignment); <b>phasor</b> (the defaults: loops solved, running jobs pinned, the ranking policy).
Gains are off / mode (&gt; 1 is better). Cassini mode discarded {r["cassini"]["discarded_loops"]} loop
candidates and shifted running jobs {r["cassini"]["running_shifts"]} times.</p>
<table><tr><th>metric</th>{head}</tr>{table}</table>
<div class="plots">{ccdf_plot([], [], curves)}</div>
"""


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("off")
    ap.add_argument("off_series")
    ap.add_argument("on")
    ap.add_argument("on_series")
    ap.add_argument("out")
    ap.add_argument("--title", default="phasor: trace replay with and without the plugin")
    ap.add_argument("--compare", nargs=2, metavar=("COMPARE_JSON", "COMPARE_SERIES"))
    ap.add_argument("--compare-title", default="Three modes: plugin off, Cassini mode, phasor")
    a = ap.parse_args(argv)
    headline = ""
    if a.compare:
        headline = compare_section(json.load(open(a.compare[0])), json.load(open(a.compare[1])),
                                   a.compare_title)
    off, on = json.load(open(a.off)), json.load(open(a.on))
    off_s, on_s = json.load(open(a.off_series)), json.load(open(a.on_series))

    # The link congested longest in the baseline window, preferring links that also carry
    # traffic with the plugin on (so the two plots show the same jobs' bursts where possible).
    t0, t1 = off_s["window_us"]
    best, best_key = None, None
    for lid, info in off_s["links"].items():
        pts = info["load"]
        over = overload_time(pts, info["capacity_gbps"], t0, t1)
        both = lid in on_s["links"] and busy_time(on_s["links"][lid]["load"], t0, t1) > 0
        key = (over > 0 and both, over, busy_time(pts, t0, t1))
        if best_key is None or key > best_key:
            best, best_key = lid, key
    load_svgs = ""
    if best is not None:
        cap = off_s["links"][best]["capacity_gbps"]
        on_link = best
        if busy_time(on_s["links"].get(best, {"load": []})["load"], t0, t1) == 0 and on_s["links"]:
            # phasor placed the jobs elsewhere: show its busiest shared link instead.
            on_link = max(on_s["links"], key=lambda l: (
                max((p[2] for p in on_s["links"][l]["load"]), default=0) / on_s["links"][l]["capacity_gbps"],
                busy_time(on_s["links"][l]["load"], t0, t1)))
        on_info = on_s["links"].get(on_link, {"load": [], "capacity_gbps": cap})
        load_svgs = (load_plot(off_s["links"][best]["load"], cap, t0, t1,
                               f"{best}: without phasor", COLOURS["off"]) +
                     load_plot(on_info["load"], on_info["capacity_gbps"], t0, t1,
                               f"{on_link}: with phasor", COLOURS["on"]))
        over_off = overload_time(off_s["links"][best]["load"], cap, t0, t1)
        over_on = overload_time(on_info["load"], on_info["capacity_gbps"], t0, t1)
        moved = ("" if on_link == best else
                 f" With the plugin on, {html.escape(best)} carried nothing in this window (phasor chose "
                 f"another of the scheduler's candidate placements), so the right plot shows the link with "
                 f"the highest demand relative to capacity in that run, <b>{html.escape(on_link)}</b>.")
        load_note = (f"Left: link <b>{html.escape(best)}</b>, the one whose demand exceeded its capacity "
                     f"longest in the baseline over the recorded window of {fmt((t1 - t0) / 1e3)} ms "
                     f"starting at {fmt(t0 / 1e6)} s of simulated time ({fmt(over_off / 1e3)} ms over "
                     f"capacity). Right: {fmt(over_on / 1e3)} ms over capacity with phasor.{moved} Solid: "
                     f"what the link carried (max-min shares); dashed: what the jobs in their Up phase "
                     f"asked for at their NIC rates.")
    else:
        load_note = "No link carried traffic in the recorded window."

    cluster = off["cluster"]
    table = "".join([
        row("job completion time, mean (s)", off["jct_s"]["mean"], on["jct_s"]["mean"]),
        row("job completion time, p50 (s)", off["jct_s"]["p50"], on["jct_s"]["p50"]),
        row("job completion time, p99 (s)", off["jct_s"]["p99"], on["jct_s"]["p99"]),
        row("iteration slowdown, mean", off["iteration_slowdown"]["mean"], on["iteration_slowdown"]["mean"]),
        row("iteration slowdown, p99", off["iteration_slowdown"]["p99"], on["iteration_slowdown"]["p99"]),
        row("queueing, mean (s)", off["queueing_s"]["mean"], on["queueing_s"]["mean"]),
        row("excess bytes (ECN-mark proxy)", off["excess_bytes"], on["excess_bytes"]),
        row("jobs completed", off["jobs_completed"], on["jobs_completed"], better_low=False),
    ])
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(a.title)}</title>
<style>
body {{ font-family: sans-serif; margin: 24px auto; max-width: 1340px; color: #222; }}
table {{ border-collapse: collapse; margin: 12px 0; }}
td, th {{ border: 1px solid #ccc; padding: 4px 10px; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
th {{ background: #f3f3f3; }}
.plots {{ display: flex; flex-wrap: wrap; gap: 16px; }}
.note {{ color: #555; max-width: 1300px; }}
</style></head><body>
{headline}
<h1>{html.escape(a.title)}</h1>
<p class="note">Scheduler <b>{html.escape(off["scheduler"])}</b>-style, enforcement mode <b>{html.escape(on["mode"])}</b>,
{cluster["servers"]} servers / {cluster["gpus"]} GPUs, {cluster["links"]} directed links.
Fluid max-min simulation (docs/simulator.md); job models from measured Pollux step and sync times.
"Slowdown" is an iteration's time over the same job's isolated iteration time; excess bytes are the
bytes links carried while demand exceeded capacity.</p>
<table><tr><th>metric</th><th>plugin off</th><th>plugin on</th><th>improvement</th></tr>{table}</table>
<h2>Iteration times</h2>
<div class="plots">{ccdf_plot(off_s["slowdown_samples"], on_s["slowdown_samples"])}</div>
<h2>Load on the most contended link, before and after shifting</h2>
<p class="note">{load_note}</p>
<div class="plots">{load_svgs}</div>
</body></html>
"""
    with open(a.out, "w") as f:
        f.write(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
