#!/bin/bash
# phasor as the placement plugin of a real Slurm cluster whose compute nodes
# are separate hosts (tests/integrations/slurm/cluster.sh: a network and a
# mount namespace per host, each with its own address and /run; slurmctld,
# phasord and phasor's controller on host ctl, slurmd on n01..n08; two
# partitions, features, GRES, a reservation). As an operator would set it
# up: the shipped job_submit.lua, Prolog, Epilog and TaskProlog, one node
# configuration file, TCP with CURVE between the hosts.
#
# It checks, from outside, that every opted-in job is accepted or rejected
# exactly as the same job without phasor; that opted-in jobs, submitted to
# an idle or to a busy cluster, start on the nodes phasor chose (the top
# candidate of `phasor rank --topology` on the controller's own input),
# honouring partition, constraint, task count, GRES and reservation; that
# every task on every host gets the job's offset (and the agent reads it);
# that shell metacharacters in every job field do nothing; that a rejected
# submission gives its nodes back, an abandoned one leaves no proposal, a
# token cannot be copied to another job; and that with phasord stopped a
# submission goes on unmodified.
#
# Env: PHASOR, PHASORD, PHASOR_SLURM_ASK (binaries), PHASOR_SOURCE_DIR,
# PHASOR_PYTHON, PYTHONPATH (the built Python package). Every daemon it
# starts is stopped by pid, and the namespaces removed, on exit.
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/cluster.sh"
: "${PHASOR_PYTHON:=/usr/bin/python3}"  # a python3 with Debian's python3-zmq and python3-protobuf
export CLUSTER_NAME="phs$$"
T=$(mktemp -d /tmp/phasor-slurm-test-XXXXXX)
chmod 755 "$T"
cd "$T"
FAILED=0
T0=$(date +%s)

cleanup() {
  [ -n "${CONTROLLER_PID:-}" ] && kill -CONT "$CONTROLLER_PID" 2>/dev/null
  cluster_stop  # every daemon, phasord and the controller included, by pid
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
wait_for() { cluster_wait "$@"; }  # wait_for TENTHS CMD...
ctl() { on ctl "$@"; }
# A field of job ID from squeue's JSON (job_state, nodes, required_nodes, comment, ...), robust to any job field.
job() {
  ctl squeue --json --all 2>/dev/null | "$PHASOR_PYTHON" -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if str(j["job_id"]) == sys.argv[1]:
        v = j.get(sys.argv[2])
        print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2"
}
state_is() { [ "$(job "$1" job_state)" = "$2" ]; }  # re-evaluated on every try of wait_for
ended() { case "$(job "$1" job_state)" in COMPLETED|CANCELLED|FAILED|"") return 0 ;; esac; return 1; }
expand() { [ -z "$1" ] && return; ctl scontrol show hostnames "$1" | paste -sd, -; }
token_of() { job "$1" comment | sed -n 's/^phasor token=\([0-9a-f]*\).*/\1/p'; }
PH_CURVE=(--server-key "$T/keys/phasord.pub" --client-keys "$T/keys/ctlclient")
offset_of() {  # phasord's offset for job $1, as the TaskProlog prints it (asked from ctl)
  ctl "$PHASOR" offset --job "$1" --phasord tcp://10.77.0.1:7410 --offset-endpoint tcp://10.77.0.1:7412 \
    --server-key "$T/keys/phasord.pub" --client-keys "$T/keys/agent" --mode once --fail-open-ms 2000 --timeout-ms 2000 |
    sed 's/^export //' | sort
}
no_offset() { ! ctl "$PHASOR" offset --job "$1" --phasord tcp://10.77.0.1:7410 "${PH_CURVE[@]}" --timeout-ms 500 >/dev/null 2>&1; }
phasord_up() {
  case "$(ctl "$PHASOR" offset --job 0 --phasord tcp://10.77.0.1:7410 "${PH_CURVE[@]}" --timeout-ms 300 2>&1)" in
    *"no offset for job"*) return 0 ;;
  esac
  return 1
}
# The top candidate of `phasor rank --topology` on the controller's input for the job with token $1.
rank_top() {
  "$PHASOR" rank --topology "$T/topology.conf" "$T/dumps/$1.json" | "$PHASOR_PYTHON" -c '
import json, sys
ranking = json.load(sys.stdin)
request = json.load(open(sys.argv[1]))
best = ranking["ranked"][0]["candidate"]
cand = [c for c in request["candidates"] if c["id"] == best][0]
own = [j["id"] for j in request["jobs"] if j["id"].startswith("submit-") or j["id"] == sys.argv[2]]
print(",".join(cand["servers"][own[0]]))' "$T/dumps/$1.json" "$2"
}

