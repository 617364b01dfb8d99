#!/usr/bin/python3
"""phasord under the largest requests its limits allow and under requests over them.

Starts a real phasord (ipc:// endpoints, default limits, solver_threads 2)
in a temp dir, sends N maximal-but-legal RankRequests and then N over-limit
ones (cycling through five limits: candidates per request, jobs x links, bins per
job pattern, jobs per request, evaluation budget), and reports per phase: replies by
code, reply latency (p50, p99, max; per limit for the over-limit phase: the
latency includes encoding and sending the request, 4 MB for jobs x links)
and phasord's resident memory (VmRSS
after the phase, VmHWM = peak so far) from /proc. Stops phasord by pid.

  bench/phasord_limits.py [--phasord build/cmd/phasord/phasord] [--requests 1000] [--maximal-links 8]

The maximal request: 2 jobs on --maximal-links links, each link holding both
jobs with periods 1048576 us and 1015808 us at a 1 us quantum and
options.max_bins at limits.max_job_bins (2^20): each job pattern has the
largest legal bin count and each link circle 1,015,808 bins, so the request
allocates and solves as much as one request may, answered within
limits.deadline_ms.
"""
import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--phasord", default=os.path.join(root, "build", "cmd", "phasord", "phasord"))
    p.add_argument("--python-root", default=os.path.join(root, "build", "integrations", "python"),
                   help="folder holding the built phasor Python package (phasor_pb2)")
    p.add_argument("--requests", type=int, default=1000, help="requests per phase")
    p.add_argument("--maximal-links", type=int, default=8, help="links of the maximal request")
    return p.parse_args()


def memory_kib(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def percentile(values, p):
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def main():
    args = parse_args()
    if args.requests < 1:
        sys.exit("phasord_limits: --requests must be >= 1")
    if not (os.path.isfile(args.phasord) and os.access(args.phasord, os.X_OK)):
        sys.exit("phasord_limits: no phasord at %s (build it: cmake --build build --target phasord)" % args.phasord)
    sys.path.insert(0, args.python_root)
    try:
        import phasor
        from phasor import phasor_pb2 as pb
    except ImportError as e:
        sys.exit("phasord_limits: cannot import the phasor Python package from %s: %s" % (args.python_root, e))

    def job(j, period, up):
        m = j
        m.profile.period_us = period
        m.profile.square.up_us = up
        m.profile.square.up_gbps = 40
        return m

    def maximal():
        r = pb.RankRequest()
        for l in range(args.maximal_links):
            r.links.add(id="l%d" % l, capacity_gbps=100)
        job(r.jobs.add(id="a"), 1048576, 400000)
        job(r.jobs.add(id="b"), 1015808, 400000)
        c = r.candidates.add(id="c")
        for j in ("a", "b"):
            for l in range(args.maximal_links):
                c.links[j].shares["l%d" % l] = 1.0
        r.options.quantum_us = 1
        r.options.max_bins = 1 << 20
        return r

    def over_limit(i):
        r = pb.RankRequest()
        kind = i % 5
        r.links.add(id="l", capacity_gbps=100)
        job(r.jobs.add(id="a"), 200000, 80000)
        job(r.jobs.add(id="b"), 300000, 80000)
        if kind == 0:  # 257 candidates (max_candidates_per_request 256)
            for k in range(257):
                c = r.candidates.add(id="c%d" % k)
                c.links["a"].shares["l"] = 1.0
                c.links["b"].shares["l"] = 1.0
            return r, "candidates"
        c = r.candidates.add(id="c")
        c.links["a"].shares["l"] = 1.0
        c.links["b"].shares["l"] = 1.0
        if kind == 1:  # jobs x links over 2^22: 4096 jobs x 1025 links
            del r.jobs[:]
            del r.links[:]
            for l in range(1025):
                r.links.add(id="%d" % l, capacity_gbps=1)
            for j in range(4096):
                job(r.jobs.add(id="%d" % j), 1000, 100)
            return r, "max_jobs_x_links"
        if kind == 2:  # options.max_bins over max_job_bins
            r.options.max_bins = (1 << 20) + 1
            return r, "max_job_bins"
        if kind == 3:  # 4097 jobs (max_jobs_per_request 4096)
            for j in range(4097 - 2):
                job(r.jobs.add(id="j%d" % j), 1000, 100)
            return r, "4096 jobs"
        r.options.exact_max_evaluations = 100000001  # over max_evaluations
        return r, "max_evaluations"

    tmp = tempfile.mkdtemp(prefix="phasord-limits-")
    config = os.path.join(tmp, "phasord.yaml")
    with open(config, "w") as f:
        f.write("request_endpoint: ipc://%s/r\nprofile_endpoint: ipc://%s/p\noffset_endpoint: ipc://%s/o\n"
                "metrics_listen: ''\nallow_plain: true\nlog_level: error\nstate_path: %s/state.db\n"
                % (tmp, tmp, tmp, tmp))
    ready = os.path.join(tmp, "ready")
    proc = subprocess.Popen([args.phasord, "--config", config, "--ready-file", ready])
    try:
        deadline = time.time() + 20
        while not os.path.exists(ready):
            if proc.poll() is not None or time.time() > deadline:
                sys.exit("phasord_limits: phasord did not start")
            time.sleep(0.02)
        start_mem = memory_kib(proc.pid)
        print("phasord pid %d started: VmRSS %d KiB" % (proc.pid, start_mem["VmRSS"]))
        client = phasor.Client("ipc://%s/r" % tmp, timeout_ms=60000)
        phases = [("maximal-but-legal", lambda i: (maximal(), None)), ("over-limit", over_limit)]
        for name, make in phases:
            codes = collections.Counter()
            named = collections.Counter()
            latencies = []
            by_limit = collections.defaultdict(list)
            sizes = {}
            began = time.time()
            for i in range(args.requests):
                request, limit = make(i)
                if limit is not None:
                    sizes[limit] = request.ByteSize()
                t = time.perf_counter()
                try:
                    client.rank(request)
                    codes["OK"] += 1
                except phasor.PhasorError as e:
                    codes[e.code] += 1
                    if limit is not None and limit.split()[0] in e.message:
                        named[limit] += 1
                    elif limit is not None and os.environ.get("PHASOR_BENCH_VERBOSE"):
                        print("  %s: %s %s" % (limit, e.code, e.message[:200]))
                latencies.append((time.perf_counter() - t) * 1e3)
                if limit is not None:
                    by_limit[limit].append(latencies[-1])
                if (i + 1) % max(1, args.requests // 10) == 0:
                    print("  %s: %d/%d (%.0f s)" % (name, i + 1, args.requests, time.time() - began), flush=True)
            mem = memory_kib(proc.pid)
            print("%s: %d requests in %.1f s; replies %s" % (name, args.requests, time.time() - began, dict(codes)))
            if named:
                print("  the error named the limit: %s" % dict(named))
            print("  latency ms: p50 %.2f  p99 %.2f  max %.2f" %
                  (percentile(latencies, 50), percentile(latencies, 99), max(latencies)))
            for limit, values in sorted(by_limit.items()):
                print("    %-18s p50 %.2f  p99 %.2f ms (%d requests, %d bytes each)" %
                      (limit, percentile(values, 50), percentile(values, 99), len(values), sizes[limit]))
            print("  phasord VmRSS %d KiB, VmHWM (peak so far) %d KiB" % (mem["VmRSS"], mem["VmHWM"]))
        client.health()  # still serving
        print("phasord still answers Health after both phases")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
