#!/usr/bin/env bash
# `make testbed`: phasor's closed loop on real PyTorch jobs in network
# namespaces (docs/testbed.md). Needs root; builds nothing (the Makefile
# builds phasor, phasord and the Python package first).
#
# usage: bench/testbed/run.sh [BUILD_DIR] [testbed.py options, e.g. --reps 5 --iterations 15]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-build}"
shift || true
if [ "$(id -u)" -ne 0 ]; then
  echo "testbed: needs root (network namespaces and tc): run 'sudo make testbed'" >&2
  exit 1
fi
prefix=phtb-tb-
# Every namespace of this testbed goes, whatever happens (also on Ctrl-C).
cleanup() { /usr/bin/python3 "$here/netns.py" down --prefix "$prefix" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
cleanup
start=$(date +%s)
/usr/bin/python3 "$here/testbed.py" --build "$build" --prefix "$prefix" "$@"
echo "make testbed: $(( $(date +%s) - start )) s wall; $(uptime)"
