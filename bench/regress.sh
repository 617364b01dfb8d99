#!/usr/bin/env bash
# Benchmarks of two versions side by side, in one session: the placer's, the
# simulator's and phasord's Google Benchmark programs, each version built
# Release in its own build directory, run alternately (base, head, base, ...)
# so that both see the same machine. Prints each benchmark's median time for
# both with the ratio head / base, checks that the ranking path's replies are
# the same (bench/rank_digest, where both versions have it), and exits 1 when
# a ratio passes THRESHOLD or the replies differ. Run it before a change to
# placer/, sim/ or daemon/ lands (docs/architecture.md).
#
# usage: bench/regress.sh BASE [HEAD]
#   BASE, HEAD   commits (HEAD default: the working tree, uncommitted changes included)
# environment:
#   THRESHOLD=1.2        the largest acceptable ratio head / base
#   ROUNDS=3             runs of every program per version
#   FILTER=REGEX         only these benchmarks (Google Benchmark's --benchmark_filter)
#   PROGRAMS="placer_bench sim_bench phasord_bench"
#   REPLIES=same|any     `any`: a change of the replies is expected (new behaviour), not a failure
#   REGRESS_DIR=/tmp/phasor-regress   where the versions are checked out and built (kept: a
#                        second run reuses them)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
threshold="${THRESHOLD:-1.2}"
rounds="${ROUNDS:-3}"
filter="${FILTER:-.}"
programs="${PROGRAMS:-placer_bench sim_bench phasord_bench}"
replies="${REPLIES:-same}"
dir="${REGRESS_DIR:-/tmp/phasor-regress}"
case "$rounds" in ''|*[!0-9]*|0) echo "regress: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2 ;; esac
case "$replies" in same|any) ;; *) echo "regress: REPLIES must be 'same' or 'any', got '$replies'" >&2; exit 2 ;; esac
if ! python3 -c "import sys; float(sys.argv[1]) > 0 or sys.exit(1)" "$threshold" 2>/dev/null; then
  echo "regress: THRESHOLD must be a number > 0, got '$threshold'" >&2
  exit 2
fi

