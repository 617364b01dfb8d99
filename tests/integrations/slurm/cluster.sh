# A real Slurm cluster of separate "hosts" on this machine, in a temp dir
# (sourced by the Slurm test and benchmark; bash, root; Debian 12's munge and
# Slurm 22.05, iproute2, util-linux).
#
#   source cluster.sh
#   cluster_start DIR                # netns + mount ns per host, munged, slurmctld, 8 slurmd
#   on ctl CMD...                    # run CMD on the controller host (sbatch, squeue, ...)
#   on n03 CMD...                    # ... or on compute host n03
#   cluster_stop                     # every daemon by its pid, the namespaces
#
# Each host (ctl, n01..n08) is a network namespace of its own with one
# address (10.77.0.1 for ctl, 10.77.0.1X for nXX, on a bridge in ctl's
# namespace; nothing on the machine's own interfaces) and a mount namespace
# whose /run is a tmpfs of its own: its munged socket, slurmd spool, phasor's
# job marks and sockets are its own, as on separate machines. DIR is what
# they share (slurm.conf, keys, logs, the jobs' working directory), as a
# cluster shares a file system. Namespace names carry CLUSTER_NAME (default
# phasor-<pid>), so several clusters can run at once.
#
# Layout: DIR/{state,log,munge}, DIR/slurm.conf, DIR/topology.conf (tor1:
# n01 n02 n05 n06, tor2: n03 n04 n07 n08, under a spine), DIR/gres.conf.
# Partitions: gpu = n[01-04] (default), cpu = n[05-08] (MaxTime 60 minutes,
# limits enforced at submission); feature ib on n03 n04 n07 n08; GRES hca:1
# on n04 and n08. Nodes: 2 CPUs, 1000 MB. The caller may write
# DIR/job_submit.lua, DIR/prolog.sh, DIR/epilog.sh and DIR/task_prolog.sh
# before starting. CLUSTER_HOSTS lists the hosts; CLUSTER_ADDR[h] their
# addresses; CLUSTER_KEEPER[h] the pid that holds a host's namespaces.

CLUSTER_HOSTS=(ctl n01 n02 n03 n04 n05 n06 n07 n08)
CLUSTER_PIDS=()
declare -A CLUSTER_KEEPER CLUSTER_ADDR
: "${CLUSTER_NAME:=phasor-$$}"

