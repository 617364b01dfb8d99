#!/bin/bash
# phasor as the placement plugin of a real Slurm cluster (munged, slurmctld,
# 8 slurmd on this host; tor1 = n01-n04, tor2 = n05-n08 under a spine).
# Env: PHASOR, PHASORD, PHASOR_SLURM_ASK (binaries), PHASOR_SOURCE_DIR, PHASOR_PYTHON,
# PYTHONPATH (the built Python package), PORT_BASE (ports PORT_BASE+10..18).
# Every daemon it starts is stopped by pid on exit, pass or fail.
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/cluster.sh"
: "${PORT_BASE:=25000}"
: "${PHASOR_PYTHON:=/usr/bin/python3}"  # a python3 with Debian's python3-zmq and python3-protobuf
T=$(mktemp -d /tmp/phasor-slurm-test-XXXXXX)
chmod 755 "$T"
cd "$T"  # batch jobs write their output here
PIDS=()
FAILED=0

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  cluster_stop
  if [ "$FAILED" = 0 ]; then rm -rf "$T"; else echo "logs kept in $T" >&2; fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  FAILED=1
  exit 1
}
check() {  # check WHAT EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then fail "$1: expected '$2', got '$3'"; fi
  echo "ok: $1 = $3"
}
wait_for() {  # wait_for TENTHS CMD...
  cluster_wait "$@"
}
job_field() {  # job_field ID FIELD  (from scontrol show job -o; not for fields with spaces)
  scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
job_comment() { squeue -h -j "$1" -o %k; }
state_is() { [ "$(job_field "$1" JobState)" = "$2" ]; }  # re-evaluated on every try of wait_for
no_offset() { ! "$PHASOR" offset --job "$1" --phasord "ipc://$T/requests" --timeout-ms 500 >/dev/null 2>&1; }
expand() { scontrol show hostnames "$1" | paste -sd, -; }

if [ "$(id -u)" != 0 ]; then fail "needs root (munged and slurmd)"; fi
for b in "$PHASOR" "$PHASORD" "$PHASOR_SLURM_ASK" /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/munged; do
  [ -x "$b" ] || fail "missing $b (scripts/install-deps.sh installs Slurm and munge)"
done

# --- phasord on ipc:// in the temp dir
cat >"$T/phasord.yaml" <<CONF
request_endpoint: ipc://$T/requests
profile_endpoint: ipc://$T/profiles
offset_endpoint: ipc://$T/offsets
metrics_listen: ""
allow_plain: true
state_path: $T/phasord.db
republish_interval_ms: 200
topology_path: $T/topology.conf
CONF
start_phasord() {
  "$PHASORD" --config "$T/phasord.yaml" >>"$T/phasord.log" 2>&1 &
  PHASORD_PID=$!
  PIDS+=($PHASORD_PID)
  wait_for 50 test -S "$T/requests" || fail "phasord did not start"
}

# --- phasor's scripts, pointed at the temp dir
mkdir -p "$T/profile-files" "$T/dumps" "$T/out"
echo '{"period_us": 100000, "square": {"up_us": 50000, "up_gbps": 300}}' >"$T/profile-files/heavy.json"
echo '{"period_us": 100000, "square": {"up_us": 40000, "up_gbps": 250}}' >"$T/profile-files/b.json"
src=$PHASOR_SOURCE_DIR/integrations/slurm
sed -e "s|^local PHASOR_ASK = .*|local PHASOR_ASK = \"$PHASOR_SLURM_ASK\"|" \
    -e "s|^local PHASOR_SOCKET = .*|local PHASOR_SOCKET = \"$T/slurm.sock\"|" "$src/job_submit.lua" >"$T/job_submit.lua"
for s in prolog.sh epilog.sh task_prolog.sh; do
  sed -e "s|^PHASOR=.*|PHASOR=$PHASOR|" -e "s|^PHASOR_SOCKET=.*|PHASOR_SOCKET=$T/slurm.sock|" \
      -e "s|^PHASOR_REQUEST_ENDPOINT=.*|PHASOR_REQUEST_ENDPOINT=ipc://$T/requests|" \
      -e "s|^PHASOR_OFFSET_ENDPOINT=.*|PHASOR_OFFSET_ENDPOINT=ipc://$T/offsets|" \
      -e "s|^PHASOR_JOBS_DIR=.*|PHASOR_JOBS_DIR=$T/jobs|" "$src/$s" >"$T/$s"
done

# --- the cluster
t0=$(date +%s%N)
cluster_start "$T" "$PORT_BASE" || fail "cluster did not start"
echo "cluster start-up: $((($(date +%s%N) - t0) / 1000000)) ms"
start_phasord  # with the cluster's topology.conf as its topology file

# --- bad input is refused naming the flag (exit 2), before anything runs
out=$("$PHASOR" offset --job 'x;rm' --phasord "ipc://$T/requests" 2>&1); rc=$?
check "phasor offset with a shell character: status" 2 "$rc"
check "phasor offset with a shell character: message" "phasor offset: --job: 'x;rm' is empty or has characters a shell would read" "$out"
out=$("$PHASOR" slurm serve --topology "$T/none.conf" --phasord "ipc://$T/requests" --socket "$T/x.sock" --state "$T/x.json" 2>&1); rc=$?
check "phasor slurm serve without its topology: status" 2 "$rc"
check "phasor slurm serve without its topology: message" "phasor slurm serve: topology_path: $T/none.conf: cannot read the file" "$out"
out=$("$PHASOR" slurm serve --topology "$T/topology.conf" --phasord "ipc://$T/requests" --socket "$T/x.sock" --state "$T/x.json" --keep-packing maybe 2>&1); rc=$?
check "phasor slurm serve --keep-packing maybe: status" 2 "$rc"
check "phasor slurm serve --keep-packing maybe: message" "--keep-packing: maybe not in {on,off}" "$(printf '%s\n' "$out" | head -1)"

# --- the controller
"$PHASOR" slurm serve --topology "$T/topology.conf" --phasord "ipc://$T/requests" --socket "$T/slurm.sock" \
  --state "$T/slurm-state.json" --poll-ms 200 --profile-dir "$T/profile-files" --dump-dir "$T/dumps" \
  >"$T/controller.log" 2>&1 &
PIDS+=($!)
wait_for 50 test -S "$T/slurm.sock" || fail "controller did not start"
sleep 0.3  # one poll

# 1. A running job holds nodes with a known profile.
A=$(sbatch --parsable -N3 --comment "phasor profile=heavy.json" --wrap "sleep 300") || fail "sbatch A"
wait_for 100 state_is "$A" RUNNING || fail "job A never ran"
wait_for 50 "$PHASOR" offset --job "$A" --phasord "ipc://$T/requests" || fail "A's placement never reached phasord"
echo "ok: job A ($(job_field "$A" NodeList)) is placed in phasord"
sleep 0.5  # the controller's next poll sees A running (its shift is pinned)

# 2. A second job opts in: its nodes are phasor's top-ranked candidate. (Jobs
# get only PATH and SLURM_CONF of this script's environment: its own PHASOR_*
# variables must not leak into what the tasks see.)
cat >"$T/task.py" <<'PY'
import os, sys
from phasor.agent import IterationGate
env = {k: v for k, v in os.environ.items() if k.startswith("PHASOR_")}
# The agent from the variables alone (no configuration in the job).
gate = IterationGate(env["PHASOR_JOB"], env["PHASOR_REQUEST_ENDPOINT"], env["PHASOR_OFFSET_ENDPOINT"],
                     mode=env["PHASOR_MODE"], fail_open_ms=int(env["PHASOR_FAIL_OPEN_MS"]))
r = gate.wait()
o = gate.offset
with open(os.path.join(sys.argv[1], "task.%s" % os.environ["SLURM_PROCID"]), "w") as f:
    for k in sorted(env):
        f.write("%s=%s\n" % (k, env[k]))
    f.write("agent=%s %s %s %s %s\n" % (o.job, o.origin_epoch_us, o.period_us, o.shift_us, o.version) if o else "agent=none\n")
gate.close()
PY
B=$(sbatch --parsable -N2 --comment "phasor profile=b.json" --export=PATH,SLURM_CONF,PYTHONPATH="$PYTHONPATH" \
  --wrap "srun -N2 --ntasks-per-node=1 $PHASOR_PYTHON $T/task.py $T/out; sleep 1") || fail "sbatch B"
comment=$(job_comment "$B")
token=${comment##*token=}
[ -n "$token" ] && [ "$token" != "$comment" ] || fail "job B carries no token (comment '$comment'); slurmctld log: $(grep phasor "$T/log/slurmctld.log" | tail -3)"
[ -f "$T/dumps/$token.json" ] || fail "no rank input dumped for B"
top=$("$PHASOR" rank --topology "$T/topology.conf" "$T/dumps/$token.json" | "$PHASOR_PYTHON" -c '
import json, sys
ranking = json.load(sys.stdin)
request = json.load(open(sys.argv[1]))
best = ranking["ranked"][0]["candidate"]
cand = [c for c in request["candidates"] if c["id"] == best][0]
job = [j["id"] for j in request["jobs"] if j["id"].startswith("submit-")][0]
print(",".join(cand["servers"][job]))' "$T/dumps/$token.json") || fail "phasor rank on B's input"
check "B's ReqNodeList is phasor rank's top candidate" "$top" "$(expand "$(job_field "$B" ReqNodeList)")"
wait_for 150 test -f "$T/out/task.1" -a -f "$T/out/task.0" || fail "B's tasks did not write"
check "B ran on the top candidate" "$top" "$(expand "$(job_field "$B" NodeList)")"

# 3. Every task sees the offset variables equal to phasord's OffsetUpdate; the agent reads them.
want=$("$PHASOR" offset --job "$B" --phasord "ipc://$T/requests" --offset-endpoint "ipc://$T/offsets" \
  --mode once --timeout-ms 1000 | sed 's/^export //' | sort)
[ -n "$want" ] || fail "phasord has no offset for B while it runs"
var() { echo "$want" | sed -n "s/^PHASOR_$1=//p"; }
origin=$(var ORIGIN_EPOCH_US) period=$(var PERIOD_US) shift=$(var SHIFT_US) version=$(var OFFSET_VERSION)
for t in 0 1; do
  check "task $t's PHASOR_ variables" "$want" "$(grep '^PHASOR_' "$T/out/task.$t")"
  check "task $t's agent offset" "$B $origin $period $shift $version" "$(sed -n 's/^agent=//p' "$T/out/task.$t")"
done

# 4. Placements reach phasord at start and leave at end.
wait_for 150 state_is "$B" COMPLETED || fail "B did not complete"
wait_for 50 no_offset "$B" || fail "B's placement stayed in phasord after it ended"
echo "ok: B's placement left phasord when it ended"
scancel "$A"
wait_for 50 no_offset "$A" || fail "A's placement stayed after scancel"
echo "ok: A's placement left phasord when it was cancelled"

# 5. A job that does not opt in is never touched.
C=$(sbatch --parsable -N1 --comment "plain job" --export=PATH,SLURM_CONF --wrap 'env | grep ^PHASOR_ > '"$T/out/c.env"'; true') || fail "sbatch C"
check "C's comment" "plain job" "$(job_comment "$C")"
check "C's ReqNodeList" "(null)" "$(job_field "$C" ReqNodeList)"
wait_for 100 state_is "$C" COMPLETED || fail "C did not complete"
check "C's PHASOR_ variables" "" "$(cat "$T/out/c.env")"

# 6. With phasord stopped, an opted-in submission goes on unmodified.
kill "$PHASORD_PID"; wait "$PHASORD_PID" 2>/dev/null
s0=$(date +%s%N)
D=$(sbatch --parsable -N2 --comment "phasor" --wrap "true") || fail "sbatch D with phasord stopped"
echo "submission with phasord stopped: $((($(date +%s%N) - s0) / 1000000)) ms (sbatch end to end)"
check "D's comment" "phasor" "$(job_comment "$D")"
check "D's ReqNodeList" "(null)" "$(job_field "$D" ReqNodeList)"
grep -q "phasor: job left unmodified: controller: phasord: " "$T/log/slurmctld.log" || fail "no reason logged for D"
echo "ok: D went on unmodified: $(grep 'phasor: job left unmodified' "$T/log/slurmctld.log" | tail -1 | sed 's/.*phasor: //')"
echo PASS