base_sha=$(git rev-parse --verify --quiet "$1^{commit}") || { echo "regress: '$1' is not a commit" >&2; exit 2; }
if [ $# -eq 2 ]; then
  head_sha=$(git rev-parse --verify --quiet "$2^{commit}") || { echo "regress: '$2' is not a commit" >&2; exit 2; }
  head_label="${head_sha:0:9}"
else
  head_sha=""
  head_label="worktree"
fi
mkdir -p "$dir"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# checkout SHA -> the source directory of that commit (a detached worktree).
checkout() {
  local sha="$1" src="$dir/src-${1:0:12}"
  if [ ! -d "$src" ]; then
    git worktree add --detach --quiet "$src" "$sha" >&2
  fi
  echo "$src"
}

# build SRC BUILD: the benchmark programs (and rank_digest when the source has it), Release.
build() {
  local src="$1" out="$2" targets=()
  mkdir -p "$out"
  if [ ! -f "$out/build.ninja" ]; then
    cmake -S "$src" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPHASOR_BUILD_TESTS=OFF \
      "${launcher[@]}" >"$out/regress-configure.log" 2>&1 || { cat "$out/regress-configure.log" >&2; return 1; }
  fi
  for p in $programs; do targets+=("$p"); done
  grep -q 'rank_digest' "$src/bench/CMakeLists.txt" && targets+=(rank_digest)
  echo "regress: building ${targets[*]} in $out" >&2
  cmake --build "$out" -j "$(nproc)" --target "${targets[@]}" >"$out/regress-build.log" 2>&1 || {
    tail -40 "$out/regress-build.log" >&2
    return 1
  }
}

if [ -n "$head_sha" ]; then
  head_src=$(checkout "$head_sha")
  head_build="$dir/build-${head_sha:0:12}"
else
  head_src="$top"
  head_build="$top/build-regress"
fi
base_src=$(checkout "$base_sha")
base_build="$dir/build-${base_sha:0:12}"
# A base older than the reply digest ranks the head's corpus with its own
# placer: the digest tool and its corpus are copied in (they use only the
# placer's public API; a base whose API differs builds no digest).
if [ ! -f "$base_src/bench/rank_digest.cc" ] && [ -f "$head_src/bench/rank_digest.cc" ]; then
  cp "$head_src/bench/rank_digest.cc" "$base_src/bench/"
  cp "$head_src/tests/testing/rank_corpus.h" "$base_src/tests/testing/"
  sed -n '/^# Not a benchmark: the ranking path/,$p' "$head_src/bench/CMakeLists.txt" >>"$base_src/bench/CMakeLists.txt"
fi
build "$base_src" "$base_build" || {
  echo "regress: the base does not build with the digest tool; building without it" >&2
  git -C "$base_src" checkout --quiet -- bench/CMakeLists.txt
  build "$base_src" "$base_build"
}
build "$head_src" "$head_build"

results="$dir/results-$$"
rm -rf "$results"
mkdir -p "$results"
# Each program runs from its own source tree (the simulator's benchmark reads data/models).
for round in $(seq 1 "$rounds"); do
  for side in base head; do
    if [ "$side" = base ]; then src="$base_src"; out="$base_build"; else src="$head_src"; out="$head_build"; fi
    for p in $programs; do
      exe=$(find "$out/bench" -name "$p" -type f -perm -u+x | head -n 1)
      if [ -z "$exe" ]; then
        echo "regress: $side has no $p; skipped" >&2
        continue
      fi
      echo "regress: round $round/$rounds, $side, $p" >&2
      (cd "$src" && "$exe" --benchmark_filter="$filter" --benchmark_format=json \
         --benchmark_out="$results/$side-$p-$round.json" --benchmark_out_format=json >/dev/null 2>&1) ||
        echo "regress: $side $p exited non-zero (its results so far are kept)" >&2
    done
  done
done

digest_status="not compared (a version has no bench/rank_digest)"
if [ -x "$base_build/bench/rank_digest" ] && [ -x "$head_build/bench/rank_digest" ]; then
  echo "regress: ranking the reply corpus with both versions" >&2
  "$base_build/bench/rank_digest" >"$results/base.digest"
  "$head_build/bench/rank_digest" >"$results/head.digest"
  if cmp -s "$results/base.digest" "$results/head.digest"; then
    digest_status="identical ($(wc -l <"$results/head.digest") groups of tests/testing/rank_corpus.h)"
  else
    # diff exits 1 on a difference: with pipefail that would end the script here.
    digest_status="DIFFERENT: $({ diff "$results/base.digest" "$results/head.digest" || true; } | grep '^>' | cut -c3- | tr '\n' ' ')"
  fi
fi

python3 - "$results" "$threshold" "${base_sha:0:9}" "$head_label" "$digest_status" "$replies" <<'EOF'
import glob, json, os, re, statistics, sys
results, threshold, base_label, head_label, digest, replies = sys.argv[1:7]
threshold = float(threshold)
scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
times = {}  # (program, name) -> side -> [ms]
order = []
for path in sorted(glob.glob(os.path.join(results, "*.json"))):
    side, rest = os.path.basename(path).split("-", 1)
    program = rest.rsplit("-", 1)[0]
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        continue
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or "error_occurred" in b:
            continue
        # Real time for the benchmarks that measure it (UseRealTime), else CPU time.
        real = b["name"].endswith("/real_time") or "/threads:" in b["name"]
        t = (b["real_time"] if real else b["cpu_time"]) * scale[b.get("time_unit", "ns")]
        # A benchmark given its own minimum time pairs with the same one without.
        key = (program, re.sub(r"/min_time:[0-9.]+", "", b["name"]))
        if key not in times:
            times[key] = {}
            order.append(key)
        times[key].setdefault(side, []).append(t)
rows, worst = [], 0.0
for key in order:
    sides = times[key]
    if "base" not in sides or "head" not in sides:
        continue
    base, head = statistics.median(sides["base"]), statistics.median(sides["head"])
    ratio = head / base if base > 0 else float("inf")
    worst = max(worst, ratio)
    rows.append((key[1], base, head, ratio, ratio > threshold))
def fmt(ms):
    return f"{ms:,.3f} ms" if ms < 1000 else f"{ms / 1000:,.2f} s"
print(f"| benchmark | {base_label} | {head_label} | ratio |")
print("| --- | --- | --- | --- |")
for name, base, head, ratio, bad in rows:
    print(f"| {name} | {fmt(base)} | {fmt(head)} | {ratio:.2f}x{' **over**' if bad else ''} |")
print()
print(f"medians of {len(next(iter(times.values()), {}).get('base', []))} runs each; ratio = {head_label} / {base_label}; threshold {threshold}x")
print(f"ranking replies: {digest}")
failed = [r for r in rows if r[4]]
if failed:
    print(f"regress: {len(failed)} benchmark(s) slower than {threshold}x", file=sys.stderr)
if digest.startswith("DIFFERENT") and replies == "same":
    print("regress: the ranking replies changed (REPLIES=any if that is intended)", file=sys.stderr)
    sys.exit(1)
sys.exit(1 if failed else 0)
EOF
