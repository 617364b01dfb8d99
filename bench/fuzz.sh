#!/usr/bin/env bash
# Runs every libFuzzer target of the repository (every ctest test whose
# program ends in _fuzz: the probe's, the placer's, the protocol's and the
# topology's) under ASan+UBSan for MINUTES in total, split evenly, and prints
# per target: executions, coverage (edges), features, crashes.
#
#   bench/fuzz.sh MINUTES [BUILD_DIR]     (default build/)
#
# Each target starts from its ctest seed corpora and a scratch corpus in
# BUILD_DIR/fuzz-out/<target>/corpus (kept between runs, so coverage grows);
# a crash's input goes to BUILD_DIR/fuzz-out/<target>/ and the target starts
# again for the rest of its time. Exits 1 when any target crashed.
set -euo pipefail

minutes=${1:?usage: bench/fuzz.sh MINUTES [BUILD_DIR]}
build=${2:-build}
[[ "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "fuzz.sh: MINUTES must be a number, got '$minutes'" >&2; exit 2; }
[[ -d "$build" ]] || { echo "fuzz.sh: no build directory '$build' (run make build first)" >&2; exit 2; }
build=$(cd "$build" && pwd)

# Build the fuzzers (they are ALL targets; build only them).
targets=$(cmake --build "$build" --target help | sed -n 's/^\([a-z_]*_fuzzers\?\)[: ].*/\1/p' | sort -u)
[[ -n "$targets" ]] || { echo "fuzz.sh: no fuzz targets (is clang++ installed?)" >&2; exit 2; }
# shellcheck disable=SC2086
cmake --build "$build" --target $targets >/dev/null

# name <TAB> program <TAB> args (seed dirs, -max_len) from ctest.
list=$(cd "$build" && ctest --show-only=json-v1 | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tests"]:
    cmd = t.get("command") or []
    if not cmd or not cmd[0].endswith("_fuzz"):
        continue
    keep = [a for a in cmd[1:] if not a.startswith(("-runs=", "-max_total_time=", "-seed="))]
    print("\t".join([t["name"], cmd[0], " ".join(keep)]))
')
count=$(grep -c . <<<"$list")
seconds=$(python3 -c "print(max(1, int($minutes * 60 / $count)))")
echo "fuzz.sh: $count targets, ${seconds}s each (ASan+UBSan)"

out="$build/fuzz-out"
total_crashes=0
report=()
while IFS=$'\t' read -r name program args; do
  dir="$out/$name"
  mkdir -p "$dir/corpus"
  # The first dir of the ctest arguments is the scratch corpus; ours replaces it.
  read -r -a argv <<<"$args"
  seeds=()
  for a in "${argv[@]:1}"; do seeds+=("$a"); done
  execs=0 crashes=0 cov=0 ft=0
  deadline=$((SECONDS + seconds))
  while ((SECONDS < deadline)); do
    left=$((deadline - SECONDS))
    log="$dir/run.log"
    set +e
    "$program" -max_total_time="$left" -print_final_stats=1 -artifact_prefix="$dir/" -timeout=25 \
      -rss_limit_mb=4096 "$dir/corpus" "${seeds[@]}" >"$log" 2>&1
    rc=$?
    set -e
    e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    execs=$((execs + ${e:-0}))
    c=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
    f=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
    ((${c:-0} > cov)) && cov=$c
    ((${f:-0} > ft)) && ft=$f
    if ((rc != 0)); then
      crashes=$((crashes + 1))
      cp "$log" "$dir/crash-$crashes.log"
      echo "fuzz.sh: $name crashed (exit $rc): $(grep -m1 -E '^==[0-9]+== ?ERROR|runtime error|^SUMMARY' "$log" || true)"
      echo "         input: $(grep -o "Test unit written to .*" "$log" | tail -1 | sed 's/Test unit written to //')"
    else
      break
    fi
  done
  total_crashes=$((total_crashes + crashes))
  report+=("$(printf '%-28s %12s %8s %8s %8s' "$name" "$execs" "$cov" "$ft" "$crashes")")
done <<<"$list"

printf '%-28s %12s %8s %8s %8s\n' target executions cov ft crashes
printf '%s\n' "${report[@]}"
((total_crashes == 0))
