#!/usr/bin/env bash
# Runs every benchmark program once (`make bench`). Benchmarks are not part of
# `make test`; their numbers go to the README's performance section.
# usage: bench/run.sh [BUILD_DIR] [extra Google Benchmark flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
shift || true
for b in "$build"/bench/*_bench "$build"/bench/*/*_bench; do
  [ -x "$b" ] || continue
  echo "== $b"
  "$b" "$@"
done
