#!/usr/bin/env bash
# Where the plugin pays (issue 13, section 4): replays of the ITP-2021 trace
# (data/traces/itp2021/cluster02.csv.gz, the first 120 jobs) and the Philly-derived Pollux
# workload (data/traces/pollux_workload-1.csv, the first 100 jobs), three modes per point
# (`phasor simulate --compare`: off, cassini, phasor), Themis-style, on a 24-server leaf-spine
# (8 servers of 4 GPUs per leaf, 2 spines), varying one factor at a time around a base point
# (load x4, 2:1, all jobs), plus the trace's own rate and the heaviest corner:
#   load   arrival-rate scale x1 (the trace's own), x4 (base), x16
#   oversub  uplinks 1:1, 2:1 (base), 4:1
#   mix    all jobs (base), or multi-GPU jobs only (--min-gpus 2)
# ITP jobs run for hours: the ITP replay is compressed in time 50x (--duration-scale 0.02
# --arrival-scale 50 x load), which keeps its load and makes each point a few seconds.
# Prints one row per point: gains over off (off / mode, > 1 is better) and a verdict.
# usage: bench/where_it_pays.sh [BUILD_DIR] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"; seed="${2:-1}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
points=("load=1 oversub=2 mix=all" "load=4 oversub=2 mix=all" "load=16 oversub=2 mix=all"
        "load=4 oversub=1 mix=all" "load=4 oversub=4 mix=all" "load=4 oversub=2 mix=multi"
        "load=16 oversub=4 mix=multi")
run() {  # trace-name point...
  local name="$1" load oversub mix; shift
  eval "$*"
  local args=(--scheduler themis --fabric "leaf-spine:24:$oversub:8" --top-k 4 --seed "$seed"
              --compare --no-progress)
  [ "$mix" = multi ] && args+=(--min-gpus 2)
  case "$name" in
    itp) args+=(--trace data/traces/itp2021/cluster02.csv.gz --max-jobs 120 --duration-scale 0.02
                --arrival-scale "$(( 50 * load ))") ;;
    philly) args+=(--trace data/traces/pollux_workload-1.csv --max-jobs 100 --median-duration 600
                   --arrival-scale "$load") ;;
  esac
  "$build/cmd/phasor" simulate "${args[@]}" > "$out/${name}_${load}_${oversub}_${mix}.json"
}
start=$(date +%s)
for name in itp philly; do
  for p in "${points[@]}"; do run "$name" "$p"; done
done
echo "wall $(( $(date +%s) - start )) s for $(( 2 * ${#points[@]} )) points x 3 modes; $(uptime)"
python3 - "$out" "${points[@]}" <<'PY'
import json, math, sys
d, points = sys.argv[1], sys.argv[2:]
def gain(off, x):
    return off / x if x else (math.inf if off else 1.0)
print("| trace | load | oversub | mix | networked jobs | off slowdown p99 | phasor: JCT mean | p99 | slowdown p99 | excess | cassini: JCT mean | p99 | slowdown p99 | excess | verdict (phasor) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for name in ("itp", "philly"):
    for p in points:
        kv = dict(x.split("=") for x in p.split())
        runs = json.load(open(f"{d}/{name}_{kv['load']}_{kv['oversub']}_{kv['mix']}.json"))["runs"]
        off = runs["off"]
        g = {}
        for m in ("phasor", "cassini"):
            r = runs[m]
            g[m] = [gain(off["jct_s"]["mean"], r["jct_s"]["mean"]), gain(off["jct_s"]["p99"], r["jct_s"]["p99"]),
                    gain(off["iteration_slowdown"]["p99"], r["iteration_slowdown"]["p99"]),
                    gain(off["excess_bytes"], r["excess_bytes"])]
        jm, jp, sp, ex = g["phasor"]
        # Noise: JCT within 2 %, network figures within 10 % (docs/evaluation.md).
        if jm < 0.98 or jp < 0.98:
            verdict = "hurts"
        elif jm >= 1.02 or jp >= 1.02:
            verdict = "gains (JCT)"
        elif sp >= 1.1 or ex >= 1.1:
            verdict = "gains (network only)"
        elif sp <= 1 / 1.1 or ex <= 1 / 1.1:
            verdict = "network worse"
        else:
            verdict = "neutral"
        net = sum(1 for j in off["jobs"] if j["networked"])
        f = lambda v: "none left" if math.isinf(v) else f"{v:.3f}"
        print(f"| {name} | x{kv['load']} | {kv['oversub']}:1 | {kv['mix']} | {net}/{len(off['jobs'])} | "
              f"{off['iteration_slowdown']['p99']:.3f} | " + " | ".join(f(v) for v in g["phasor"]) + " | " +
              " | ".join(f(v) for v in g["cassini"]) + f" | {verdict} |")
PY
