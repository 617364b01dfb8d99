#!/usr/bin/env bash
# Issue 13's acceptance sweep: the demo's trace replay (data/traces/pollux_workload-1.csv,
# Themis-style, leaf-spine:24:2:8, median job 30 min, top-4) over seeds. Runs per seed:
#   off     the host alone;
#   random  noise control 1: off, but each multi-server job starts after a seeded random
#           delay under its period (phasor's slots delay starts as much; in a non-preemptive
#           schedule any such delay reorders later rounds);
#   jitter  noise control 2: off, with every job's run time multiplied by a seeded factor in
#           [1-F, 1+F] (--duration-jitter F), for each F of JITTERS: what the host's schedule
#           does when completions move by a few per cent, as they do whenever a plugin speeds
#           up or slows down any job (real run times are never known that well);
#   on      phasor in the given mode.
# Prints per seed the ratios to off of mean and p99 JCT and the excess-bytes factor.
# REPLICATES=R (default 1): each control runs R times per seed with different seeds
# (--random-seed / --jitter-seed; the first replicate of `random` is the classic one, delays
# from --seed) and the table shows the largest ratio of the R draws: the noise bound is a
# distribution, not one draw; the last lines give the bound over all seeds and draws.
# JITTERS="0.005 0.01" (default; "" for none). PAIRED=1 also runs `on` with each jitter draw and
# prints on/off on the same jittered jobs: the plugin's effect over R perturbed copies of each
# seed instead of one, and a summary over all paired worlds. JOBS=N runs N replays at once
# (default 1). KEEP=DIR keeps every replay's JSON there. With PAIRED=1 the last lines are the
# ensemble: sum(on) / sum(off) of mean JCT, p99 JCT and excess bytes over every paired world, with
# a 95 % bootstrap interval (the acceptance's noise bound: an interval holding 1 is no measurable
# effect).
# usage: bench/sim_seeds.sh [BUILD_DIR] [MODE once|pace] [FIRST_SEED] [LAST_SEED] [EXTRA ARGS FOR on...]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"; mode="${2:-once}"; first="${3:-1}"; last="${4:-10}"
shift $(( $# < 4 ? $# : 4 ))
reps="${REPLICATES:-1}"; jitters="${JITTERS-0.005 0.01}"; paired="${PAIRED:-0}"
out="${KEEP:-$(mktemp -d)}"
mkdir -p "$out"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$out"' EXIT
common=(--trace data/traces/pollux_workload-1.csv --scheduler themis --fabric leaf-spine:24:2:8
        --median-duration 1800 --top-k 4 --no-progress)
on_args=(--plugin on --mode "$mode" "$@")
# One line per replay: output file, then the arguments after the common ones.
runs="$out/runs"
: > "$runs"
for seed in $(seq "$first" "$last"); do
  echo "off_$seed.json --seed $seed --plugin off" >> "$runs"
  echo "on_$seed.json --seed $seed ${on_args[*]}" >> "$runs"
  for r in $(seq 1 "$reps"); do
    rs=0; [ "$r" -gt 1 ] && rs=$(( seed * 1000 + r ))
    echo "random_${seed}_$r.json --seed $seed --plugin random --random-seed $rs" >> "$runs"
    for f in $jitters; do
      js=$(( seed * 1000 + r ))
      echo "jitter_${f}_${seed}_$r.json --seed $seed --plugin off --duration-jitter $f --jitter-seed $js" >> "$runs"
      if [ "$paired" = 1 ]; then
        echo "onjitter_${f}_${seed}_$r.json --seed $seed ${on_args[*]} --duration-jitter $f --jitter-seed $js" >> "$runs"
      fi
    done
  done
done
export build out
# shellcheck disable=SC2016
xargs -P "${JOBS:-1}" -L 1 bash -c 'f="$0"
  "$build/cmd/phasor" simulate '"${common[*]}"' "$@" > "$out/$f"' < "$runs"
python3 - "$out" "$first" "$last" "$reps" "$paired" $jitters <<'PY'
import json, sys
d, first, last, reps, paired = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
jitters = sys.argv[6:]
load = lambda name: json.load(open(f"{d}/{name}.json"))
ratio = lambda x, base, k: x["jct_s"][k] / base["jct_s"][k]
def excess(x, base):
    if base["excess_bytes"]:
        return x["excess_bytes"] / base["excess_bytes"]
    return 1.0 if not x["excess_bytes"] else float("inf")
controls = [("random", lambda s, r: f"random_{s}_{r}")] + [(f"jitter {f}", lambda s, r, f=f: f"jitter_{f}_{s}_{r}") for f in jitters]
head = f"{'seed':>4} | " + " | ".join(f"{c + ': mean':>18} {'p99':>6} {'excess':>6}" for c, _ in controls)
print(head + f" | {'on: mean':>8} {'p99':>6} {'excess':>6} | slowdown p99 off, on | overtaken")
print(f"{'':>4}   (controls / off: the largest of {reps} draw(s) per seed; on / off)")
bound = {c: {"mean": [], "p99": [], "excess": []} for c, _ in controls}
on_all = {"mean": [], "p99": [], "excess": []}
for s in range(first, last + 1):
    off, on = load(f"off_{s}"), load(f"on_{s}")
    cells = []
    for c, name in controls:
        draws = [load(name(s, r)) for r in range(1, reps + 1)]
        for x in draws:
            bound[c]["mean"].append(ratio(x, off, "mean"))
            bound[c]["p99"].append(ratio(x, off, "p99"))
            bound[c]["excess"].append(excess(x, off))
        m, p, e = (max(f(x) for x in draws) for f in (lambda x: ratio(x, off, "mean"), lambda x: ratio(x, off, "p99"), lambda x: excess(x, off)))
        cells.append(f"{m:>18.4f} {p:>6.4f} {e:>6.2f}")
    om, op, oe = ratio(on, off, "mean"), ratio(on, off, "p99"), excess(on, off)
    on_all["mean"].append(om); on_all["p99"].append(op); on_all["excess"].append(oe)
    print(f"{s:>4} | " + " | ".join(cells) + f" | {om:>8.4f} {op:>6.4f} {oe:>6.2f} | "
          f"{off['iteration_slowdown']['p99']:.3f}, {on['iteration_slowdown']['p99']:.3f} | {on['overtaken_rounds']}")
print("noise bound over all seeds and draws (ratio to off: min .. max):")
for c, _ in controls:
    b = bound[c]
    print(f"  {c:<13} mean {min(b['mean']):.4f} .. {max(b['mean']):.4f}   p99 {min(b['p99']):.4f} .. {max(b['p99']):.4f}"
          f"   excess {min(b['excess']):.2f} .. {max(b['excess']):.2f}")
print(f"  {'on':<13} mean {min(on_all['mean']):.4f} .. {max(on_all['mean']):.4f}   p99 {min(on_all['p99']):.4f} .. {max(on_all['p99']):.4f}"
      f"   excess {min(on_all['excess']):.2f} .. {max(on_all['excess']):.2f}")
if paired:
    print("paired: on / off on the same jittered jobs (min .. max over the draws)")
    print(f"{'seed':>4} | " + " | ".join(f"{'jitter ' + f + ': mean':>22} {'p99':>13} {'excess':>11}" for f in jitters))
    for s in range(first, last + 1):
        cells = []
        for f in jitters:
            pairs = [(load(f"onjitter_{f}_{s}_{r}"), load(f"jitter_{f}_{s}_{r}")) for r in range(1, reps + 1)]
            ms = [ratio(a, b, "mean") for a, b in pairs]
            ps = [ratio(a, b, "p99") for a, b in pairs]
            es = [excess(a, b) for a, b in pairs]
            cells.append(f"{min(ms):>11.3f}..{max(ms):<.3f} {min(ps):>6.3f}..{max(ps):<.3f} {min(es):>5.2f}..{max(es):<.2f}")
        print(f"{s:>4} | " + " | ".join(cells))
    # Every paired world: the unjittered run and each jittered draw, all seeds.
    import math
    worlds = [(load(f"on_{s}"), load(f"off_{s}")) for s in range(first, last + 1)]
    worlds += [(load(f"onjitter_{f}_{s}_{r}"), load(f"jitter_{f}_{s}_{r}"))
               for f in jitters for s in range(first, last + 1) for r in range(1, reps + 1)]
    print(f"all {len(worlds)} paired worlds, on / off: geometric mean, max, worlds worse by > 2 %")
    for name, get in (("JCT mean", lambda a, b: ratio(a, b, "mean")), ("JCT p99", lambda a, b: ratio(a, b, "p99")),
                      ("excess", excess)):
        v = [get(a, b) for a, b in worlds]
        fin = [x for x in v if 0 < x < float("inf")]
        g = math.exp(sum(math.log(x) for x in fin) / len(fin)) if fin else float("nan")
        print(f"  {name:<9} {g:.4f}  max {max(v):.4f}  worse {sum(x > 1.02 for x in v)}/{len(v)}")
    # The plugin's effect over the whole ensemble: sum(on) / sum(off) of each metric, with a 95 %
    # bootstrap interval (5,000 resamples of the paired worlds, seeded): an interval that holds 1
    # is no measurable effect either way.
    import random
    rng = random.Random(1)
    metrics = (("JCT mean", lambda x: x["jct_s"]["mean"]), ("JCT p99", lambda x: x["jct_s"]["p99"]),
               ("excess", lambda x: x["excess_bytes"]))
    print(f"ensemble, sum(on) / sum(off) over the {len(worlds)} paired worlds [95 % bootstrap interval]")
    for name, get in metrics:
        pairs = [(get(a), get(b)) for a, b in worlds]
        total = lambda ps: sum(a for a, _ in ps) / sum(b for _, b in ps) if sum(b for _, b in ps) else float("nan")
        boot = sorted(total([rng.choice(pairs) for _ in pairs]) for _ in range(5000))
        print(f"  {name:<9} {total(pairs):.4f}  [{boot[124]:.4f} .. {boot[-125]:.4f}]")
PY
