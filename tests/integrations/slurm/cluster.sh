# A real Slurm cluster on this host, in a temp dir (sourced by the Slurm test
# and benchmark; bash). Needs root and Debian 12's munge + Slurm 22.05.
#
#   source cluster.sh
#   cluster_start DIR PORT_BASE        # munged, slurmctld, 8 slurmd; sets SLURM_CONF
#   cluster_stop                       # every daemon by its recorded pid
#
# Layout: DIR/{munge,state,spool,log,run}, DIR/slurm.conf, DIR/topology.conf
# (tor1: n01-n04, tor2: n05-n08, under spine). Ports: slurmctld PORT_BASE+10,
# slurmd PORT_BASE+11..18. The caller may write DIR/job_submit.lua,
# DIR/prolog.sh, DIR/epilog.sh and DIR/task_prolog.sh before starting.

CLUSTER_PIDS=()

cluster_write_conf() {
  local dir=$1 base=$2 host
  host=$(hostname -s)
  cat >"$dir/slurm.conf" <<CONF
ClusterName=phasortest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$((base + 10))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/tree
JobSubmitPlugins=lua
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
Prolog=$dir/prolog.sh
Epilog=$dir/epilog.sh
TaskProlog=$dir/task_prolog.sh
PrologFlags=Alloc
NodeName=n[01-08] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$((base + 11))-$((base + 18))] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=gpu Nodes=n[01-08] Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
CONF
  cat >"$dir/topology.conf" <<'CONF'
# two leaves under one spine
SwitchName=tor1 Nodes=n[01-04]
SwitchName=tor2 Nodes=n[05-08]
SwitchName=spine Switches=tor[1-2]
CONF
  for f in prolog.sh epilog.sh task_prolog.sh; do
    [ -e "$dir/$f" ] || printf '#!/bin/sh\nexit 0\n' >"$dir/$f"
    chmod 755 "$dir/$f"
  done
  [ -e "$dir/job_submit.lua" ] || printf 'function slurm_job_submit(d, p, u) return slurm.SUCCESS end\nfunction slurm_job_modify(d, j, p, u) return slurm.SUCCESS end\n' >"$dir/job_submit.lua"
}

# Waits until `cmd...` succeeds, up to $1 tenths of a second.
cluster_wait() {
  local tries=$1
  shift
  while ! "$@" >/dev/null 2>&1; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || return 1
    sleep 0.1
  done
}

cluster_start() {
  local dir=$1 base=$2 n
  CLUSTER_DIR=$dir
  mkdir -p "$dir"/{munge,state,spool,log,run}
  chmod 755 "$dir/munge"
  chown munge:munge "$dir/munge" 2>/dev/null || true
  cluster_write_conf "$dir" "$base"
  export SLURM_CONF=$dir/slurm.conf
  mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null 2>&1 || return 1
  chown munge:munge "$dir/munge/munge.key" 2>/dev/null || true
  runuser -u munge -- /usr/sbin/munged --foreground --socket="$dir/munge/munge.socket" \
    --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" >/dev/null 2>&1 &
  CLUSTER_PIDS+=($!)
  cluster_wait 50 test -S "$dir/munge/munge.socket" || { echo "cluster: munged did not start" >&2; return 1; }
  /usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
  CLUSTER_PIDS+=($!)
  cluster_wait 100 scontrol ping || { echo "cluster: slurmctld did not answer" >&2; return 1; }
  for n in 01 02 03 04 05 06 07 08; do
    /usr/sbin/slurmd -D -N "n$n" -f "$SLURM_CONF" >"$dir/log/slurmd.n$n.out" 2>&1 &
    CLUSTER_PIDS+=($!)
  done
  cluster_wait 150 cluster_all_idle || { echo "cluster: nodes not idle" >&2; sinfo >&2; return 1; }
}

cluster_all_idle() {
  [ "$(sinfo -h -N -o '%t' | grep -c '^idle$')" = 8 ]
}

cluster_stop() {
  local pid p
  # Jobs first, so that no job step (slurmstepd outlives slurmd) is left behind.
  if [ "${#CLUSTER_PIDS[@]}" -gt 0 ] && scancel --user=root >/dev/null 2>&1; then
    cluster_wait 50 test -z "$(squeue -h 2>/dev/null)"
  fi
  for pid in "${CLUSTER_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${CLUSTER_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # Any job step of this cluster still running (its working or spool directory is in CLUSTER_DIR).
  if [ -n "${CLUSTER_DIR:-}" ]; then
    for p in /proc/[0-9]*; do
      [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
      case "$(readlink "$p/cwd" 2>/dev/null)" in "$CLUSTER_DIR"*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
    done
  fi
  CLUSTER_PIDS=()
}