if [ "$(id -u)" != 0 ]; then fail "needs root (namespaces, munged, slurmd)"; fi
for b in "$PHASOR" "$PHASORD" "$PHASOR_SLURM_ASK" /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/munged /usr/bin/nsenter; do
  [ -x "$b" ] || fail "missing $b (scripts/install-deps.sh installs Slurm, munge and iproute2)"
done

# --- keys: phasord's, the controller's, the controller's as phasord's client, the nodes', the agents'
mkdir -p "$T/keys" "$T/profile-files" "$T/dumps" "$T/out"
for k in phasord controller ctlclient node agent; do "$PHASOR" keygen --out "$T/keys/$k" >/dev/null || fail "keygen $k"; done
cat "$T/keys/ctlclient.pub" "$T/keys/agent.pub" >"$T/keys/phasord.allowed"
cat "$T/keys/node.pub" >"$T/keys/controller.allowed"
echo '{"period_us": 100000, "square": {"up_us": 50000, "up_gbps": 300}}' >"$T/profile-files/heavy.json"
echo '{"period_us": 100000, "square": {"up_us": 40000, "up_gbps": 250}}' >"$T/profile-files/b.json"

# --- phasor's scripts and the one node file, as an operator installs them
cat >"$T/node.yaml" <<CONF
controller: tcp://10.77.0.1:7420
controller_public_key_file: $T/keys/controller.pub
client_key_prefix: $T/keys/node
phasord_request_endpoint: tcp://10.77.0.1:7410
phasord_offset_endpoint: tcp://10.77.0.1:7412
phasord_public_key_file: $T/keys/phasord.pub
agent_key_prefix: $T/keys/agent
jobs_dir: /run/phasor/jobs
CONF
src=$PHASOR_SOURCE_DIR/integrations/slurm
sed -e "s|^local PHASOR_ASK = .*|local PHASOR_ASK = \"$PHASOR_SLURM_ASK\"|" "$src/job_submit.lua" >"$T/job_submit.lua"
for s in prolog.sh epilog.sh task_prolog.sh; do
  sed -e "s|^PHASOR=.*|PHASOR=$PHASOR|" -e "s|^PHASOR_CONFIG=.*|PHASOR_CONFIG=$T/node.yaml|" \
      -e "s|^PHASOR_JOBS_DIR=.*|PHASOR_JOBS_DIR=/run/phasor/jobs|" "$src/$s" >"$T/$s"
done

# --- the cluster, phasord (TCP, CURVE) and the controller on ctl
t0=$(date +%s%N)
cluster_start "$T" || fail "cluster did not start"
echo "cluster start-up (9 hosts, munged, slurmctld, 8 slurmd): $((($(date +%s%N) - t0) / 1000000)) ms"
check "n03 sees its own address only" "10.77.0.13/24" "$(on n03 ip -o -4 addr show dev eth0 | awk '{print $4}')"
cluster_phasord_conf "$T" </dev/null
start_phasord() {
  cluster_daemon ctl "$T/phasord.log" "$PHASORD" --config "$T/phasord.yaml"
  PHASORD_PID=$CLUSTER_LAST_PID
  wait_for 100 phasord_up || fail "phasord did not start"
}
start_phasord

