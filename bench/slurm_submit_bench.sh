#!/bin/bash
# Submission latency of `sbatch` on a real Slurm cluster (tests/integrations/
# slurm/cluster.sh) without phasor's hook (a pass-through job_submit.lua) and
# with it (phasor's job_submit.lua, opted-in jobs ranked through phasord):
# p50 and p99 over N submissions each, and the cluster's start-up time.
# Jobs are submitted held (-H) and cancelled at the end, so every submission
# sees the same free nodes. Needs root.
# usage: bench/slurm_submit_bench.sh [BUILD_DIR] [N=200] [PORT_BASE=25050]
set -u
cd "$(dirname "$0")/.."
SRC=$(pwd)
BUILD=$(cd "${1:-build}" && pwd)
N=${2:-200}
PORT_BASE=${3:-25050}
source "$SRC/tests/integrations/slurm/cluster.sh"
T=$(mktemp -d /tmp/phasor-slurm-bench-XXXXXX)
chmod 755 "$T"
PIDS=()
cleanup() {
  scancel -u root >/dev/null 2>&1
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  cluster_stop
  rm -rf "$T"
}
trap cleanup EXIT

t0=$(date +%s%N)
cluster_start "$T" "$PORT_BASE" || { echo "cluster did not start" >&2; exit 1; }
echo "cluster start-up (munged, slurmctld, 8 slurmd idle): $((($(date +%s%N) - t0) / 1000000)) ms"
cat >"$T/phasord.yaml" <<CONF
request_endpoint: ipc://$T/requests
profile_endpoint: ipc://$T/profiles
offset_endpoint: ipc://$T/offsets
metrics_listen: ""
allow_plain: true
state_path: $T/phasord.db
log_level: warn
CONF
"$BUILD/cmd/phasord/phasord" --config "$T/phasord.yaml" >"$T/phasord.log" 2>&1 &
PIDS+=($!)
"$BUILD/cmd/phasor" slurm serve --topology "$T/topology.conf" --phasord "ipc://$T/requests" \
  --socket "$T/slurm.sock" --state "$T/state.json" --proposal-ttl-ms 1 --log-level warn >"$T/controller.log" 2>&1 &
PIDS+=($!)
cluster_wait 50 test -S "$T/slurm.sock" || { echo "controller did not start" >&2; exit 1; }
sleep 1.5

run() {  # run LABEL COMMENT
  local i s e
  : >"$T/$1.ms"
  for i in $(seq "$N"); do
    s=$(date +%s%N)
    sbatch -H -N2 --comment "$2" --wrap true >/dev/null || echo "sbatch failed" >&2
    e=$(date +%s%N)
    echo $(((e - s) / 1000)) >>"$T/$1.ms"
  done
  scancel -u root >/dev/null 2>&1
}

run without "phasor"
sed -e "s|^local PHASOR_ASK = .*|local PHASOR_ASK = \"$BUILD/integrations/slurm/phasor-slurm-ask\"|" \
    -e "s|^local PHASOR_SOCKET = .*|local PHASOR_SOCKET = \"$T/slurm.sock\"|" \
    "$SRC/integrations/slurm/job_submit.lua" >"$T/job_submit.lua"
sleep 1.5  # slurmctld re-reads job_submit.lua when it changes
run with "phasor"
grep "phasor: job left unmodified" "$T/log/slurmctld.log" | sed 's/.*phasor: /  /' | sort | uniq -c | head -5
# The hook's question alone (helper -> controller -> phasord), outside slurmctld.
: >"$T/ask.ms"
for i in $(seq "$N"); do
  s=$(date +%s%N)
  printf 'op=submit\nnodes=2\ncomment=phasor\n' | "$BUILD/integrations/slurm/phasor-slurm-ask" "$T/slurm.sock" 1000 >/dev/null
  e=$(date +%s%N)
  echo $(((e - s) / 1000)) >>"$T/ask.ms"
done
placed=$(grep -c "phasor: job '" "$T/log/slurmctld.log")
declined=$(grep -c "phasor: job left unmodified" "$T/log/slurmctld.log")
python3 - "$T/without.ms" "$T/with.ms" "$placed" "$declined" "$T/ask.ms" <<'PY'
import sys
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
r = {}
for name, path in (("without hook", sys.argv[1]), ("with hook", sys.argv[2])):
    v = [int(x) / 1000 for x in open(path)]
    r[name] = (pct(v, 50), pct(v, 99))
    print("%-13s n=%d  p50 %.1f ms  p99 %.1f ms" % (name, len(v), r[name][0], r[name][1]))
v = [int(x) / 1000 for x in open(sys.argv[5])]
print("helper -> controller -> phasord alone (incl. fork/exec): p50 %.1f ms  p99 %.1f ms" % (pct(v, 50), pct(v, 99)))
print("added by the hook: p50 %.1f ms, p99 %.1f ms (placed %s, left unmodified %s)" % (
    r["with hook"][0] - r["without hook"][0], r["with hook"][1] - r["without hook"][1], sys.argv[3], sys.argv[4]))
PY
