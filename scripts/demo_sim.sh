#!/usr/bin/env bash
# The simulator demo: a 24-server leaf-spine cluster (3 leaves of 8 servers, 4 GPUs
# and a 50 Gbit/s NIC each, 2 spines, uplinks oversubscribed 2:1) replays a
# Philly-derived workload (data/traces/pollux_workload-1.csv: 160 jobs with their
# models) through the Themis-style scheduler, with and without phasor, prints the
# comparison and writes an HTML report with plots.
#
# usage: scripts/demo_sim.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, demo-out)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-demo-out}"
phasor="$build/cmd/phasor"
if [ ! -x "$phasor" ]; then
  echo "demo_sim: $phasor not found; build first (make build)" >&2
  exit 1
fi
mkdir -p "$out"
# Jobs run 30 minutes alone (median), which keeps the cluster busy enough for
# jobs to share links.
common=(--trace data/traces/pollux_workload-1.csv --scheduler themis --fabric leaf-spine:24:2:8
        --median-duration 1800 --top-k 4 --seed 1 --table)
for plugin in off on; do
  echo "== Themis-style, phasor plugin $plugin" >&2
  "$phasor" simulate "${common[@]}" --plugin "$plugin" --series "$out/series_$plugin.json" \
    > "$out/run_$plugin.json"
done
python3 scripts/sim_report.py "$out/run_off.json" "$out/series_off.json" \
  "$out/run_on.json" "$out/series_on.json" "$out/report.html" \
  --title "phasor demo: Themis-style scheduling on a 24-server leaf-spine, with and without phasor"
python3 - "$out/run_off.json" "$out/run_on.json" <<'PY'
import json, sys
off, on = (json.load(open(p)) for p in sys.argv[1:3])
def line(name, a, b):
    ratio = f"{a / b:.2f}x" if b else ("inf" if a else "-")
    print(f"  {name:<34} {a:>14.4g} {b:>14.4g} {ratio:>8}")
print(f"  {'':<34} {'plugin off':>14} {'plugin on':>14} {'gain':>8}")
line("JCT mean (s)", off["jct_s"]["mean"], on["jct_s"]["mean"])
line("JCT p99 (s)", off["jct_s"]["p99"], on["jct_s"]["p99"])
line("iteration slowdown mean", off["iteration_slowdown"]["mean"], on["iteration_slowdown"]["mean"])
line("iteration slowdown p99", off["iteration_slowdown"]["p99"], on["iteration_slowdown"]["p99"])
line("excess bytes (ECN proxy)", off["excess_bytes"], on["excess_bytes"])
PY
echo "report: $out/report.html" >&2
