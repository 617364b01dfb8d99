#!/usr/bin/env python3
"""phasor's closed loop on a real testbed (docs/testbed.md): PyTorch gloo jobs
in network namespaces, racks joined by tbf-shaped links (netns.py), phasord
in a temp dir, `phasor profile --netdev` on the hosts' switch ports publishing
each job's measured profile to phasord, phasord ranking job B's candidates and
committing, phasor's Python agent gating every rank's iterations (train.py),
and `phasor simulate` predicting every scenario. Needs root.

    testbed.py --build build [--reps 5] [--iterations 12] [--out bench/testbed/results.md]
    testbed.py --build build --quick      the short check (exit 77: cannot run; docs/testbed.md)

Scenarios (each repetition, in this order; "pair" topology):
  alone-A, alone-B   each job on its own (phasor profile measures it, publishes to phasord)
  collide            A and B on the shared link, same start, no phasor
  once               phasord's ranking committed, both gated once (Cassini's mode)
  pace               the same, every iteration gated on its slot
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

    def __init__(self, binary, tmp, metrics_listen="", extra=""):
        self.dir = os.path.join(tmp, "phasord")
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
    """A two-rank job: rank 0 on host h0, rank 1 on host h1; one train.py each."""

    def __init__(self, name, h0, h1):
        self.name, self.hosts = name, (h0, h1)
        self.workers = []


def start_jobs(jobs, topo, d, env, tmp):
    train = os.path.join(HERE, "train.py")
    for job in jobs:
        master = topo["hosts"][job.hosts[0]]["ip"]
        for rank, host in enumerate(job.hosts):
            argv = ["ip", "netns", "exec", topo["hosts"][host]["ns"], PYTHON, train, "--job", job.name,
                    "--rank", str(rank), "--master", master, "--compute-s", str(COMPUTE_S),
                    "--bytes", str(BYTES), "--requests", d.requests, "--offsets", d.offsets]
            job.workers.append(Proc(argv, env=env, stdin=True, name="%s rank %d" % (job.name, rank)))
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

def start_profiler(build, topo, subjects, d, tmp, name, duration_s):
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
            "--interval-ms", "10", "--duration-s", str(duration_s), "--publish", d.profiles,
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


def profile_alone(name, job, build, topo, d, tmp, iterations):
    """Runs `job` alone while `phasor profile` measures it on its rank 1's switch
    port (the traffic rank 0 sends, as the shared link delivers it)."""
    # Polling starts after two iterations and ends before the last one.
    skip_s = 1.0 + 2 * 0.6
    duration = max(3, int((iterations - 3) * 0.56))
    start = time.time()

    def launch():
        return start_profiler(build, topo, {job.hosts[1]: job.name}, d, tmp, name, duration)

    # The run blocks until done, so the profiler is started from a timer first.
    holder = {}
    timer = threading.Timer(skip_s, lambda: holder.setdefault("p", launch()))
    timer.start()
    try:
        result = run_scenario(name, [job], "off", iterations, tmp)
    finally:
        timer.join()
    prof = holder["p"]
    measured = collect_profiles(prof, {job.hosts[1]: job.name}, topo)[job.name]
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
             "links": {l: 1.0 for l in job_links}, "iterations": iterations}
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

        # ---- two jobs, two racks, B's rank 1 in rack 2 (shared link) or rack 1 (not)
        log("pair topology: 2 racks, one %s link, 5 hosts" % netns.RATE)
        topo = netns.up("pair", a.prefix)
        A, B = pair_jobs()
        jobs = [A, B]
        start_jobs(jobs, topo, d, env, tmp)
        per = {k: [] for k in ("alone-A", "alone-B", "collide", "once", "pace")}
        alone_runs = {"A": [], "B": []}
        rankings = []
        gate_stats = {"once": [], "pace": [], "loop-once": [], "loop-pace": []}
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
        if not a.no_loop:
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
        write_results(a, md, errors, rankings, loop_info, gate_stats, notes, wall, load0, load1, calib, tmp)
        print(md)
        print("\nsimulator error vs testbed (mean, p99): " +
              "; ".join("%s %+.1f %% / %+.1f %%" % e for e in errors))
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


def write_results(a, md, errors, rankings, loop_info, gate_stats, notes, wall, load0, load1, calib, tmp):
    lines = ["# Testbed results (`make testbed`)", "",
             "Generated by bench/testbed/testbed.py on %s; %d repetitions of %d iterations per run; "
             "wall time %.0f s; load average (1 min) %.2f at start, %.2f at end on %d cores."
             % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), a.reps, a.iterations, wall, load0[0],
                load1[0], os.cpu_count()), "",
             "Iteration times of every rank-0 iteration of every job, pooled over the repetitions "
             "(the first iteration from its gated start, then end to end, as `phasor simulate` counts). "
             "`x alone`: the scenario's mean over the mean of the alone runs of its topology. The simulator's inputs are calibrated "
             "on the alone runs (so its alone rows match by construction).", "", md, ""]
    if errors:
        worst = max(errors, key=lambda e: abs(e[1]))
        worst99 = max(errors, key=lambda e: abs(e[2]))
        lines += ["Simulator error against the testbed, over the rows not used for calibration: mean within "
                  "%.1f %% (worst: %s), p99 within %.1f %% (worst: %s)."
                  % (abs(worst[1]), worst[0], abs(worst99[2]), worst99[0]), ""]
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
