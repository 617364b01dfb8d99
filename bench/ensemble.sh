#!/usr/bin/env bash
# Paired ensembles of replays with 95 % intervals: for each host and mode, the
# same jobs on the same fabric, every seed and REPLICATES copies of it with run
# times jittered (--duration-jitter JITTER), then sum(mode) / sum(off) over all
# worlds with a 95 % bootstrap interval (5,000 resamples, seeded), per metric:
# mean and p99 JCT, p99 iteration slowdown, excess bytes; and the share of the
# network's whole cost that the mode recovers, (JCT off - JCT mode) /
# (JCT off - JCT nb), nb the same jobs and host on a non-blocking fabric (1:1).
#
# usage: bench/ensemble.sh [BUILD_DIR] [FIRST_SEED] [LAST_SEED]
# environment:
#   WORKLOAD=cassini|trace|itp   cassini (default): the generated Cassini-shaped
#                                workload (--workload cassini, JOBS_PER_RUN jobs at LOAD)
#                                on FABRIC; trace: TRACE (a trace file) on FABRIC;
#                                itp: data/traces/itp2021/cluster$ITP.csv.gz
#   HOSTS="kube slurm-tree volcano themis pollux"
#   MODES="off cassini phasor shifts ring own"   off is always run; nb too (the reference)
#       phasor   the defaults (ring order, own candidates, shifts, the policy)
#       cassini  --plugin cassini (the paper's algorithm)
#       shifts   shifts alone: --ring-order host --own-candidates 0 --less-at-risk off
#       ring     ring order alone: --own-candidates 0 --shifts off --less-at-risk off
#       own      own candidates alone: --ring-order host --shifts off
#   FABRIC (cassini: leaf-spine:24:4:4:1; trace, itp: leaf-spine:24:2:8)
#   NB_FABRIC  the non-blocking reference (default: FABRIC with oversubscription 1)
#   JOBS_PER_RUN=40 LOAD=0.9 MEDIAN=600   (cassini) jobs, offered load, median run time (s)
#   TRACE=data/traces/pollux_workload-1.csv ITP=01 HOURS=0 MAX_JOBS=0 MIN_GPUS=0 ARRIVAL_SCALE=1
#   DURATION_SCALE=1   (trace, itp)
#   REPLICATES=2 JITTER=0.01   jittered copies per seed
#   JOBS=2                      replays run at once
#   OUT=DIR                     keep every replay's JSON there (default: a temp dir)
#   EXTRA="..."                 more `phasor simulate` flags for every run
# Prints one markdown table per host; the command and its environment head the output.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"; first="${2:-1}"; last="${3:-5}"
workload="${WORKLOAD:-cassini}"
hosts="${HOSTS:-kube slurm-tree volcano themis pollux}"
modes="${MODES:-off cassini phasor shifts ring own}"
# off is always run (every ratio is over it), whether MODES names it or not.
case " $modes " in *" off "*) ;; *) modes="off $modes" ;; esac
reps="${REPLICATES:-2}"; jitter="${JITTER:-0.01}"
case "$workload" in
  cassini) fabric="${FABRIC:-leaf-spine:24:4:4:1}"
           base=(--workload cassini --jobs "${JOBS_PER_RUN:-40}" --load "${LOAD:-0.9}"
                 --median-duration "${MEDIAN:-600}") ;;
  trace) fabric="${FABRIC:-leaf-spine:24:2:8}"
         base=(--trace "${TRACE:-data/traces/pollux_workload-1.csv}" --median-duration "${MEDIAN:-1800}") ;;
  itp) fabric="${FABRIC:-leaf-spine:24:2:8}"
       base=(--trace "data/traces/itp2021/cluster${ITP:-01}.csv.gz") ;;
  *) echo "ensemble: WORKLOAD must be cassini, trace or itp, got '$workload'" >&2; exit 2 ;;
esac
if [ "$workload" != cassini ]; then
  base+=(--hours "${HOURS:-0}" --max-jobs "${MAX_JOBS:-0}" --min-gpus "${MIN_GPUS:-0}"
         --arrival-scale "${ARRIVAL_SCALE:-1}" --duration-scale "${DURATION_SCALE:-1}")
fi
# The non-blocking reference: the same fabric with oversubscription 1.
if [ -n "${NB_FABRIC:-}" ]; then
  nb_fabric="$NB_FABRIC"
else
  IFS=: read -r kind n _over rest <<<"$fabric"
  nb_fabric="$kind:$n:1${rest:+:$rest}"
fi
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
[ -z "${OUT:-}" ] && trap 'rm -rf "$out"' EXIT
echo "# bench/ensemble.sh $build $first $last   WORKLOAD=$workload HOSTS=\"$hosts\" MODES=\"$modes\" FABRIC=$fabric NB_FABRIC=$nb_fabric REPLICATES=$reps JITTER=$jitter ${EXTRA:+EXTRA=\"$EXTRA\"}"

