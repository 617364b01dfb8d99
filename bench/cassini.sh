#!/usr/bin/env bash
# Cassini's experiment in the simulator, with the ablation (issue 13, section 3): the shape of
# the paper's testbed (24 servers, one GPU and one 50 Gbit/s NIC each) on a two-tier leaf-spine
# (6 leaves of 4 servers, 2 spines, uplinks 4:1 oversubscribed: one NIC's worth of uplink per
# rack, so any two jobs leaving the same rack contend; at 2:1 they never do), network-heavy data-parallel jobs
# (VGG-, ResNet-, BERT-, GPT-2-, DLRM-like; sim/poisson_workload.h) with Poisson arrivals at
# offered load 0.9; Themis- and Pollux-style hosts; three modes per run (`--compare`): off,
# cassini (the paper's algorithm) and phasor (the defaults).
# Prints per host and seed the gains over off (off / mode; > 1 is better) of mean and p99 JCT,
# p99 iteration slowdown and excess bytes, the spread over seeds, and every seed where the goal
# phasor >= cassini >= off fails.
# REPLICATES=R (default 0) also runs R copies of every (host, seed) with run times jittered
# (--duration-jitter JITTER, default 0.01, the three modes on the same jobs) and prints the
# ensemble: sum(mode) / sum(off) over all worlds with 95 % bootstrap intervals, and per seed.
# JOBS=N runs N replays at once (default 1).
# usage: bench/cassini.sh [BUILD_DIR] [FIRST_SEED] [LAST_SEED] [EXTRA ARGS...]
#   FABRIC=leaf-spine:24:2:4:1 bench/cassini.sh build 1 5   (another fabric)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"; first="${2:-1}"; last="${3:-5}"
shift $(( $# < 3 ? $# : 3 ))
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fabric="${FABRIC:-leaf-spine:24:4:4:1}"  # FABRIC=... overrides (e.g. leaf-spine:24:2:4:1)
common=(--workload cassini --fabric "$fabric" --jobs 40 --load 0.9 --median-duration 600
        --top-k 4 --compare --no-progress)
reps="${REPLICATES:-0}"; jitter="${JITTER:-0.01}"
runs="$out/runs"
: > "$runs"
for host in themis pollux; do
  for seed in $(seq "$first" "$last"); do
    echo "${host}_$seed.json --scheduler $host --seed $seed" >> "$runs"
    for r in $(seq 1 "$reps"); do
      echo "${host}_${seed}_$r.json --scheduler $host --seed $seed --duration-jitter $jitter --jitter-seed $(( seed * 1000 + r ))" >> "$runs"
    done
  done
done
export build out
# shellcheck disable=SC2016
xargs -P "${JOBS:-1}" -L 1 bash -c 'f="$0"
  "$build/cmd/phasor" simulate '"${common[*]}"' "$@" '"$*"' > "$out/$f"' < "$runs"
python3 - "$out" "$first" "$last" "$reps" <<'PY'
import json, math, statistics, sys
d, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
metrics = [("JCT mean", lambda r: r["jct_s"]["mean"]), ("JCT p99", lambda r: r["jct_s"]["p99"]),
           ("slowdown p99", lambda r: r["iteration_slowdown"]["p99"]),
           ("excess bytes", lambda r: r["excess_bytes"])]
def gain(off, x):
    return off / x if x else (math.inf if off else 1.0)
fails = []
worse = {"cassini < off": 0, "phasor < off": 0, "phasor < cassini": 0}
for host in ("themis", "pollux"):
    print(f"== {host}-style: gains over off (off / mode), cassini | phasor")
    print(f"{'seed':>4} | " + " | ".join(f"{m:>14} c / p" for m, _ in metrics) + " | loops discarded, running shifts")
    gains = {m: {"cassini": [], "phasor": []} for m, _ in metrics}
    for s in range(first, last + 1):
        runs = json.load(open(f"{d}/{host}_{s}.json"))["runs"]
        cells = []
        for name, get in metrics:
            off, c, p = (get(runs[k]) for k in ("off", "cassini", "phasor"))
            gc, gp = gain(off, c), gain(off, p)
            gains[name]["cassini"].append(gc)
            gains[name]["phasor"].append(gp)
            cells.append(f"{gc:>9.3f} / {gp:<7.3f}")
            # The goal: phasor >= cassini >= off (0.5 % slack for float noise on equal runs).
            if gc < 1 - 5e-3 or gp < gc * (1 - 5e-3):
                fails.append(f"{host} seed {s} {name}: off {off:.4g}, cassini {c:.4g}, phasor {p:.4g}")
            worse["cassini < off"] += gc < 1 - 5e-3
            worse["phasor < off"] += gp < 1 - 5e-3
            worse["phasor < cassini"] += gp < gc * (1 - 5e-3)
        print(f"{s:>4} | " + " | ".join(cells) +
              f" | {runs['cassini']['discarded_loops']}, {runs['cassini']['running_shifts']}")
    print(f"{'':>4}   mean (min..max) over seeds:")
    for name, _ in metrics:
        for mode in ("cassini", "phasor"):
            v = [x for x in gains[name][mode] if math.isfinite(x)]
            inf = len(gains[name][mode]) - len(v)
            extra = f", {inf} seeds with none left" if inf else ""
            if v:
                print(f"       {name:<13} {mode:<8} {statistics.mean(v):.3f}x ({min(v):.3f}..{max(v):.3f}){extra}")
            else:
                print(f"       {name:<13} {mode:<8} all seeds: none left")
print("goal phasor >= cassini >= off:", "met in every seed and metric" if not fails else f"{len(fails)} misses")
print("  (host, seed, metric) cells worse by > 0.5 %: " + ", ".join(f"{k}: {v}" for k, v in worse.items()))
for f in fails:
    print("  miss:", f)
reps = int(sys.argv[4])
if reps:
    # The ensemble: every seed's unjittered run and its jittered copies (the same jobs in the
    # three modes of one copy). sum(mode) / sum(off) per metric, > 1 worse (time, bytes), with
    # a 95 % bootstrap interval over the worlds (5,000 resamples, seeded), and per seed.
    import random
    rng = random.Random(1)
    cost = [("JCT mean", lambda r: r["jct_s"]["mean"]), ("JCT p99", lambda r: r["jct_s"]["p99"]),
            ("excess bytes", lambda r: r["excess_bytes"])]
    def ratio(worlds, num, den, get):
        d = sum(get(w[den]) for w in worlds)
        return sum(get(w[num]) for w in worlds) / d if d else float("nan")
    comparisons = (("cassini", "off"), ("phasor", "off"), ("phasor", "cassini"))
    for host in ("themis", "pollux"):
        worlds = {s: [json.load(open(f"{d}/{host}_{s}.json"))["runs"]] +
                     [json.load(open(f"{d}/{host}_{s}_{r}.json"))["runs"] for r in range(1, reps + 1)]
                  for s in range(first, last + 1)}
        flat = [w for s in worlds for w in worlds[s]]
        print(f"== {host}-style ensemble: {len(flat)} worlds (each seed and {reps} copies with run times "
              f"jittered); sum(mode) / sum(other), < 1 is better [95 % bootstrap interval]")
        for name, get in cost:
            cells = []
            for num, den in comparisons:
                boot = sorted(ratio([rng.choice(flat) for _ in flat], num, den, get) for _ in range(5000))
                cells.append(f"{num}/{den} {ratio(flat, num, den, get):.3f} [{boot[124]:.3f}..{boot[-125]:.3f}]")
            print(f"  {name:<13} " + "   ".join(cells))
        print(f"  per seed, phasor/off and cassini/off of mean JCT over its {reps + 1} worlds:")
        print("   " + "  ".join(f"{s}: {ratio(worlds[s], 'phasor', 'off', cost[0][1]):.3f}/"
                               f"{ratio(worlds[s], 'cassini', 'off', cost[0][1]):.3f}" for s in worlds))
PY
