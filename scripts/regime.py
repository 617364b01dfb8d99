#!/usr/bin/env python3
"""The regime of a run: on its bottleneck link (the one with the most demand
above capacity over the recorded window of `phasor simulate --series`), the
jobs' mean demand over the link's capacity (for square-wave jobs, the sum of
their duty cycles times their share of the link). At most 1, time shifts can
interleave the bursts; above 1 the link is overloaded on average and no shift
helps: only which placement runs does.

usage: scripts/regime.py SERIES.json [MODE]   (MODE: a key of a --compare series, e.g. off)
Prints one line; exits 2 naming the problem when the file is not a series.
"""
import json
import sys


def regime(series):
    best = None
    for link, s in series.get("links", {}).items():
        cap = s.get("capacity_gbps", 0)
        pts = s.get("load", [])
        if cap <= 0 or len(pts) < 2:
            continue
        span = pts[-1][0] - pts[0][0]
        if span <= 0:
            continue
        demand = over = 0.0
        for (t0, _, d), (t1, _, _) in zip(pts, pts[1:]):
            demand += d * (t1 - t0)
            over += max(0.0, d - cap) * (t1 - t0)
        key = (over, demand / cap)
        if best is None or key > best[0]:
            best = (key, link, demand / span / cap)
    return best


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        with open(sys.argv[1]) as f:
            series = json.load(f)
    except (OSError, ValueError) as e:
        print(f"regime: {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(2)
    if len(sys.argv) == 3:
        if sys.argv[2] not in series:
            print(f"regime: {sys.argv[1]}: no mode '{sys.argv[2]}' (has {', '.join(series)})", file=sys.stderr)
            sys.exit(2)
        series = series[sys.argv[2]]
    if not isinstance(series, dict) or "links" not in series:
        print(f"regime: {sys.argv[1]}: not a series of `phasor simulate --series` (no 'links')", file=sys.stderr)
        sys.exit(2)
    found = regime(series)
    if found is None:
        print("regime: no loaded link in the recorded window")
        return
    _, link, ratio = found
    if ratio > 1:
        print(f"regime: bottleneck {link}: mean demand {ratio:.2f}x its capacity: overloaded on average; "
              f"no time shift can help there, only the placement that runs")
    else:
        print(f"regime: bottleneck {link}: mean demand {ratio:.2f}x its capacity (duty cycles sum to at most 1): "
              f"time shifts can interleave the bursts")


if __name__ == "__main__":
    main()
