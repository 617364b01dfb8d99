#!/usr/bin/env python3
"""phasor's closed loop on a real testbed (docs/testbed.md): PyTorch gloo jobs
in network namespaces, racks joined by tbf-shaped links (netns.py), phasord
in a temp dir, `phasor profile --netdev` on the hosts' switch ports publishing
each job's measured profile to phasord, phasord ranking job B's candidates and
committing, phasor's Python agent gating every rank's iterations (train.py),
and `phasor simulate` predicting every scenario. Needs root.

    testbed.py --build build [--reps 5] [--iterations 12] [--out bench/testbed/results.md]
    testbed.py --build build --quick      the short check (exit 77: cannot run; docs/testbed.md)
    testbed.py --build build --ring-only  only the ring (--no-ring, --no-loop leave parts out)

Scenarios (each repetition, in this order; "pair" topology):
  alone-A, alone-B   each job on its own (phasor profile measures it, publishes to phasord)
  collide            A and B on the shared link, same start, no phasor
  once               phasord's ranking committed, both gated once (Cassini's mode)
  pace               the same, every iteration gated on its slot
on the "ring" topology (job R on four servers over two racks, beside job A):
  ring-alone-A, ring-alone-R   each alone, profiled (R in phasor's ring order)
  ring-alone-R-host-order      R alone in the host's order (every hop across the link)
  ring-host-order              R in the host's order beside A, no phasor
  ring-phasor-order            R in the order phasord returned (rank_order) beside A, no shifts
  ring-phasor-order-once/pace  the same with phasord's offsets committed, gated once / every iteration
and on the "loop" topology (three jobs pairwise sharing three links):
  loop-alone-X/Y/Z   once, before the repetitions: each job alone, profiled
  loop-collide       the three at once, same start, no phasor
  loop-once          phasord's ranking (cycle: true) committed, gated once
  loop-pace          the same, gated every iteration
"""

import argparse
import json
import math
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import netns  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch, python3-zmq, python3-protobuf
COMPUTE_S = 0.35
BYTES = 10_000_000
PACE_MARGIN = 1.06  # pace slots this much above the measured period (SPEC 7: "slightly above")


def now_us():
    return time.time_ns() // 1000


def log(msg):
    print("[testbed %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


class Failure(Exception):
    pass


# ------------------------------------------------------------------ processes --

class Proc:
    """A child with a line-reading stdout; stopped by its pid."""

    def __init__(self, argv, env=None, stdin=False, name=""):
        self.name = name or argv[0]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, env=env, text=False)
        self._buf = b""

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())
        self.p.stdin.flush()

    def line(self, timeout_s):
        deadline = time.time() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.time()
            if left <= 0:
                raise Failure("%s: no answer within %.0f s" % (self.name, timeout_s))
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    raise Failure("%s: exited (status %s)" % (self.name, self.p.wait()))
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def stop(self):
        if self.p.poll() is None:
            try:
                if self.p.stdin:
                    self.p.stdin.close()
                self.p.wait(timeout=3)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                pass
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.kill(self.p.pid, signal.SIGKILL)
                self.p.wait()


class Phasord:
    """phasord on ipc:// endpoints in a temp dir (ipc paths work across network
    namespaces), stopped by its pid. It runs phasord's shipped defaults (no
    periodic re-publishing, closed loop off: the measured configuration);
    `extra` adds config lines (closed_loop.py turns the loop on)."""

    def __init__(self, binary, tmp, metrics_listen="", extra="", name="phasord"):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.requests = "ipc://%s/requests" % self.dir
        self.profiles = "ipc://%s/profiles" % self.dir
        self.offsets = "ipc://%s/offsets" % self.dir
        config = os.path.join(self.dir, "phasord.yaml")
        with open(config, "w") as f:
            # The shipped defaults otherwise: only commits move the jobs here.
            f.write("request_endpoint: %s\nprofile_endpoint: %s\noffset_endpoint: %s\n"
                    "metrics_listen: '%s'\nallow_plain: true\nlog_level: warn\n"
                    "state_path: %s/state.db\n%s" % (self.requests, self.profiles, self.offsets, metrics_listen,
                                                     self.dir, extra))
        ready = os.path.join(self.dir, "ready.json")
        self.proc = subprocess.Popen([binary, "--config", config, "--ready-file", ready])
        deadline = time.time() + 15
        while not os.path.exists(ready):
            if time.time() > deadline or self.proc.poll() is not None:
                self.stop()
                raise Failure("phasord did not start")
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------------- jobs --

class Job:
    """A job of one train.py per host, rank i on hosts[i]. `port`: its store's
    (on rank 0's host). `ring_env`: join through phasor.torch, the ring
    exported as Slurm's TaskProlog does (PHASOR_RING_NODES: the hosts'
    addresses in rank order, PHASOR_NODE_RANK). `bytes`: its all_reduce.
    phasor profile measures it at `profile_host`'s switch port (default rank
    1's: what crosses the shaped link to it)."""

    def __init__(self, name, *hosts, port=netns.STORE_PORT, ring_env=False, nbytes=None, profile_host=None):
        self.name, self.hosts = name, tuple(hosts)
        self.port, self.ring_env = port, ring_env
        self.bytes = BYTES if nbytes is None else nbytes
        self.profile_host = profile_host or self.hosts[1]
        self.workers = []


def start_jobs(jobs, topo, d, env, tmp):
    train = os.path.join(HERE, "train.py")
    for job in jobs:
        master = topo["hosts"][job.hosts[0]]["ip"]
        ring = ",".join(topo["hosts"][h]["ip"] for h in job.hosts)
        for rank, host in enumerate(job.hosts):
            argv = ["ip", "netns", "exec", topo["hosts"][host]["ns"], PYTHON, train, "--job", job.name,
                    "--rank", str(rank), "--world", str(len(job.hosts)), "--master", master,
                    "--port", str(job.port), "--compute-s", str(COMPUTE_S), "--bytes", str(job.bytes),
                    "--requests", d.requests, "--offsets", d.offsets]
            rank_env = dict(env, PHASOR_RING_NODES=ring, PHASOR_NODE_RANK=str(rank)) if job.ring_env else env
            job.workers.append(Proc(argv, env=rank_env, stdin=True, name="%s rank %d" % (job.name, rank)))
    for job in jobs:
        for w in job.workers:
            if w.line(120) != "ready":
                raise Failure("%s: did not start" % w.name)


