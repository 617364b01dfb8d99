#!/usr/bin/env bash
# `make demo`: phasor on bundled example data.
#  1. phasor rank on two jobs sharing a 50 Gbit/s link (data/examples/two_jobs.json):
#     the ranking, the shifts, and the link's load over one period before and after.
#  2. phasor diagnose on a running placement of five jobs on four links
#     (data/examples/diagnose.json): links ranked by gain, and demo-out/diagnose.html.
#  3. The simulator (scripts/demo_sim.sh): the headline, Cassini's experiment in the
#     simulator (24 one-GPU servers, network-heavy jobs; plugin off, Cassini mode, phasor),
#     then a 24-server leaf-spine replaying a Philly-derived workload, Themis-style, with
#     and without phasor; comparison tables and an HTML report.
# usage: scripts/demo.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
phasor="$build/cmd/phasor"

echo "== phasor rank --format table data/examples/two_jobs.json"
"$phasor" rank --format table data/examples/two_jobs.json
echo
echo "(the same as JSON, the contract schedulers read: $phasor rank data/examples/two_jobs.json)"
echo
echo "== phasor diagnose --rank-input data/examples/diagnose.json --html demo-out/diagnose.html"
mkdir -p demo-out
"$phasor" diagnose --rank-input data/examples/diagnose.json --html demo-out/diagnose.html
echo
echo "(open demo-out/diagnose.html in a browser: the unified circles and loads, before and after)"
echo
if [ -x scripts/demo_sim.sh ] || [ -f scripts/demo_sim.sh ]; then
  echo "== simulator: 1. Cassini-shaped scenario, three modes (headline); 2. trace replay, off and on"
  bash scripts/demo_sim.sh "$build" demo-out
fi
