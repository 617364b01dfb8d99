#!/usr/bin/env bash
# The simulator demo, in two parts, each labelled for what it is:
#  1. The headline, where the network matters: the shape of Cassini's testbed (24 servers
#     with one GPU and one 50 Gbit/s NIC each, 6 leaves of 4, 2 spines, uplinks 4:1), 40
#     network-heavy data-parallel jobs (VGG-, ResNet-, BERT-, GPT-2-, DLRM-like) with Poisson
#     arrivals, Themis-style, in three modes: plugin off, Cassini mode, phasor (one seed;
#     bench/cassini.sh runs the seed sweep).
#  2. A replay of a real-trace-derived workload, where the network matters little: a 24-server
#     leaf-spine (3 leaves of 8 servers, 4 GPUs each, 2 spines, 2:1) replays
#     data/traces/pollux_workload-1.csv (160 Philly-derived jobs with their models) through the
#     Themis-style scheduler, with and without phasor.
# Prints both comparisons and writes one HTML report with plots.
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
echo "== 1. Cassini-shaped scenario (generated network-heavy jobs on contended uplinks): off, cassini, phasor" >&2
"$phasor" simulate --workload cassini --fabric leaf-spine:24:4:4:1 --jobs 40 --load 0.9 \
  --median-duration 600 --scheduler themis --top-k 4 --seed 1 --compare --table --no-progress \
  --series "$out/series_compare.json" > "$out/run_compare.json"
python3 - "$out/run_compare.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["gain_over_off"]
for mode in ("cassini", "phasor"):
    m, p = g[mode]["jct_mean"], g[mode]["jct_p99"]
    if min(m, p) > 1.005:
        word = "faster than"
    elif max(m, p) < 0.995:
        word = "slower than"
    elif min(m, p) >= 0.995 and max(m, p) <= 1.005:
        word = "even with"
    else:
        word = "mixed against"
    print(f"  {mode}: {word} off on JCT (mean {m:.3f}x, p99 {p:.3f}x)", file=sys.stderr)
print("  (one seed; over seeds 1-10 and both hosts phasor's mean JCT is at least 0.998x of off's,\n"
      "   Cassini mode's is below it in 2 of 20 runs and above phasor's in 8: bench/cassini.sh; docs/simulator.md\n"
      "   \"Cassini's experiment\" explains why: overloaded shared links, which candidate runs;\n"
      "   averaged over jittered copies of each seed, phasor's mean JCT is 1.4 % below off's and\n"
      "   level with Cassini mode's: REPLICATES=5 bench/cassini.sh)",
      file=sys.stderr)
PY
echo >&2
echo "== 2. Trace replay (Philly-derived workload, mostly single-GPU jobs: the network matters little)" >&2
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
  --title "2. Trace replay: Themis-style scheduling of a Philly-derived workload on a 24-server leaf-spine, with and without phasor" \
  --compare "$out/run_compare.json" "$out/series_compare.json" \
  --compare-title "1. Cassini-shaped scenario: 24 one-GPU servers, network-heavy jobs, three modes"
python3 - "$out/run_off.json" "$out/run_on.json" <<'PY'
import json, sys
off, on = (json.load(open(p)) for p in sys.argv[1:3])
def line(name, a, b):
    ratio = f"{a / b:.2f}x" if b else ("inf" if a else "-")
    print(f"  {name:<34} {a:>14.4g} {b:>14.4g} {ratio:>8}")
print("== 2. Trace replay, summary")
print(f"  {'':<34} {'plugin off':>14} {'plugin on':>14} {'gain':>8}")
line("JCT mean (s)", off["jct_s"]["mean"], on["jct_s"]["mean"])
line("JCT p99 (s)", off["jct_s"]["p99"], on["jct_s"]["p99"])
line("iteration slowdown mean", off["iteration_slowdown"]["mean"], on["iteration_slowdown"]["mean"])
line("iteration slowdown p99", off["iteration_slowdown"]["p99"], on["iteration_slowdown"]["p99"])
line("excess bytes (ECN proxy)", off["excess_bytes"], on["excess_bytes"])
PY
echo "report: $out/report.html" >&2