def stop_jobs(jobs):
    """End of stdin ends every rank; those still running after 3 s (a rank
    blocked in a collective whose peer is gone) are killed by pid."""
    workers = [w for job in jobs for w in job.workers]
    for w in workers:
        try:
            if w.p.stdin:
                w.p.stdin.close()
        except OSError:
            pass
    deadline = time.time() + 3
    for w in workers:
        try:
            w.p.wait(timeout=max(0.01, deadline - time.time()))
        except subprocess.TimeoutExpired:
            pass
    for w in workers:
        if w.p.poll() is None:
            w.p.kill()
            w.p.wait()
    for job in jobs:
        job.workers = []


def run_scenario(name, jobs, gate, iterations, tmp, lead_s=1.0):
    """One run of `jobs` together from a common start; returns {job: [records of rank 0]}."""
    start = now_us() + int(lead_s * 1e6)
    logs = {}
    for job in jobs:
        for rank, w in enumerate(job.workers):
            path = os.path.join(tmp, "%s.%s.%d.jsonl" % (name, job.name, rank))
            logs[(job.name, rank)] = path
            w.send({"run": name, "start_at_us": start, "iterations": iterations, "gate": gate, "log": path})
    timeout = lead_s + iterations * 3.0 + 10
    for job in jobs:
        for w in job.workers:
            got = w.line(timeout)
            if got != "done " + name:
                raise Failure("%s: %r instead of done" % (w.name, got))
    out = {}
    for job in jobs:
        records, stats = [], None
        with open(logs[(job.name, 0)]) as f:
            for line in f:
                r = json.loads(line)
                if "stats" in r:
                    stats = r["stats"]
                else:
                    records.append(r)
        out[job.name] = {"records": records, "stats": stats}
    return out


def iteration_times(records):
    """As the simulator counts them: the first from the (gated) start, then end to end
    (so pace waits count); seconds."""
    times = [(records[0]["end_us"] - records[0]["start_us"]) / 1e6]
    for prev, cur in zip(records, records[1:]):
        times.append((cur["end_us"] - prev["end_us"]) / 1e6)
    return times


def phases(records):
    """Compute and communication phase lengths (s) of the iterations after the first."""
    comp = [(r["compute_end_us"] - r["start_us"]) / 1e6 for r in records[1:]]
    comm = [(r["end_us"] - r["compute_end_us"]) / 1e6 for r in records[1:]]
    return comp, comm


# ------------------------------------------------------------------ profiling --

def start_profiler(build, topo, subjects, d, tmp, name, duration_s, interval_ms=10):
    """`phasor profile --netdev` in a switch namespace on the given hosts' ports,
    publishing each port's profile to phasord as the job's (subjects: host -> job)."""
    sw = topo["hosts"][next(iter(subjects))]["switch"]
    table = os.path.join(tmp, "%s.subjects" % name)
    with open(table, "w") as f:
        for host, job in subjects.items():
            # tx on the switch's port: what reaches the host's rank, after the
            # shaped link (its ingress port shows bursts above the link's rate,
            # shorter than the link's busy time).
            f.write("%s/tx job %s\n" % (topo["hosts"][host]["port"], job))
    ports = ",".join(topo["hosts"][h]["port"] for h in subjects)
    argv = ["ip", "netns", "exec", sw, os.path.join(build, "cmd/phasor"), "profile", "--netdev", ports,
            "--interval-ms", str(interval_ms), "--duration-s", str(duration_s), "--publish", d.profiles,
            "--publish-subjects", table]
    return Proc(argv, name="phasor profile (%s)" % name)


def collect_profiles(prof, subjects, topo):
    """The JSON lines of a finished `phasor profile`: {job: profile line}."""
    lines = []
    try:
        while True:
            lines.append(prof.line(30))
    except Failure:
        pass
    if prof.p.wait() != 0:
        raise Failure("phasor profile exited %d (profiles not delivered to phasord?)" % prof.p.returncode)
    out = {}
    by_port = {topo["hosts"][h]["port"] + "/tx": job for h, job in subjects.items()}
    for line in lines:
        try:
            j = json.loads(line)
        except ValueError:
            continue
        job = by_port.get(j.get("subject"))
        if job is not None and "profile" in j:
            out[job] = j
    for job in subjects.values():
        if job not in out:
            raise Failure("phasor profile found no periodic pattern for job %s: %s" % (job, lines))
    return out


def profile_alone(name, job, build, topo, d, tmp, iterations, interval_ms=10):
    """Runs `job` alone while `phasor profile` measures it on its rank 1's switch
    port (the traffic rank 0 sends, as the shared link delivers it)."""
    # Polling starts after two iterations and ends before the last one.
    skip_s = 1.0 + 2 * 0.6
    duration = max(3, int((iterations - 3) * 0.56))
    start = time.time()

    def launch():
        return start_profiler(build, topo, {job.profile_host: job.name}, d, tmp, name, duration, interval_ms)

    # The run blocks until done, so the profiler is started from a timer first.
    holder = {}
    timer = threading.Timer(skip_s, lambda: holder.setdefault("p", launch()))
    timer.start()
    try:
        result = run_scenario(name, [job], "off", iterations, tmp)
    finally:
        timer.join()
    prof = holder["p"]
    measured = collect_profiles(prof, {job.profile_host: job.name}, topo)[job.name]
    log("%s: phasor profile: period %.1f ms, up %.2f, peak %.3f Gbit/s, confidence %.2f (%.1f s after start)"
        % (name, measured["profile"]["period_us"] / 1e3, measured.get("up_fraction", float("nan")),
           measured.get("peak_gbps", float("nan")), measured.get("confidence", float("nan")), time.time() - start))
    return result, measured


# -------------------------------------------------------------------- ranking --

def round_half_up(x):
    return int(math.floor(x + 0.5))


def pace_quantum(periods_us):
    """A quantum q for which phasord's rounding (to the nearest multiple of q)
    gives every measured period the same slot period P, 3-9 % above the
    longest (pace slots must sit slightly above the natural period; phasord has
    no margin option, so the host asks for this quantum). Finest q first."""
    t_max = max(periods_us)
    target = int(math.ceil(PACE_MARGIN * t_max / 1000.0)) * 1000
    for k in range(24, 1, -1):
        q = target // k
        rounded = {round_half_up(t / q) * q for t in periods_us}
        if len(rounded) == 1:
            p = rounded.pop()
            if 1.03 * t_max <= p <= 1.09 * t_max:
                return q, p
    raise Failure("no quantum gives the periods %s one slot period above them" % periods_us)


