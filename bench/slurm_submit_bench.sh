#!/bin/bash
# The submission path with phasor's hook, on a real Slurm cluster of
# separate hosts (tests/integrations/slurm/cluster.sh: namespaces; phasord,
# the controller and slurmctld on ctl, CURVE over TCP between them as in a
# deployment): `sbatch` wall time for jobs that opt in and are placed by
# phasor at submission (the whole path: hook, controller, phasord's ranking,
# the pin), against the same jobs without the opt-in (the hook returns at
# once), interleaved in rounds on an idle cluster, so both see the same
# Slurm; and the hook's own time, as it logs it, for every opted-in
# submission (its bound is PHASOR_TIMEOUT_MS = 50 ms; a submission past it
# goes on unmodified and is counted here).
#
# A round: plain, opted-in, plain, opted-in (-N 2 each, sleeping jobs: eight
# nodes), then all cancelled and the cluster idle again. Needs root.
# usage: bench/slurm_submit_bench.sh [BUILD_DIR] [ROUNDS=50]
set -u
cd "$(dirname "$0")/.."
SRC=$(pwd)
BUILD=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-50}
PHASOR=$BUILD/cmd/phasor/phasor
[ -x "$PHASOR" ] || PHASOR=$BUILD/cmd/phasor
source "$SRC/tests/integrations/slurm/cluster.sh"
export CLUSTER_NAME="phb$$"
T=$(mktemp -d /tmp/phasor-slurm-bench-XXXXXX)
chmod 755 "$T"
cd "$T"
cleanup() {
  cluster_stop
  rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$T/keys"
for k in phasord ctlclient; do "$PHASOR" keygen --out "$T/keys/$k" >/dev/null; done
cp "$T/keys/ctlclient.pub" "$T/keys/phasord.allowed"
t0=$(date +%s%N)
cluster_start "$T" || { echo "cluster did not start" >&2; exit 1; }
echo "cluster start-up (9 hosts, munged, slurmctld, 8 slurmd idle): $((($(date +%s%N) - t0) / 1000000)) ms"
echo "log_level: warn" | cluster_phasord_conf "$T"
cluster_daemon ctl "$T/phasord.log" "$BUILD/cmd/phasord/phasord" --config "$T/phasord.yaml"
on ctl mkdir -p /run/phasor
cluster_daemon ctl "$T/controller.log" "$PHASOR" slurm serve --topology "$T/topology.conf" \
  --phasord tcp://10.77.0.1:7410 --server-key "$T/keys/phasord.pub" --client-keys "$T/keys/ctlclient" \
  --socket /run/phasor/slurm.sock --state "$T/state.json" --log-level warn
controller_ready() { printf 'op=ping\n' | on ctl "$BUILD/integrations/slurm/phasor-slurm-ask" /run/phasor/slurm.sock 1000 | grep -q '^polled=1$'; }
cluster_wait 150 controller_ready || { echo "controller did not start" >&2; exit 1; }
sed -e "s|^local PHASOR_ASK = .*|local PHASOR_ASK = \"$BUILD/integrations/slurm/phasor-slurm-ask\"|" \
  "$SRC/integrations/slurm/job_submit.lua" >"$T/job_submit.lua"
sleep 1.5  # slurmctld re-reads job_submit.lua when it changes

submit() {  # submit FILE COMMENT: one sbatch, its wall time (us) appended to FILE
  local s e
  s=$(date +%s%N)
  on ctl sbatch -N2 --comment "$2" --wrap "sleep 300" >/dev/null || echo "sbatch failed" >&2
  e=$(date +%s%N)
  echo $(((e - s) / 1000)) >>"$1"
}
: >"$T/without.us"
: >"$T/with.us"
for r in $(seq "$ROUNDS"); do
  submit "$T/without.us" "plain"
  submit "$T/with.us" "phasor"
  submit "$T/without.us" "plain"
  submit "$T/with.us" "phasor"
  on ctl scancel -u root
  cluster_wait 300 cluster_all_idle || { echo "the cluster did not become idle" >&2; exit 1; }
done
grep -c "phasor: job '" "$T/log/slurmctld.log" >"$T/pinned"
grep "lua: phasor: job" "$T/log/slurmctld.log" | sed -n 's/.* (\([0-9.]*\) ms)$/\1/p' >"$T/hook.ms"
grep "phasor: job left unmodified" "$T/log/slurmctld.log" | sed 's/.*phasor: /  /' | sort | uniq -c | head -5

# The hook's question alone, from the helper (phasor-slurm-ask: fork/exec, the
# controller, phasord's ranking), outside slurmctld, with nothing submitted:
# in fours (a proposal no job takes up holds its nodes for a second).
: >"$T/ask.us"
for i in $(seq "$ROUNDS"); do
  [ $((i % 4)) = 1 ] && [ "$i" != 1 ] && sleep 1.2
  s=$(date +%s%N)
  printf 'op=submit\nmin_nodes=2\nmax_nodes=2\ncomment=phasor\n' |
    on ctl "$BUILD/integrations/slurm/phasor-slurm-ask" /run/phasor/slurm.sock 1000 >/dev/null
  e=$(date +%s%N)
  echo $(((e - s) / 1000)) >>"$T/ask.us"
done
python3 - "$T/without.us" "$T/with.us" "$T/hook.ms" "$T/ask.us" "$(cat "$T/pinned")" "$(uptime)" <<'PY'
import sys
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
without = [int(x) / 1000 for x in open(sys.argv[1])]
with_ = [int(x) / 1000 for x in open(sys.argv[2])]
hook = [float(x) for x in open(sys.argv[3]) if x.strip()]
ask = [int(x) / 1000 for x in open(sys.argv[4])]
for name, v in (("sbatch, plain (hook returns at once)", without), ("sbatch, opted in, placed at submission", with_)):
    print("%-42s n=%d  p50 %.1f ms  p99 %.1f ms  max %.1f ms" % (name, len(v), pct(v, 50), pct(v, 99), max(v)))
print("added by phasor: p50 %.1f ms, p99 %.1f ms" % (pct(with_, 50) - pct(without, 50), pct(with_, 99) - pct(without, 99)))
if hook:
    print("the hook's own time (its log): n=%d  p50 %.1f ms  p99 %.1f ms  max %.1f ms; over the 50 ms bound: %d"
          % (len(hook), pct(hook, 50), pct(hook, 99), max(hook), sum(1 for h in hook if h > 50)))
print("pinned at submission: %s of %d" % (sys.argv[5], len(with_)))
print("helper -> controller -> phasord alone (incl. fork/exec): p50 %.1f ms  p99 %.1f ms" % (pct(ask, 50), pct(ask, 99)))
print("machine: %s" % sys.argv[6].strip())
PY