mode_flags() {
  case "$1" in
    off) echo "--plugin off" ;;
    nb) echo "--plugin off" ;;
    cassini) echo "--plugin cassini" ;;
    phasor) echo "--plugin on" ;;
    shifts) echo "--plugin on --ring-order host --own-candidates 0 --less-at-risk off" ;;
    ring) echo "--plugin on --own-candidates 0 --shifts off --less-at-risk off" ;;
    own) echo "--plugin on --ring-order host --shifts off" ;;
    *) echo "ensemble: unknown mode '$1'" >&2; exit 2 ;;
  esac
}
runs="$out/runs.txt"
: > "$runs"
for host in $hosts; do
  for seed in $(seq "$first" "$last"); do
    for r in $(seq 0 "$reps"); do
      copy=()
      [ "$r" -gt 0 ] && copy=(--duration-jitter "$jitter" --jitter-seed $(( seed * 1000 + r )))
      for mode in nb $modes; do
        f="$out/${host}_${seed}_${r}_${mode}.json"
        [ -s "$f" ] && continue
        fab="$fabric"; [ "$mode" = nb ] && fab="$nb_fabric"
        # (no trailing blank: xargs -L would join the next line to it)
        echo "$f --scheduler $host --seed $seed --fabric $fab $(mode_flags "$mode")${copy[*]:+ ${copy[*]}}" >> "$runs"
      done
    done
  done
done
total=$(wc -l < "$runs")
echo "ensemble: $total replays to run in $out" >&2
export build
# shellcheck disable=SC2016
xargs -P "${JOBS:-2}" -L 1 bash -c 'f="$0"
  "$build/cmd/phasor" simulate --top-k 4 --no-progress '"${base[*]} ${EXTRA:-}"' "$@" > "$f.tmp" && mv "$f.tmp" "$f"' < "$runs"

python3 - "$out" "$first" "$last" "$reps" "$hosts" "$modes" <<'PY'
import json, random, sys
d, first, last, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
hosts, modes = sys.argv[5].split(), [m for m in sys.argv[6].split() if m != "off"]
metrics = [("mean JCT", lambda r: r["jct_s"]["mean"]), ("p99 JCT", lambda r: r["jct_s"]["p99"]),
           ("p99 slowdown", lambda r: r["iteration_slowdown"]["p99"]), ("excess bytes", lambda r: r["excess_bytes"])]
rng = random.Random(1)
def boot(worlds, f):
    # Resamples whose statistic is undefined (a zero denominator) are left out.
    v = sorted(x for x in (f([rng.choice(worlds) for _ in worlds]) for _ in range(5000)) if x == x)
    if len(v) < 250:
        return float("nan"), float("nan")
    return v[len(v) * 25 // 1000], v[-(len(v) * 25 // 1000) - 1]
for host in hosts:
    worlds = []
    for s in range(first, last + 1):
        for r in range(0, reps + 1):
            w = {m: json.load(open(f"{d}/{host}_{s}_{r}_{m}.json")) for m in ["off", "nb"] + modes}
            worlds.append(w)
    mean = lambda ws, m: sum(w[m]["jct_s"]["mean"] for w in ws)
    off, nb = mean(worlds, "off"), mean(worlds, "nb")
    print(f"\n## {host}: {len(worlds)} worlds; mode / off, < 1 is better [95 % interval]; "
          f"the network costs {off / nb:.3f}x mean JCT (off on this fabric / off on a non-blocking one)")
    print("| metric | " + " | ".join(modes) + " |")
    print("| --- | " + " | ".join("---" for _ in modes) + " |")
    for name, get in metrics:
        cells = []
        if sum(get(w["off"]) for w in worlds) == 0:  # e.g. no excess bytes without phasor either
            cells = [f"n/a (off: 0; {m}: {sum(get(w[m]) for w in worlds):.3g})" for m in modes]
            print(f"| {name} | " + " | ".join(cells) + " |")
            continue
        for m in modes:
            def ratio(ws, m=m, get=get):
                den = sum(get(w["off"]) for w in ws)
                return sum(get(w[m]) for w in ws) / den if den else float("nan")
            lo, hi = boot(worlds, ratio)
            cells.append(f"{ratio(worlds):.3f} [{lo:.3f}..{hi:.3f}]")
        print(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for m in modes:
        if off < 1.01 * nb:  # the network costs under 1 %: nothing to recover, no share to report
            cells.append("n/a (network costs < 1 %)")
            continue
        def recovered(ws, m=m):
            o, n = mean(ws, "off"), mean(ws, "nb")
            return (o - mean(ws, m)) / (o - n) if o > n else float("nan")
        lo, hi = boot(worlds, recovered)
        cells.append(f"{recovered(worlds):.0%} [{lo:.0%}..{hi:.0%}]")
    print("| network cost recovered | " + " | ".join(cells) + " |")
    per_seed = []
    for s in range(first, last + 1):
        ws = worlds[(s - first) * (reps + 1):(s - first + 1) * (reps + 1)]
        per_seed.append(f"{s}: {mean(ws, 'phasor') / mean(ws, 'off'):.3f}" if "phasor" in modes else "")
    if "phasor" in modes:
        print("\nphasor / off mean JCT per seed: " + ", ".join(per_seed))
PY
