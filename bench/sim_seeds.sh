#!/usr/bin/env bash
# Issue 13's acceptance sweep: the demo's trace replay (data/traces/pollux_workload-1.csv,
# Themis-style, leaf-spine:24:2:8, median job 30 min, top-4) over seeds, plugin off vs on,
# in the given mode. Prints per seed the on/off ratios of mean and p99 JCT and excess bytes.
# usage: bench/sim_seeds.sh [BUILD_DIR] [MODE once|pace] [FIRST_SEED] [LAST_SEED] [EXTRA ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"; mode="${2:-once}"; first="${3:-1}"; last="${4:-10}"
shift $(( $# < 4 ? $# : 4 ))
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
common=(--trace data/traces/pollux_workload-1.csv --scheduler themis --fabric leaf-spine:24:2:8
        --median-duration 1800 --top-k 4 --no-progress)
for seed in $(seq "$first" "$last"); do
  "$build/cmd/phasor" simulate "${common[@]}" --seed "$seed" --plugin off "$@" > "$out/off_$seed.json"
  "$build/cmd/phasor" simulate "${common[@]}" --seed "$seed" --plugin on --mode "$mode" "$@" > "$out/on_$seed.json"
done
python3 - "$out" "$first" "$last" <<'PY'
import json, sys
d, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print(f"{'seed':>4} {'JCT mean on/off':>16} {'JCT p99 on/off':>15} {'slowdown p99 off->on':>22} {'excess off/on':>14}")
worst_mean = worst_p99 = 0
for s in range(first, last + 1):
    off = json.load(open(f"{d}/off_{s}.json")); on = json.load(open(f"{d}/on_{s}.json"))
    m = on["jct_s"]["mean"] / off["jct_s"]["mean"]; p = on["jct_s"]["p99"] / off["jct_s"]["p99"]
    worst_mean, worst_p99 = max(worst_mean, m), max(worst_p99, p)
    ex = off["excess_bytes"] / on["excess_bytes"] if on["excess_bytes"] else float("inf")
    print(f"{s:>4} {m:>16.4f} {p:>15.4f} {off['iteration_slowdown']['p99']:>10.3f} -> {on['iteration_slowdown']['p99']:<9.3f} {ex:>14.2f}")
print(f"worst on/off: mean {worst_mean:.4f}, p99 {worst_p99:.4f}")
PY