cluster_write_conf() {
  local dir=$1
  cat >"$dir/slurm.conf" <<CONF
ClusterName=phasortest
SlurmctldHost=ctl(10.77.0.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=/run/slurm/spool
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
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
EnforcePartLimits=ALL
GresTypes=hca
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
NodeName=n01 NodeHostname=n01 NodeAddr=10.77.0.11 CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=n02 NodeHostname=n02 NodeAddr=10.77.0.12 CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=n03 NodeHostname=n03 NodeAddr=10.77.0.13 CPUs=2 RealMemory=1000 Feature=ib State=UNKNOWN
NodeName=n04 NodeHostname=n04 NodeAddr=10.77.0.14 CPUs=2 RealMemory=1000 Feature=ib Gres=hca:1 State=UNKNOWN
NodeName=n05 NodeHostname=n05 NodeAddr=10.77.0.15 CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=n06 NodeHostname=n06 NodeAddr=10.77.0.16 CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=n07 NodeHostname=n07 NodeAddr=10.77.0.17 CPUs=2 RealMemory=1000 Feature=ib State=UNKNOWN
NodeName=n08 NodeHostname=n08 NodeAddr=10.77.0.18 CPUs=2 RealMemory=1000 Feature=ib Gres=hca:1 State=UNKNOWN
PartitionName=gpu Nodes=n[01-04] Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
PartitionName=cpu Nodes=n[05-08] MaxTime=60 State=UP OverSubscribe=EXCLUSIVE
CONF
  cat >"$dir/gres.conf" <<'CONF'
NodeName=n04 Name=hca Count=1
NodeName=n08 Name=hca Count=1
CONF
  cat >"$dir/topology.conf" <<'CONF'
# two leaves under one spine; each partition spans both
SwitchName=tor1 Nodes=n[01-02],n[05-06]
SwitchName=tor2 Nodes=n[03-04],n[07-08]
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

# on HOST CMD...: CMD in HOST's network, mount and UTS namespaces.
on() {
  local host=$1
  shift
  nsenter -t "${CLUSTER_KEEPER[$host]}" -m -u -n -- "$@"
}

# cluster_daemon HOST LOG CMD...: starts a daemon on HOST in the background,
# its pid in CLUSTER_PIDS and CLUSTER_LAST_PID (nsenter and setpriv exec, and
# a simple command is not forked twice: the pid is the daemon's own, so
# stopping it by pid stops the daemon).
cluster_daemon() {
  local host=$1 log=$2
  shift 2
  nsenter -t "${CLUSTER_KEEPER[$host]}" -m -u -n -- "$@" >"$log" 2>&1 &
  CLUSTER_LAST_PID=$!
  CLUSTER_PIDS+=($!)
}

cluster_netns() { echo "$CLUSTER_NAME-$1"; }

cluster_start() {
  local dir=$1 h i ns ctl
  CLUSTER_DIR=$dir
  mkdir -p "$dir"/{state,log,munge}
  chmod 755 "$dir" "$dir/munge"
  cluster_write_conf "$dir"
  export SLURM_CONF=$dir/slurm.conf
  mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null 2>&1 || return 1
  chown munge:munge "$dir/munge" "$dir/munge/munge.key"
  chmod 700 "$dir/munge"
  chmod 600 "$dir/munge/munge.key"
  # The network: a bridge in ctl's namespace, a veth to each host.
  ctl=$(cluster_netns ctl)
  for h in "${CLUSTER_HOSTS[@]}"; do
    ip netns add "$(cluster_netns "$h")" || return 1
    ip -n "$(cluster_netns "$h")" link set lo up
  done
  ip -n "$ctl" link add br0 type bridge && ip -n "$ctl" link set br0 up || return 1
  ip -n "$ctl" addr add 10.77.0.1/24 dev br0
  CLUSTER_ADDR[ctl]=10.77.0.1
  i=0
  for h in "${CLUSTER_HOSTS[@]:1}"; do
    i=$((i + 1))
    ns=$(cluster_netns "$h")
    ip -n "$ctl" link add "v$h" type veth peer name eth0 netns "$ns" || return 1
    ip -n "$ctl" link set "v$h" master br0 up
    ip -n "$ns" addr add "10.77.0.1$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    CLUSTER_ADDR[$h]=10.77.0.1$i
  done
  # A keeper per host holds its mount and UTS namespaces: /run is its own tmpfs.
  for h in "${CLUSTER_HOSTS[@]}"; do
    # (nsenter, not ip netns exec, which remounts /sys and hides /sys/fs/cgroup from slurmd)
    nsenter --net="/run/netns/$(cluster_netns "$h")" -- unshare --mount --uts --propagation private -- sh -c \
      "mount -t tmpfs -o mode=755 tmpfs /run && mkdir -p /run/munge /run/slurm/spool && chown munge:munge /run/munge && hostname $h && exec sleep 1000000" &
    CLUSTER_KEEPER[$h]=$!
    CLUSTER_PIDS+=($!)
  done
  for h in "${CLUSTER_HOSTS[@]}"; do
    cluster_wait 50 cluster_host_up "$h" || { echo "cluster: host $h did not come up" >&2; return 1; }
  done
  # munged on every host, with the cluster's key, in the host's own /run.
  for h in "${CLUSTER_HOSTS[@]}"; do
    cluster_daemon "$h" "$dir/log/munged.$h.out" setpriv --reuid munge --regid munge --init-groups -- \
      /usr/sbin/munged --foreground --key-file="$dir/munge/munge.key" --pid-file=/run/munge/munged.pid \
      --log-file=/run/munge/munged.log --seed-file=/run/munge/munged.seed
  done
  for h in "${CLUSTER_HOSTS[@]}"; do
    cluster_wait 50 on "$h" test -S /run/munge/munge.socket.2 || { echo "cluster: munged on $h did not start" >&2; return 1; }
  done
  cluster_daemon ctl "$dir/log/slurmctld.out" /usr/sbin/slurmctld -D -i -f "$SLURM_CONF"
  cluster_wait 100 on ctl scontrol ping || { echo "cluster: slurmctld did not answer" >&2; return 1; }
  for h in "${CLUSTER_HOSTS[@]:1}"; do
    cluster_daemon "$h" "$dir/log/slurmd.$h.out" /usr/sbin/slurmd -D -N "$h" -f "$SLURM_CONF"
  done
  cluster_wait 200 cluster_all_idle || { echo "cluster: nodes not idle" >&2; on ctl sinfo >&2; return 1; }
}

# cluster_phasord_conf DIR: DIR/phasord.yaml for a phasord on ctl, every
# socket on 10.77.0.1 with CURVE: keys DIR/keys/phasord.{secret,pub}, the
# client keys allowed in DIR/keys/phasord.allowed; DIR/topology.conf as its
# fabric. Extra YAML lines on stdin are appended.
cluster_phasord_conf() {
  local dir=$1
  {
    cat <<CONF
request_endpoint: tcp://10.77.0.1:7410
profile_endpoint: tcp://10.77.0.1:7411
offset_endpoint: tcp://10.77.0.1:7412
metrics_listen: ""
curve:
  server_secret_key_file: $dir/keys/phasord.secret
  server_public_key_file: $dir/keys/phasord.pub
  allowed_clients_file: $dir/keys/phasord.allowed
state_path: $dir/phasord.db
topology_path: $dir/topology.conf
CONF
    cat
  } >"$dir/phasord.yaml"
}

cluster_host_up() { [ "$(on "$1" hostname 2>/dev/null)" = "$1" ]; }

# Every node free and no job in the queue. A node the backfill scheduler
# planned for a job that has since run and ended shows 'plnd' until its next
# cycle (bf_interval, 30 s by default): free all the same.
cluster_all_idle() {
  local queue
  queue=$(on ctl squeue -h 2>/dev/null) && [ -z "$queue" ] &&
    [ "$(on ctl sinfo -h -N -o '%t' | grep -c '^\(idle\|plnd\)$')" = 8 ]
}

cluster_stop() {
  local pid p h
  # Jobs first, so that no job step (slurmstepd outlives slurmd) is left behind.
  if [ -n "${CLUSTER_KEEPER[ctl]:-}" ] && on ctl scancel --user=root >/dev/null 2>&1; then
    cluster_wait 50 test -z "$(on ctl squeue -h -t R,CG 2>/dev/null)"
  fi
  for pid in "${CLUSTER_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${CLUSTER_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # Any job step of this cluster still running (its working directory is in CLUSTER_DIR).
  if [ -n "${CLUSTER_DIR:-}" ]; then
    for p in /proc/[0-9]*; do
      [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
      case "$(readlink "$p/cwd" 2>/dev/null)" in "$CLUSTER_DIR"*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
    done
  fi
  for h in "${CLUSTER_HOSTS[@]}"; do ip netns del "$(cluster_netns "$h")" 2>/dev/null; done
  CLUSTER_PIDS=()
  CLUSTER_KEEPER=()
}