# Bad input is refused naming the flag (exit 2), before anything runs.
out=$("$PHASOR" offset --job 'x;rm' --phasord "tcp://10.77.0.1:7410" 2>&1); rc=$?
check "phasor offset with a shell character: status" 2 "$rc"
check "phasor offset with a shell character: message" "phasor offset: --job: 'x;rm' is empty or has characters a shell would read" "$out"
out=$("$PHASOR" slurm serve --topology "$T/none.conf" --phasord tcp://10.77.0.1:7410 --socket "$T/x.sock" --state "$T/x.json" 2>&1); rc=$?
check "phasor slurm serve without its topology: status" 2 "$rc"
check "phasor slurm serve without its topology: message" "phasor slurm serve: topology_path: $T/none.conf: cannot read the file" "$out"
out=$("$PHASOR" slurm serve --topology "$T/topology.conf" --phasord tcp://10.77.0.1:7410 --socket "$T/x.sock" --state "$T/x.json" --node-endpoint tcp://10.77.0.1:7420 2>&1); rc=$?
check "phasor slurm serve, plain TCP for the nodes: status" 2 "$rc"

ctl mkdir -p /run/phasor
cluster_daemon ctl "$T/controller.log" "$PHASOR" slurm serve --topology "$T/topology.conf" \
  --phasord tcp://10.77.0.1:7410 "${PH_CURVE[@]}" --socket /run/phasor/slurm.sock --state "$T/slurm-state.json" \
  --poll-ms 200 --profile-dir "$T/profile-files" --dump-dir "$T/dumps" --log-level debug \
  --node-endpoint tcp://10.77.0.1:7420 --node-secret-key "$T/keys/controller.secret" \
  --node-public-key "$T/keys/controller.pub" --node-allowed-clients "$T/keys/controller.allowed"
CONTROLLER_PID=$CLUSTER_LAST_PID
controller_ready() { printf 'op=ping\n' | ctl "$PHASOR_SLURM_ASK" /run/phasor/slurm.sock 1000 | grep -q '^polled=1$'; }
wait_for 150 controller_ready || fail "controller did not start (or never polled Slurm)"
check "a compute host does not see the controller's socket" "absent" "$(on n01 test -e /run/phasor/slurm.sock && echo present || echo absent)"

# Shell metacharacters in every job field (name, comment, output, working
# directory, environment, mail user); nothing of them may ever run.
EVIL='$(touch '"$T"'/pwned); `touch '"$T"'/pwned`; touch '"$T"'/pwned | & > < "'"'"
export EVIL
WD="$T/wd;\$(touch pwned) 'q'"
mkdir -p "$WD"
meta=(-J "$EVIL" -o "$T/out/%j;\$(touch x)|.out" -D "$WD" --mail-user "a;\$(touch $T/pwned)@b" --mail-type=NONE
      --export=PATH,SLURM_CONF,PYTHONPATH,EVIL)
COMMENT_TAIL="-- $EVIL"

# --- 1. Idle cluster: every kind of request, with and without phasor
ctl scontrol create reservation ReservationName=resv StartTime=now Duration=60 Nodes=n07,n08 Users=root \
  Flags=IGNORE_JOBS >/dev/null || fail "reservation"
# twin NAME PINNED ARGS...: the job opted in, then the same plain; the same acceptance; where
# accepted and PINNED=pinned, it runs on the nodes phasor pinned (its dump's top candidate).
# Submissions that failed open because phasord did not answer within the
# hook's bound (a loaded machine): the reason slurmctld logged for them.
slow_answers() { grep -c "phasor: job left unmodified: controller: phasord: .* within" "$T/log/slurmctld.log"; }
twin() {
  local name=$1 pinned=$2 a b ra rb ta req nodes try slow
  shift 2
  # A submission that failed open on a slow phasord is correct, but places
  # nothing: submitted again (at most three times), each time accepted.
  for try in 1 2 3; do
    slow=$(slow_answers)
    a=$(ctl sbatch --parsable "${meta[@]}" --comment "phasor profile=b.json $COMMENT_TAIL" "$@" --wrap true 2>&1); ra=$?
    [ "$ra" = 0 ] && [ "$(slow_answers)" != "$slow" ] || break
    echo "note: $name: phasord was slow for job ${a%%;*} (it went on unmodified): submitted again"
    wait_for 200 ended "${a%%;*}" || fail "$name: job $a did not end"
  done
  b=$(ctl sbatch --parsable "${meta[@]}" --comment "plain $COMMENT_TAIL" "$@" --wrap true 2>&1); rb=$?
  a=${a%%;*} b=${b%%;*}
  if [ "$rb" = 0 ]; then
    check "$name: accepted as without phasor" 0 "$ra"
    ta=$(token_of "$a")
    [ -n "$ta" ] || [ "$pinned" = untouched ] || fail "$name: job $a carries no token: $(job "$a" comment)"
    wait_for 200 ended "$a" || fail "$name: job $a did not end ($(job "$a" job_state))"
    wait_for 200 ended "$b" || fail "$name: job $b did not end"
    req=$(expand "$(job "$a" required_nodes)")
    nodes=$(expand "$(job "$a" nodes)")
    if [ "$pinned" = pinned ]; then
      [ -n "$req" ] || fail "$name: job $a was not pinned"
      check "$name: ran where phasor pinned it" "$req" "$nodes"
      check "$name: phasor rank's top candidate" "$(rank_top "$ta" "$a")" "$req"
    else
      check "$name: left to Slurm (no token)" "" "$ta"
      check "$name: its node list as without phasor" "$(job "$b" required_nodes)" "$(job "$a" required_nodes)"
    fi
    check "$name: the plain twin untouched" "plain $COMMENT_TAIL" "$(job "$b" comment)"
  else
    check "$name: rejected as without phasor ($(echo "$b" | tail -1))" "$rb $(echo "$b" | tail -1)" "$ra $(echo "$a" | tail -1)"
  fi
}
twin "partition cpu, -N 2" pinned -p cpu -N 2
twin "constraint ib, -N 2" pinned --constraint=ib -N 2
twin "-n 4 (two 2-CPU nodes)" pinned -n 4
twin "exclusive, cpu" pinned --exclusive -p cpu
twin "GRES hca:1" pinned --gres=hca:1
twin "reservation, -N 2" pinned -p cpu --reservation=resv -N 2
twin "--mem 900" pinned -p cpu --mem=900
twin "--mem 5000" rejected --mem=5000
twin "-N 9" rejected -N 9
twin "unknown feature" rejected --constraint=nosuch
twin "time above cpu's limit" rejected -p cpu -t 120
twin "an array" untouched --array=0-1
twin "its own node list" untouched -w n02
twin "a node range" untouched -N 1-2
ctl scontrol delete ReservationName=resv >/dev/null || fail "delete reservation"

# A rejected submission gives its nodes back: the first job opts in and is
# pinned, then Slurm rejects it (above cpu's time limit); the next one gets
# the same nodes, not the ones after them.
sleep 0.5
for try in 1 2 3; do
  slow=$(slow_answers)
  ctl sbatch -J rejected-one -p cpu -t 120 --comment phasor --wrap true >/dev/null 2>&1 && fail "the job above cpu's time limit was accepted"
  [ "$(slow_answers)" != "$slow" ] || break
  echo "note: phasord was slow for the rejected job: submitted again"
  sleep 1.5
done
first=$(sed -n "s/.*phasor: job 'rejected-one' of uid 0: nodes \([^ ]*\) .*/\1/p" "$T/log/slurmctld.log" | tail -1)
[ -n "$first" ] || fail "the rejected job was not pinned first: $(grep rejected-one "$T/log/slurmctld.log" | tail -2)"
sleep 1.5  # a poll begun a grace (1 s) after it
for try in 1 2 3; do
  slow=$(slow_answers)
  J=$(ctl sbatch --parsable -J accepted-one -p cpu --comment phasor --wrap true) || fail "sbatch accepted-one"
  [ "$(slow_answers)" != "$slow" ] || break
  echo "note: phasord was slow for accepted-one: submitted again"
  wait_for 200 ended "$J" || fail "accepted-one did not end"
  sleep 1.5
done
check "the rejected job's nodes went to the next one" "$first" "$(expand "$(job "$J" required_nodes)")"
wait_for 200 ended "$J" || fail "accepted-one did not end"

# --- 2. Busy cluster: blockers hold every node; opted-in jobs wait unpinned,
# and are placed by phasor as the blockers end. A plain job ahead of them
# keeps its turn.
block() { ctl sbatch --parsable -J "block-$1" --export=PATH,SLURM_CONF "${@:2}" --wrap "while [ ! -e $T/release.$1 ]; do sleep 0.1; done"; }
B1=$(block b1 -N 2) && B2=$(block b2 -N 2) && B3=$(block b3 -p cpu -N 4) || fail "sbatch blockers"
for j in $B1 $B2 $B3; do wait_for 150 state_is "$j" RUNNING || fail "blocker $j never ran"; done
cat >"$T/task.py" <<'PY'
import os, socket, sys
from phasor.agent import IterationGate
env = {k: v for k, v in os.environ.items() if k.startswith("PHASOR_")}
gate = IterationGate.from_env()  # from the TaskProlog's variables alone
gate.wait()
o = gate.offset
marks = sorted(os.listdir("/run/phasor/jobs")) if os.path.isdir("/run/phasor/jobs") else []
path = os.path.join(sys.argv[1], "%s.%s" % (os.environ["SLURM_JOB_ID"], os.environ["SLURM_PROCID"]))
with open(path + ".tmp", "w") as f:
    f.write("host=%s node=%s marked=%s\n" % (socket.gethostname(), os.environ["SLURMD_NODENAME"],
                                            os.environ["SLURM_JOB_ID"] in marks))
    for k in sorted(env):
        f.write("%s=%s\n" % (k, env[k]))
    f.write("agent=%s %s %s %s %s\n" % (o.job, o.origin_epoch_us, o.period_us, o.shift_us, o.version) if o else "agent=none\n")
os.rename(path + ".tmp", path)
gate.close()
PY
train() {  # train LABEL NODES ARGS...: an opted-in job whose tasks (one per node) report, then wait for release.LABEL
  ctl sbatch --parsable "${meta[@]}" --comment "phasor profile=heavy.json $COMMENT_TAIL" "${@:3}" --wrap \
    "srun -N$2 -n$2 --ntasks-per-node=1 $PHASOR_PYTHON $T/task.py $T/out && while [ ! -e $T/release.$1 ]; do sleep 0.1; done"
}
X=$(ctl sbatch --parsable -J plain-ahead -N 2 --export=PATH,SLURM_CONF --wrap "while [ ! -e $T/release.x ]; do sleep 0.1; done") || fail "sbatch X"
P1=$(train p1 2 -N 2) && P2=$(train p2 2 -p cpu -N 2 --constraint=ib) && P3=$(train p3 1 -p cpu -n 2) || fail "sbatch P"
P1=${P1%%;*} P2=${P2%%;*} P3=${P3%%;*}
Y=$(ctl sbatch --parsable -J plain-behind -p cpu -N 1 --export=PATH,SLURM_CONF --wrap "while [ ! -e $T/release.y ]; do sleep 0.1; done") || fail "sbatch Y"
sleep 0.5
for j in $P1 $P2 $P3; do
  check "job $j waits" PENDING "$(job "$j" job_state)"
  check "job $j waits unpinned" "" "$(job "$j" required_nodes)"
  [ -n "$(token_of "$j")" ] || fail "job $j carries no token"
done
b1_nodes=$(expand "$(job "$B1" nodes)") b2_nodes=$(expand "$(job "$B2" nodes)")
touch "$T/release.b1"
wait_for 150 state_is "$X" RUNNING || fail "the plain job ahead did not start"
check "the plain job ahead took the first nodes that freed" "$b1_nodes" "$(expand "$(job "$X" nodes)")"
check "the plain job ahead is untouched" "" "$(job "$X" required_nodes)"
check "P1 still waits" PENDING "$(job "$P1" job_state)"
touch "$T/release.b2"
wait_for 150 state_is "$P1" RUNNING || fail "P1 did not start"
touch "$T/release.b3"
for j in $P2 $P3 $Y; do wait_for 150 state_is "$j" RUNNING || fail "job $j did not start ($(job "$j" job_state))"; done
check "P1 ran where B2 freed nodes" "$b2_nodes" "$(expand "$(job "$P1" nodes)")"
check "P2 ran on cpu's ib nodes" "n07,n08" "$(expand "$(job "$P2" nodes)")"
for j in $P1 $P2 $P3; do
  req=$(expand "$(job "$j" required_nodes)")
  check "job $j started where phasor pinned it" "$req" "$(expand "$(job "$j" nodes)")"
  check "job $j: phasor rank's top candidate" "$(rank_top "$(token_of "$j")" "$j")" "$req"
done
check "the plain job behind is untouched" "" "$(job "$Y" required_nodes)"

# Every task on every host has the job's offset from phasord (over TCP with
# CURVE), the agent read it, and only the job's own hosts hold its mark.
for j in $P1 $P2 $P3; do
  nodes=$(expand "$(job "$j" nodes)")
  n=$(echo "$nodes" | tr ',' '\n' | wc -l)
  for t in $(seq 0 $((n - 1))); do wait_for 150 test -f "$T/out/$j.$t" || fail "job $j's task $t did not report"; done
  want=$(offset_of "$j")
  [ -n "$want" ] || fail "phasord has no offset for job $j while it runs"
  var() { echo "$want" | sed -n "s/^PHASOR_$1=//p"; }
  agent="$j $(var ORIGIN_EPOCH_US) $(var PERIOD_US) $(var SHIFT_US) $(var OFFSET_VERSION)"
  hosts=""
  for t in $(seq 0 $((n - 1))); do
    f="$T/out/$j.$t"
    read -r hostline <"$f"
    h=$(echo "$hostline" | sed 's/host=\([^ ]*\) node=\([^ ]*\) marked=\(.*\)/\1/')
    check "job $j task $t: its host is its node" "node=$h marked=True" "$(echo "$hostline" | sed 's/host=[^ ]* //')"
    check "job $j task $t ($h): PHASOR_ variables" "$want" "$(grep '^PHASOR_' "$f" | grep -v '^PHASOR_\(NODE_RANK\|RING_NODES\)=')"
    # The ring's order (phasor's, as committed) and this node's rank in it.
    ring=$(sed -n 's/^PHASOR_RING_NODES=//p' "$f")
    check "job $j task $t ($h): the ring holds the job's nodes" "$nodes" "$(echo "$ring" | tr ',' '\n' | sort | paste -sd, -)"
    check "job $j task $t ($h): its node's rank in the ring" \
      "$(echo "$ring" | tr ',' '\n' | grep -nx "$h" | cut -d: -f1 | awk '{print $1 - 1}')" \
      "$(sed -n 's/^PHASOR_NODE_RANK=//p' "$f")"
    check "job $j task $t ($h): the agent's offset" "$agent" "$(sed -n 's/^agent=//p' "$f")"
    hosts="$hosts,$h"
  done
  check "job $j: tasks on each of its hosts" "$nodes" "$(echo "${hosts#,}" | tr ',' '\n' | sort | paste -sd, -)"
  for h in n01 n02 n03 n04 n05 n06 n07 n08; do
    case ",$nodes," in *",$h,"*) want_mark=yes ;; *) want_mark=no ;; esac
    check "job $j's mark on $h" "$want_mark" "$(on "$h" test -e "/run/phasor/jobs/$j" && echo yes || echo no)"
  done
done

# A token cannot be copied: not by scontrol update, not by a new submission.
tok1=$(token_of "$P1")
out=$(ctl scontrol update JobId="$Y" Comment="phasor token=$tok1" 2>&1) && fail "scontrol copied a token: $out"
check "Y's comment after the refused copy" "" "$(job "$Y" comment)"
grep -q "phasor: refused a comment giving job $Y another token" "$T/log/slurmctld.log" || fail "the refusal is not logged"
echo "ok: scontrol update Comment=... with another job's token is refused ($out)"
C=$(ctl sbatch --parsable -H --comment "phasor token=$tok1" --wrap true) || fail "sbatch with a copied token"
tc=$(token_of "$C")
[ -n "$tc" ] && [ "$tc" != "$tok1" ] || fail "the copied token was kept: $(job "$C" comment)"
echo "ok: a submission naming another job's token gets its own ($tc)"
ctl scancel "$C"

# Placements leave phasord when the jobs end.
touch "$T/release.p1" "$T/release.p2" "$T/release.p3" "$T/release.x" "$T/release.y"
for j in $P1 $P2 $P3; do
  wait_for 150 ended "$j" || fail "job $j did not end"
  wait_for 50 no_offset "$j" || fail "job $j's placement stayed in phasord: $(ctl "$PHASOR" offset --job "$j" --phasord tcp://10.77.0.1:7410 "${PH_CURVE[@]}" --timeout-ms 500 2>&1)"
done
echo "ok: the placements left phasord when the jobs ended"
for h in n01 n02 n03 n04 n05 n06 n07 n08; do
  check "no mark left on $h" "" "$(on "$h" ls /run/phasor/jobs 2>/dev/null)"
done
wait_for 150 cluster_all_idle || fail "the cluster did not become idle: $(ctl sinfo -h -N -o '%N %t %E' | paste -sd';' -)"

# --- 3. A submission the hook gave up on (the controller stopped) goes on
# unmodified within the hook's bound and leaves no proposal.
kill -STOP "$CONTROLLER_PID"
A=$(ctl sbatch --parsable -J abandoned -N 1 --comment phasor --wrap true) || fail "sbatch with the controller stopped"
kill -CONT "$CONTROLLER_PID"
check "the abandoned job's comment" "phasor" "$(job "$A" comment)"
line=$(grep "phasor: job left unmodified: controller: no answer in time" "$T/log/slurmctld.log" | tail -1)
[ -n "$line" ] || fail "the hook did not give up: $(grep 'phasor:' "$T/log/slurmctld.log" | tail -2)"
echo "ok: the hook gave up in its bound: ${line##*phasor: }"
sleep 1.5
unbound=$("$PHASOR_PYTHON" -c 'import json,sys; print(sum(1 for p in json.load(open(sys.argv[1]))["proposals"].values() if not p["job"]))' "$T/slurm-state.json")
check "proposals no job carries, after the abandoned submission" 0 "$unbound"
wait_for 150 ended "$A" || fail "the abandoned job did not run"

# --- 4. A job without the opt-in is never touched; with phasord stopped an
# opted-in one goes on unmodified, the reason logged.
D=$(ctl sbatch --parsable -N1 --comment "plain job" --export=PATH,SLURM_CONF --wrap 'env | grep ^PHASOR_ > '"$T/out/d.env"'; true') || fail "sbatch D"
check "D's comment" "plain job" "$(job "$D" comment)"
wait_for 150 ended "$D" || fail "D did not end"
check "D's PHASOR_ variables" "" "$(cat "$T/out/d.env")"
# A job that got its token while it waited, and starts while phasord is
# down: its commit fails, so its Prolog marks nothing and its tasks get no
# offset (they do not wait for one).
G1=$(block g1 -N 4) && G2=$(block g2 -p cpu -N 4) || fail "sbatch G blockers"
for j in $G1 $G2; do wait_for 150 state_is "$j" RUNNING || fail "blocker $j never ran"; done
F=$(ctl sbatch --parsable -N1 --comment "phasor" --export=PATH,SLURM_CONF --wrap 'env | grep ^PHASOR_ > '"$T/out/f.env"'; if [ -e /run/phasor/jobs/$SLURM_JOB_ID ]; then echo marked; else echo unmarked; fi > '"$T/out/f.mark") || fail "sbatch F"
[ -n "$(token_of "$F")" ] || fail "F carries no token"
sleep 0.5  # a poll binds its token
kill "$PHASORD_PID"; wait "$PHASORD_PID" 2>/dev/null
touch "$T/release.g1" "$T/release.g2"
wait_for 200 ended "$F" || fail "F did not run with phasord stopped"
check "F's mark on its host (its commit failed)" "unmarked" "$(cat "$T/out/f.mark")"
check "F's PHASOR_ variables" "" "$(cat "$T/out/f.env")"
wait_for 150 cluster_all_idle || fail "the cluster did not become idle: $(ctl sinfo -h -N -o '%N %t %E' | paste -sd';' -)"
# The controller must see the idle cluster too before E (else E gets a token
# without a pin: "N free nodes it may use"), and with phasord stopped each
# poll takes GetSnapshot's timeout (1 s) and the replans' (0.3 s each).
sleep 3

# The reason is phasord's silence ("controller: phasord: ... no reply") or,
# when E's submission meets a poll that waits out phasord's snapshot timeout,
# the hook's own bound ("controller: no answer in time"): either way one line.
unmodified_before=$(grep -c "phasor: job left unmodified: controller: " "$T/log/slurmctld.log")
E=$(ctl sbatch --parsable -N2 --comment "phasor" --wrap true) || fail "sbatch E with phasord stopped"
check "E's comment" "phasor" "$(job "$E" comment)"
check "E's node list" "" "$(job "$E" required_nodes)"
[ "$(grep -c "phasor: job left unmodified: controller: " "$T/log/slurmctld.log")" -gt "$unmodified_before" ] ||
  fail "no reason logged for E"
echo "ok: E went on unmodified: $(grep 'phasor: job left unmodified: controller: ' "$T/log/slurmctld.log" | tail -1 | sed 's/.*phasor: //')"

# Nothing of the metacharacters ran.
check "files made by a job field" "" "$(find "$T" -name pwned; find "$T" "$WD" -maxdepth 1 -name x; ls /pwned /x 2>/dev/null)"
echo "the whole test: $(($(date +%s) - T0)) s"
echo PASS