def rank_and_commit(client, pb, links, jobs, candidates, commit, quantum_us):
    """RankRequest without profiles (phasord takes the probes'), then commits
    `commit`. Returns (ranked list as dicts, the commit's offsets)."""
    req = pb.RankRequest()
    for link in links:
        req.links.add(id=link, capacity_gbps=netns.RATE_GBPS)
    for job in jobs:
        req.jobs.add(id=job)
    for cid, placement in candidates:
        c = req.candidates.add(id=cid)
        for job, job_links in placement.items():
            entry = c.links[job]
            for link in job_links:
                entry.shares[link] = 1.0
    req.options.quantum_us = quantum_us
    reply = client.rank(req)
    ranked = [{"candidate": r.candidate, "score": r.score, "cycle": r.cycle,
               "shifts": {s.job: [s.shift_us, s.period_us] for s in r.shifts}} for r in reply.ranked]
    if reply.rejected:
        raise Failure("phasord rejected: %s" % [(r.candidate, r.reason) for r in reply.rejected])
    offsets = client.commit(reply.ranking_id, commit).offsets
    return ranked, {o.job: {"period_us": o.period_us, "shift_us": o.shift_us, "version": o.version}
                    for o in offsets}


# ----------------------------------------------------------------- simulation --

def simulate(build, tmp, name, links, jobs, calib, iterations, mode=None, quantum_us=None, same_start=True):
    """`phasor simulate` on a generated scenario; returns the run that models the
    case: `baseline` (every job starting at 0 when same_start) or `phasor`."""
    doc = {"links": [{"id": l, "capacity_gbps": netns.RATE_GBPS} for l in links], "jobs": [], "seed": 1}
    for job, job_links in jobs.items():
        c_us, comm_bytes = calib[job]
        j = {"id": job, "compute_us": round(c_us), "comm_bytes": round(comm_bytes), "nic_gbps": netns.RATE_GBPS,
             "links": dict(job_links) if isinstance(job_links, dict) else {l: 1.0 for l in job_links},
             "iterations": iterations}
        if same_start:
            j["start_us"] = 0
        doc["jobs"].append(j)
    if mode:
        doc["mode"] = mode
    if quantum_us:
        doc["quantum_us"] = quantum_us
    path = os.path.join(tmp, "sim-%s.json" % name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    r = subprocess.run([os.path.join(build, "cmd/phasor"), "simulate", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure("phasor simulate %s: %s" % (path, r.stderr.strip()))
    out = json.loads(r.stdout)
    run = out["runs"]["phasor" if mode else "baseline"]
    return {"scenario": doc, "jobs": {j["id"]: j["iteration_us"] for j in run["jobs"]},
            "job_mean_s": {j["id"]: j["iteration_us"]["mean"] / 1e6 for j in run["jobs"]},
            "mean_s": run["summary"]["mean_iteration_us"] / 1e6, "p99_s": run["summary"]["p99_iteration_us"] / 1e6,
            "p50_s": statistics.mean(j["iteration_us"]["p50"] for j in run["jobs"]) / 1e6}


def calibrate(alone_runs):
    """Per job: (compute_us, comm_bytes) such that a job alone in the fluid model
    runs at its measured alone iteration: compute = the measured compute phase,
    bytes = (mean iteration - compute) at the link's rate."""
    out = {}
    for job, runs in alone_runs.items():
        its, comp = [], []
        for records in runs:
            its += iteration_times(records)[1:]
            comp += phases(records)[0]
        c = statistics.mean(comp)
        u = statistics.mean(its) - c
        out[job] = (c * 1e6, u * netns.RATE_GBPS * 1e9 / 8)
    return out


# -------------------------------------------------------------------- results --

def percentile(values, p):
    v = sorted(values)
    rank = max(1, min(len(v), int(math.ceil(p / 100.0 * len(v)))))
    return v[rank - 1]


def summarize(per_rep):
    """per_rep: a list (one per repetition) of lists of iteration times of all
    jobs. Pooled mean/p50/p99 and the spread of the repetitions' means."""
    pooled = [t for rep in per_rep for t in rep]
    means = [statistics.mean(rep) for rep in per_rep]
    return {"mean": statistics.mean(pooled), "p50": percentile(pooled, 50), "p99": percentile(pooled, 99),
            "rep_means": means, "n": len(pooled)}


def table(results, alone_mean):
    rows = ["| scenario | reps | testbed mean / p50 / p99 (s) | mean of each rep (s) | x alone | "
            "simulated mean / p50 / p99 (s) | sim error (mean, p99) |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    errors = []
    for name, r in results:
        t, s = r["testbed"], r.get("sim")
        reps = ", ".join("%.3f" % m for m in t["rep_means"])
        ratio = t["mean"] / alone_mean[r["group"]]
        if s:
            e_mean = (s["mean_s"] - t["mean"]) / t["mean"] * 100
            e_p99 = (s["p99_s"] - t["p99"]) / t["p99"] * 100
            if not r.get("calibrated"):
                errors.append((name, e_mean, e_p99))
            sim = "%.3f / %.3f / %.3f" % (s["mean_s"], s["p50_s"], s["p99_s"])
            err = "%+.1f %%, %+.1f %%" % (e_mean, e_p99)
        else:
            sim, err = "-", "-"
        rows.append("| %s | %d | %.3f / %.3f / %.3f | %s | %.2fx | %s | %s |"
                    % (name, len(t["rep_means"]), t["mean"], t["p50"], t["p99"], reps, ratio, sim, err))
    return "\n".join(rows), errors



# ------------------------------------------------------------------ the ring --

# Job R's all_reduce: a ring of 4 sends 2 x 3/4 of it over each hop, the same
# 10 MB per hop as A's all_reduce of 10 MB over a ring of 2.
RING_BYTES = BYTES * 2 // 3 // 4 * 4
RING_LINKS = ["s1>s2", "s2>s1"]
# The 4-ring's hops move in lock step: at 10 ms the probe sees the gaps between
# steps and tbf's bursts after them (confidence 0.44-0.52, at phasord's floor
# of 0.5); at 20 ms 0.79-0.87.
RING_INTERVAL_MS = 20
# The host's order of R's servers: what Kubernetes does with pods spread over
# the emptiest nodes and ranks by pod index (r0 and r1 in rack 1, r2 and r3 in
# rack 2): every hop of the ring crosses the link.
RING_HOST_ORDER = ["r0", "r2", "r1", "r3"]


def crossings(order, rack_of):
    """Hops of the ring `order` from rack 1 to rack 2 (and back: the same count)."""
    n = len(order)
    return sum(1 for i in range(n) if rack_of[order[i]] == 1 and rack_of[order[(i + 1) % n]] == 2)


def rank_servers(client, pb, servers, quantum_us, ring_order, profiles=None):
    """A server-form RankRequest of one candidate `host` (job -> servers in the
    host's order) routed over phasord's fabric; `profiles` (job -> a measured
    profile line) are given in the request, the other jobs take the probes'.
    Returns the reply."""
    req = pb.RankRequest()
    for job in servers:
        j = req.jobs.add(id=job)
        if profiles and job in profiles:
            prof = profiles[job]["profile"]
            j.profile.period_us, j.profile.bin_us = prof["period_us"], prof["bin_us"]
            j.profile.gbps.extend(prof["gbps"])
    c = req.candidates.add(id="host")
    for job, hosts in servers.items():
        c.servers[job].servers.extend(hosts)
    req.options.quantum_us = quantum_us
    req.options.ring_order = ring_order
    reply = client.rank(req)
    if reply.rejected or not reply.ranked:
        raise Failure("phasord rejected: %s" % [(r.candidate, r.reason) for r in reply.rejected])
    return reply


def run_ring(a, build, env, tmp, phasor, pb):
    """One 4-server job R over two racks beside a running 2-server job A, both
    crossing the one shaped link: R in the host's interleaved rank order
    against the ring order phasord returns, without and with its shifts.
    Returns (rows for the table, what phasord answered, gate stats)."""
    fabric = os.path.join(tmp, "ring-fabric.yaml")
    with open(fabric, "w") as f:
        f.write(netns.fabric_yaml("ring"))
    d = Phasord(os.path.join(build, "cmd/phasord/phasord"), tmp, extra="topology_path: %s\n" % fabric,
                name="phasord-ring")
    client = phasor.Client(d.requests, timeout_ms=10000)
    jobs = []
    try:
        log("ring topology: 2 racks, one %s link; A on a0, a1; R on r0, r1 (rack 1), r2, r3 (rack 2)" % netns.RATE)
        topo = netns.up("ring", a.prefix)
        rack_of = {h: v["rack"] for h, v in topo["hosts"].items()}
        A = Job("A", "a0", "a1")
        r_host = Job("R", *RING_HOST_ORDER, port=netns.STORE_PORT + 1, ring_env=True, nbytes=RING_BYTES)
        jobs = [A, r_host]
        start_jobs(jobs, topo, d, env, tmp)
        # The order: phasord ranks R before R has run, on A's measured profile
        # (the same program; the order depends on which links are loaded).
        _, warm = profile_alone("ring-warmup-A", A, build, topo, d, tmp, a.iterations, RING_INTERVAL_MS)
        q0, _ = pace_quantum([warm["profile"]["period_us"]])
        first = rank_servers(client, pb, {"A": ["a0", "a1"], "R": RING_HOST_ORDER}, q0,
                             pb.RankOptions.RING_ORDER_PHASOR, profiles={"R": warm})
        order = list(first.ranked[0].rank_order["R"].servers)
        n_cross = crossings(order, rack_of)
        log("phasord's ring order for R: %s (%d crossing(s) per direction; the host's %s: %d)"
            % (order, n_cross, RING_HOST_ORDER, crossings(RING_HOST_ORDER, rack_of)))
        # Profiled where its ring enters rack 2.
        entry = next(order[(i + 1) % len(order)] for i in range(len(order))
                     if rack_of[order[i]] == 1 and rack_of[order[(i + 1) % len(order)]] == 2)
        r_ring = Job("R", *order, port=netns.STORE_PORT + 2, ring_env=True, nbytes=RING_BYTES, profile_host=entry)
        start_jobs([r_ring], topo, d, env, tmp)
        jobs.append(r_ring)

        names = ("alone-A", "alone-R", "alone-R-host-order", "host-order", "phasor-order", "phasor-order-once",
                 "phasor-order-pace")
        per = {k: {"A": [], "R": []} for k in names}
        alone_runs = {"A": [], "R": []}
        answers, gates = [], {"once": [], "pace": []}
        for rep in range(1, a.reps + 1):
            measured = {}
            for key, job in (("alone-A", A), ("alone-R", r_ring)):
                res, measured[job.name] = profile_alone("ring-%s-r%d" % (key, rep), job, build, topo, d, tmp,
                                                        a.iterations, RING_INTERVAL_MS)
                alone_runs[job.name].append(res[job.name]["records"])
                per[key][job.name].append(iteration_times(res[job.name]["records"]))
            res = run_scenario("ring-alone-R-host-order-r%d" % rep, [r_host], "off", a.iterations, tmp)
            per["alone-R-host-order"]["R"].append(iteration_times(res["R"]["records"]))
            periods = [measured[j]["profile"]["period_us"] for j in ("A", "R")]
            q, _ = pace_quantum(periods)
            servers = {"A": ["a0", "a1"], "R": RING_HOST_ORDER}
            mine = rank_servers(client, pb, servers, q, pb.RankOptions.RING_ORDER_PHASOR)
            theirs = rank_servers(client, pb, servers, q, pb.RankOptions.RING_ORDER_HOST)
            got = list(mine.ranked[0].rank_order["R"].servers)
            if got != order:
                raise Failure("rep %d: phasord's ring order %s differs from the first %s" % (rep, got, order))
            offsets = client.commit(mine.ranking_id, "host").offsets
            answers.append({"rep": rep, "periods_us": periods, "quantum_us": q, "order": got,
                            "score": mine.ranked[0].score, "host_order_score": theirs.ranked[0].score,
                            "offsets": {o.job: {"period_us": o.period_us, "shift_us": o.shift_us} for o in offsets}})
            for key, r_job, gate in (("host-order", r_host, "off"), ("phasor-order", r_ring, "off"),
                                     ("phasor-order-once", r_ring, "once"), ("phasor-order-pace", r_ring, "pace")):
                res = run_scenario("ring-%s-r%d" % (key, rep), [A, r_job], gate, a.iterations, tmp)
                for j in ("A", "R"):
                    per[key][j].append(iteration_times(res[j]["records"]))
                    if gate != "off":
                        gates[gate].append(res[j]["stats"])
            log("ring rep %d: order %s score %.4f (host's order %.4f); R mean: alone %.3f, host order %.3f, "
                "phasor order %.3f, + once %.3f, + pace %.3f s" % (
                    rep, got, answers[-1]["score"], answers[-1]["host_order_score"],
                    statistics.mean(per["alone-R"]["R"][-1]), statistics.mean(per["host-order"]["R"][-1]),
                    statistics.mean(per["phasor-order"]["R"][-1]), statistics.mean(per["phasor-order-once"]["R"][-1]),
                    statistics.mean(per["phasor-order-pace"]["R"][-1])))
        stop_jobs(jobs)
        jobs = []
        netns.down(a.prefix)

        calib = calibrate(alone_runs)
        q_last = answers[-1]["quantum_us"]
        ring_share = {l: float(n_cross) for l in RING_LINKS}
        host_share = {l: float(crossings(RING_HOST_ORDER, rack_of)) for l in RING_LINKS}
        sims = {
            "alone-A": simulate(build, tmp, "ring-alone-A", RING_LINKS, {"A": RING_LINKS}, calib, a.iterations),
            "alone-R": simulate(build, tmp, "ring-alone-R", RING_LINKS, {"R": ring_share}, calib, a.iterations),
            "alone-R-host-order": simulate(build, tmp, "ring-alone-R-host", RING_LINKS, {"R": host_share}, calib,
                                           a.iterations),
            "host-order": simulate(build, tmp, "ring-host-order", RING_LINKS, {"A": RING_LINKS, "R": host_share},
                                   calib, a.iterations),
            "phasor-order": simulate(build, tmp, "ring-phasor-order", RING_LINKS, {"A": RING_LINKS, "R": ring_share},
                                     calib, a.iterations),
            "phasor-order-once": simulate(build, tmp, "ring-phasor-order-once", RING_LINKS,
                                          {"A": RING_LINKS, "R": ring_share}, calib, a.iterations, mode="once",
                                          quantum_us=q_last),
            "phasor-order-pace": simulate(build, tmp, "ring-phasor-order-pace", RING_LINKS,
                                          {"A": RING_LINKS, "R": ring_share}, calib, a.iterations, mode="pace",
                                          quantum_us=q_last),
        }
        rows = []
        for key in names:
            rows.append({"name": key, "testbed": {j: summarize(per[key][j]) for j in ("A", "R") if per[key][j]},
                         "sim": sims[key], "calibrated": key in ("alone-A", "alone-R")})
        return rows, {"order": order, "host_order": RING_HOST_ORDER, "answers": answers, "calib": calib}, gates
    finally:
        stop_jobs(jobs)
        netns.down(a.prefix)
        client.close()
        d.stop()


def ring_table(rows):
    """R's and A's iteration times per scenario, x R alone (in phasor's order)
    and x A alone, beside the simulator's means."""
    alone = {"A": rows[0]["testbed"]["A"]["mean"], "R": rows[1]["testbed"]["R"]["mean"]}
    out = ["| scenario | R: testbed mean / p50 / p99 (s) | R x alone | A: testbed mean (s) | A x alone | "
           "simulated R / A mean (s) | sim error R, A (mean) |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        t, s = r["testbed"], r["sim"]
        cells = []
        if "R" in t:
            cells += ["%.3f / %.3f / %.3f" % (t["R"]["mean"], t["R"]["p50"], t["R"]["p99"]),
                      "%.2fx" % (t["R"]["mean"] / alone["R"])]
        else:
            cells += ["-", "-"]
        if "A" in t:
            cells += ["%.3f" % t["A"]["mean"], "%.2fx" % (t["A"]["mean"] / alone["A"])]
        else:
            cells += ["-", "-"]
        sim = s["job_mean_s"]
        cells.append(" / ".join("%.3f" % sim[j] if j in sim else "-" for j in ("R", "A")))
        errs = ["%+.1f %%" % ((sim[j] - t[j]["mean"]) / t[j]["mean"] * 100) for j in ("R", "A") if j in t and j in sim]
        cells.append(("calibrated: " if r["calibrated"] else "") + ", ".join(errs))
        out.append("| %s | %s |" % (r["name"], " | ".join(cells)))
    return "\n".join(out), alone

# ----------------------------------------------------------------------- main --

def check_environment(build):
    if os.geteuid() != 0:
        raise SystemExit("testbed: needs root (network namespaces, tc); run `sudo make testbed`")
    for binary in ("cmd/phasor", "cmd/phasord/phasord", "integrations/python/phasor/phasor_pb2.py"):
        if not os.path.exists(os.path.join(build, binary)):
            raise SystemExit("testbed: %s/%s is missing: build the targets phasor phasord phasor_python"
                             % (build, binary))
    r = subprocess.run([PYTHON, "-c", "import torch, zmq, google.protobuf"], capture_output=True)
    if r.returncode != 0:
        raise SystemExit("testbed: %s cannot import torch, zmq and protobuf (Debian: python3-torch "
                         "python3-zmq python3-protobuf)" % PYTHON)


def pair_jobs():
    return Job("A", "a0", "a1"), Job("B", "b0", "b1")


PAIR_LINKS = ["s1>s2", "s2>s1"]
LOOP_LINKS = ["s1>s2", "s2>s1", "s2>s3", "s3>s2", "s1>s3", "s3>s1"]
# Each loop job's directed links (both directions of the two links it crosses).
LOOP_PATHS = {"X": ["s1>s2", "s2>s3", "s3>s2", "s2>s1"],
              "Y": ["s2>s3", "s3>s1", "s1>s3", "s3>s2"],
              "Z": ["s3>s1", "s1>s2", "s2>s1", "s1>s3"]}


SKIP = 77  # ctest's SKIP_RETURN_CODE


def interrupt(signum, frame):
    """SIGTERM as Ctrl-C: the finally blocks stop the jobs and remove the namespaces."""
    raise KeyboardInterrupt()


def quick(a, build):
    """The short check (not in the test suite: not reliable, docs/testbed.md): job A alone
    (profiled by `phasor profile`, published), phasord's ranking of both jobs
    on the shared link (B, the same program, is given A's measured profile, so
    no second profiling run is needed), then A and B together without phasor
    (same start) and with phasor's once-mode offsets. Judged on iterations
    0-5 with loose thresholds: collide >= 1.1x alone, once <= 1.08x alone.
    Exit 0 passed, 1 failed, 77 could not run (not root, no namespaces, no
    PyTorch or binaries)."""
    if os.geteuid() != 0:
        print("testbed --quick: SKIP: needs root (network namespaces, tc)")
        return SKIP
    try:
        check_environment(build)
    except SystemExit as e:
        print("testbed --quick: SKIP: %s" % e)
        return SKIP
    prefix = a.prefix if a.prefix != "phtb-tb-" else "phtb-ct%d-" % os.getpid()
    tmp = tempfile.mkdtemp(prefix="phasor-testbed-quick-")
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "integrations/python"), OMP_NUM_THREADS="1")
    sys.path.insert(0, os.path.join(build, "integrations/python"))
    import phasor
    from phasor import phasor_pb2 as pb
    signal.signal(signal.SIGTERM, interrupt)
    d, jobs = None, []
    n = a.iterations
    try:
        try:
            topo = netns.up("pair", prefix)
        except RuntimeError as e:
            print("testbed --quick: SKIP: cannot create network namespaces: %s" % e)
            return SKIP
        d = Phasord(os.path.join(build, "cmd/phasord/phasord"), tmp)
        A, B = pair_jobs()
        jobs = [A, B]
        start_jobs(jobs, topo, d, env, tmp)
        res, measured = profile_alone("alone-A", A, build, topo, d, tmp, n)
        alone = statistics.mean(iteration_times(res["A"]["records"])[:6])
        client = phasor.Client(d.requests, timeout_ms=10000)
        req = pb.RankRequest()
        for link in PAIR_LINKS:
            req.links.add(id=link, capacity_gbps=netns.RATE_GBPS)
        req.jobs.add(id="A")
        jb = req.jobs.add(id="B")
        prof = measured["profile"]
        jb.profile.period_us, jb.profile.bin_us = prof["period_us"], prof["bin_us"]
        jb.profile.gbps.extend(prof["gbps"])
        c = req.candidates.add(id="shared")
        for job in ("A", "B"):
            for link in PAIR_LINKS:
                c.links[job].shares[link] = 1.0
        req.options.quantum_us = pace_quantum([prof["period_us"]])[0]
        reply = client.rank(req)
        offsets = client.commit(reply.ranking_id, "shared").offsets
        client.close()
        first = {}
        for name, gate in (("collide", "off"), ("once", "once")):
            r = run_scenario(name, jobs, gate, n, tmp)
            first[name] = statistics.mean(t for j in jobs for t in iteration_times(r[j.name]["records"])[:6])
        ok_c = first["collide"] >= 1.1 * alone
        ok_o = first["once"] <= 1.08 * alone
        print("testbed --quick: iterations 0-5: alone %.3f s; collide %.3f s (%.2fx, needs >= 1.10x: %s); "
              "once %.3f s (%.2fx, needs <= 1.08x: %s); shifts %s; load %.2f"
              % (alone, first["collide"], first["collide"] / alone, "ok" if ok_c else "FAIL", first["once"],
                 first["once"] / alone, "ok" if ok_o else "FAIL",
                 {o.job: (o.shift_us, o.period_us) for o in offsets}, os.getloadavg()[0]))
        return 0 if ok_c and ok_o else 1
    except Failure as e:
        print("testbed --quick: FAILED: %s" % e)
        return 1
    finally:
        stop_jobs(jobs)
        netns.down(prefix)
        if d is not None:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    ap = argparse.ArgumentParser(description="phasor on a real testbed (docs/testbed.md)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"))
    ap.add_argument("--prefix", default="phtb-tb-")
    ap.add_argument("--no-loop", action="store_true", help="skip the three-job loop")
    ap.add_argument("--no-ring", action="store_true", help="skip the 4-server ring beside a running job")
    ap.add_argument("--ring-only", action="store_true", help="only the 4-server ring")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (logs, scenarios)")
    ap.add_argument("--quick", action="store_true", help="the short check (exit 77: cannot run)")
    a = ap.parse_args(argv)
    build = os.path.abspath(a.build)
    if a.quick:
        if "--iterations" not in " ".join(argv):
            a.iterations = 8
        return quick(a, build)
    check_environment(build)
    wall0 = time.time()
    load0 = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="phasor-testbed-")
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "integrations/python"), OMP_NUM_THREADS="1")
    sys.path.insert(0, os.path.join(build, "integrations/python"))
    import phasor
    from phasor import phasor_pb2 as pb

    signal.signal(signal.SIGTERM, interrupt)

    d = None
    jobs = []
    results = []
    notes = []
    try:
        d = Phasord(os.path.join(build, "cmd/phasord/phasord"), tmp)
        client = phasor.Client(d.requests, timeout_ms=10000)

        rankings, calib, alone_mean = [], {}, {}
        gate_stats = {"once": [], "pace": [], "loop-once": [], "loop-pace": []}
        if not a.ring_only:
            # ---- two jobs, two racks, B's rank 1 in rack 2 (shared link) or rack 1 (not)
            log("pair topology: 2 racks, one %s link, 5 hosts" % netns.RATE)
            topo = netns.up("pair", a.prefix)
            A, B = pair_jobs()
            jobs = [A, B]
            start_jobs(jobs, topo, d, env, tmp)
            per = {k: [] for k in ("alone-A", "alone-B", "collide", "once", "pace")}
            alone_runs = {"A": [], "B": []}
            for rep in range(1, a.reps + 1):
                measured = {}
                for job in (A, B):
                    res, measured[job.name] = profile_alone("alone-%s-r%d" % (job.name, rep), job, build, topo, d,
                                                            tmp, a.iterations)
                    recs = res[job.name]["records"]
                    alone_runs[job.name].append(recs)
                    per["alone-" + job.name].append(iteration_times(recs))
                periods = [measured[j]["profile"]["period_us"] for j in ("A", "B")]
                q, slot_period = pace_quantum(periods)
                candidates = [("B-rack2", {"A": PAIR_LINKS, "B": PAIR_LINKS}),  # the host's first choice
                              ("B-rack1", {"A": PAIR_LINKS, "B": []})]          # B on b0 + b2: off the link
                ranked, offsets = rank_and_commit(client, pb, PAIR_LINKS, ["A", "B"], candidates, "B-rack2", q)
                rankings.append({"rep": rep, "periods_us": periods, "quantum_us": q, "ranked": ranked,
                                 "offsets": offsets})
                log("rep %d: measured periods %s us; quantum %d us -> slot period %d us; ranked %s; offsets %s"
                    % (rep, periods, q, slot_period,
                       [(r["candidate"], round(r["score"], 4)) for r in ranked], offsets))
                res = run_scenario("collide-r%d" % rep, jobs, "off", a.iterations, tmp)
                per["collide"].append([t for j in jobs for t in iteration_times(res[j.name]["records"])])
                for mode in ("once", "pace"):
                    res = run_scenario("%s-r%d" % (mode, rep), jobs, mode, a.iterations, tmp)
                    per[mode].append([t for j in jobs for t in iteration_times(res[j.name]["records"])])
                    for j in jobs:
                        st = res[j.name]["stats"]
                        gate_stats[mode].append(st)
                        if st["fail_opens"]:
                            notes.append("%s rep %d job %s: the gate failed open %d times"
                                         % (mode, rep, j.name, st["fail_opens"]))
                log("rep %d: collide %.3f, once %.3f, pace %.3f s (mean)" % (
                    rep, statistics.mean(per["collide"][-1]), statistics.mean(per["once"][-1]),
                    statistics.mean(per["pace"][-1])))
            stop_jobs(jobs)
            jobs = []
            netns.down(a.prefix)

            calib = calibrate(alone_runs)
            q_last = rankings[-1]["quantum_us"]
            sims = {
                "alone-A": simulate(build, tmp, "alone-A", PAIR_LINKS, {"A": PAIR_LINKS}, calib, a.iterations),
                "alone-B": simulate(build, tmp, "alone-B", PAIR_LINKS, {"B": PAIR_LINKS}, calib, a.iterations),
                "collide": simulate(build, tmp, "collide", PAIR_LINKS, {"A": PAIR_LINKS, "B": PAIR_LINKS}, calib,
                                    a.iterations),
                "once": simulate(build, tmp, "once", PAIR_LINKS, {"A": PAIR_LINKS, "B": PAIR_LINKS}, calib,
                                 a.iterations, mode="once", quantum_us=q_last),
                "pace": simulate(build, tmp, "pace", PAIR_LINKS, {"A": PAIR_LINKS, "B": PAIR_LINKS}, calib,
                                 a.iterations, mode="pace", quantum_us=q_last),
            }
            for name in ("alone-A", "alone-B", "collide", "once", "pace"):
                results.append((name, {"group": "pair", "testbed": summarize(per[name]), "sim": sims[name],
                                       "calibrated": name.startswith("alone")}))
            alone_mean = {"pair": statistics.mean(results[0][1]["testbed"]["rep_means"] +
                                                  results[1][1]["testbed"]["rep_means"])}
        loop_info = None

        # ---- three jobs pairwise sharing three links (a loop in the affinity graph)
        ring = None
        if not a.no_ring:
            rows, info, gates = run_ring(a, build, env, tmp, phasor, pb)
            ring = {"rows": rows, "info": info, "gates": gates}
            gate_stats["ring-once"], gate_stats["ring-pace"] = gates["once"], gates["pace"]

        if not a.no_loop and not a.ring_only:
            log("loop topology: 3 racks in a triangle, three %s links, 6 hosts" % netns.RATE)
            topo = netns.up("loop", a.prefix)
            X, Y, Z = Job("X", "x0", "x1"), Job("Y", "y0", "y1"), Job("Z", "z0", "z1")
            jobs = [X, Y, Z]
            start_jobs(jobs, topo, d, env, tmp)
            loop_alone = {}
            measured = {}
            lper = {"loop-alone": [], "loop-collide": [], "loop-once": [], "loop-pace": []}
            for job in jobs:
                res, measured[job.name] = profile_alone("loop-alone-%s" % job.name, job, build, topo, d, tmp,
                                                        a.iterations)
                loop_alone[job.name] = [res[job.name]["records"]]
                lper["loop-alone"].append(iteration_times(res[job.name]["records"]))
            periods = [measured[j.name]["profile"]["period_us"] for j in jobs]
            q, slot_period = pace_quantum(periods)
            loop_rankings = []
            for rep in range(1, a.reps + 1):
                ranked, offsets = rank_and_commit(client, pb, LOOP_LINKS, ["X", "Y", "Z"],
                                                  [("loop", LOOP_PATHS)], "loop", q)
                loop_rankings.append({"rep": rep, "ranked": ranked, "offsets": offsets})
                res = run_scenario("loop-collide-r%d" % rep, jobs, "off", a.iterations, tmp)
                lper["loop-collide"].append([t for j in jobs for t in iteration_times(res[j.name]["records"])])
                for mode in ("once", "pace"):
                    res = run_scenario("loop-%s-r%d" % (mode, rep), jobs, mode, a.iterations, tmp)
                    lper["loop-" + mode].append([t for j in jobs for t in iteration_times(res[j.name]["records"])])
                    for j in jobs:
                        gate_stats["loop-" + mode].append(res[j.name]["stats"])
                log("loop rep %d: ranked %s; collide %.3f, once %.3f, pace %.3f s (mean)" % (
                    rep, [(r["candidate"], round(r["score"], 4), r["cycle"], r["shifts"]) for r in ranked],
                    statistics.mean(lper["loop-collide"][-1]), statistics.mean(lper["loop-once"][-1]),
                    statistics.mean(lper["loop-pace"][-1])))
            stop_jobs(jobs)
            jobs = []
            netns.down(a.prefix)
            lcal = calibrate(loop_alone)
            lsims = {
                "loop-alone": None,
                "loop-collide": simulate(build, tmp, "loop-collide", LOOP_LINKS, LOOP_PATHS, lcal, a.iterations),
                "loop-once": simulate(build, tmp, "loop-once", LOOP_LINKS, LOOP_PATHS, lcal, a.iterations,
                                      mode="once", quantum_us=q),
                "loop-pace": simulate(build, tmp, "loop-pace", LOOP_LINKS, LOOP_PATHS, lcal, a.iterations,
                                      mode="pace", quantum_us=q),
            }
            # The alone prediction of each loop job (one at a time), pooled.
            alone_sims = [simulate(build, tmp, "loop-alone-%s" % j, LOOP_LINKS, {j: LOOP_PATHS[j]}, lcal,
                                   a.iterations) for j in ("X", "Y", "Z")]
            lsims["loop-alone"] = {"mean_s": statistics.mean(s["mean_s"] for s in alone_sims),
                                   "p50_s": statistics.mean(s["p50_s"] for s in alone_sims),
                                   "p99_s": max(s["p99_s"] for s in alone_sims)}
            # loop-alone: one run per job (they are the profiling runs), pooled as one "repetition" each.
            results.append(("loop-alone (X, Y, Z: 1 run each)",
                            {"group": "loop", "testbed": summarize(lper["loop-alone"]), "sim": lsims["loop-alone"],
                             "calibrated": True}))
            for name in ("loop-collide", "loop-once", "loop-pace"):
                results.append((name, {"group": "loop", "testbed": summarize(lper[name]), "sim": lsims[name]}))
            alone_mean["loop"] = results[-4][1]["testbed"]["mean"]
            loop_info = {"periods_us": periods, "quantum_us": q, "rankings": loop_rankings}
        client.close()

        wall = time.time() - wall0
        load1 = os.getloadavg()
        md, errors = table(results, alone_mean)
        write_results(a, md, errors, rankings, loop_info, gate_stats, notes, wall, load0, load1, calib, ring)
        if results:
            print(md)
        if errors:
            print("\nsimulator error vs testbed (mean, p99): " +
                  "; ".join("%s %+.1f %% / %+.1f %%" % e for e in errors))
        if ring:
            print(ring_table(ring["rows"])[0])
        print("wall time %.0f s; load average %.2f at start, %.2f at end (1 min)" % (wall, load0[0], load1[0]))
        print("written to %s" % a.out)
        return 0
    except Failure as e:
        log("FAILED: %s" % e)
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        stop_jobs(jobs)
        netns.down(a.prefix)
        if d is not None:
            d.stop()
        if a.keep:
            log("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def write_results(a, md, errors, rankings, loop_info, gate_stats, notes, wall, load0, load1, calib, ring):
    lines = ["# Testbed results (`make testbed`)", "",
             "Generated by bench/testbed/testbed.py on %s; %d repetitions of %d iterations per run; "
             "wall time %.0f s; load average (1 min) %.2f at start, %.2f at end on %d cores."
             % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), a.reps, a.iterations, wall, load0[0],
                load1[0], os.cpu_count()), "",
             "Iteration times of every rank-0 iteration of every job, pooled over the repetitions "
             "(the first iteration from its gated start, then end to end, as `phasor simulate` counts). "
             "`x alone`: the scenario's mean over the mean of the alone runs of its topology. The simulator's inputs are calibrated "
             "on the alone runs (so its alone rows match by construction).", ""]
    if rankings or loop_info:
        lines += [md, ""]
    if errors:
        worst = max(errors, key=lambda e: abs(e[1]))
        worst99 = max(errors, key=lambda e: abs(e[2]))
        lines += ["Simulator error against the testbed, over the rows not used for calibration: mean within "
                  "%.1f %% (worst: %s), p99 within %.1f %% (worst: %s)."
                  % (abs(worst[1]), worst[0], abs(worst99[2]), worst99[0]), ""]
    if rankings:
        lines += ["Calibration (compute us, bytes per iteration at %.1f Gbit/s): %s" % (
            netns.RATE_GBPS, {j: [round(c), round(b)] for j, (c, b) in calib.items()}), ""]
        lines += ["## phasord's rankings (pair: B's rank 1 in rack 2 shares the link, in rack 1 it does not)", ""]
    for r in rankings:
        lines.append("- rep %d: measured periods %s us, quantum %d us; ranked %s; committed B-rack2, offsets %s"
                     % (r["rep"], r["periods_us"], r["quantum_us"],
                        ", ".join("%s %.4f" % (c["candidate"], c["score"]) for c in r["ranked"]), r["offsets"]))
    if loop_info:
        lines += ["", "## The loop (X, Y, Z pairwise on three links)", "",
                  "Measured periods %s us, quantum %d us." % (loop_info["periods_us"], loop_info["quantum_us"])]
        for r in loop_info["rankings"]:
            lines.append("- rep %d: %s" % (r["rep"], ", ".join(
                "%s score %.4f cycle %s shifts %s" % (c["candidate"], c["score"], c["cycle"], c["shifts"])
                for c in r["ranked"])))
    if ring:
        md_ring, alone = ring_table(ring["rows"])
        info = ring["info"]
        lines += ["", "## The ring: a 4-server job beside a running one (R on r0, r1 in rack 1 and r2, r3 in rack 2; "
                  "A on a0, a1)", "",
                  "R's all_reduce is %d bytes (10 MB per hop of its 4-ring, as A's per hop). Rank 0's iterations of "
                  "each job, pooled over the repetitions; `x alone`: over R alone in phasor's order and A alone. "
                  "The host's order %s crosses the link on every hop (2 per direction); phasord's %s on %d per "
                  "direction. The simulator gives R that many hops' share on each direction."
                  % (RING_BYTES, ",".join(info["host_order"]), ",".join(info["order"]),
                     crossings(info["order"], netns.plan("ring")["hosts"])), "",
                  md_ring, ""]
        for r in info["answers"]:
            lines.append("- rep %d: periods %s us, quantum %d us; phasord's order %s scores %.4f, the host's order "
                         "%.4f; committed offsets %s" % (r["rep"], r["periods_us"], r["quantum_us"],
                                                         ",".join(r["order"]), r["score"], r["host_order_score"],
                                                         r["offsets"]))
        lines.append("- calibration (compute us, bytes per hop): %s" % {
            j: [round(c), round(b)] for j, (c, b) in info["calib"].items()})
    lines += ["", "## The gates", ""]
    for mode, stats in gate_stats.items():
        if stats:
            lines.append("- %s: %d gated iterations, %.2f s waited, %d slots missed, %d re-slots, %d fail-opens "
                         "(all runs, rank 0 of each job)" % (mode, sum(s["gated"] for s in stats),
                                                             sum(s["waited_us"] for s in stats) / 1e6,
                                                             sum(s["slots_missed"] for s in stats),
                                                             sum(s.get("reslots", 0) for s in stats),
                                                             sum(s["fail_opens"] for s in stats)))
    for n in notes:
        lines.append("- " + n)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
