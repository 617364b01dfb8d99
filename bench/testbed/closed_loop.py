#!/usr/bin/env python3
"""phasord's closed loop on the testbed, by hand (docs/testbed.md): A and B
profiled alone and ranked as in `make testbed`, then one `once` run while
`phasor profile` publishes both jobs' profiles from their rank-1 ports, so
phasord (with `realign: true`; the loop is off by default) compares each
observed phase (t0_epoch_us) with the job's offset and re-sends offsets beyond
realign_threshold_us, with a new version, which re-aligns the gates. Prints the offsets, the probe's
t0, each gate's statistics (which iterations it aligned) and phasord's
phase-error and re-alignment metrics (served on 127.0.0.1:27290). Root.

    bench/testbed/closed_loop.py [BUILD_DIR]
"""

import os
import shutil
import statistics
import sys
import tempfile
import threading
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import netns  # noqa: E402
import testbed  # noqa: E402

METRICS = "127.0.0.1:27290"


def main(build):
    build = os.path.abspath(build)
    testbed.check_environment(build)
    sys.path.insert(0, os.path.join(build, "integrations/python"))
    import phasor
    from phasor import phasor_pb2 as pb
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "integrations/python"), OMP_NUM_THREADS="1")
    tmp = tempfile.mkdtemp(prefix="phasor-testbed-cl-")
    prefix = "phtb-cl-"
    d, jobs = None, []
    try:
        topo = netns.up("pair", prefix)
        # The loop is off by default (docs/phasord.md): this run turns it on.
        d = testbed.Phasord(os.path.join(build, "cmd/phasord/phasord"), tmp, metrics_listen=METRICS,
                            extra="realign: true\n")
        A, B = testbed.pair_jobs()
        jobs = [A, B]
        testbed.start_jobs(jobs, topo, d, env, tmp)
        measured = {j.name: testbed.profile_alone("alone-" + j.name, j, build, topo, d, tmp, 12)[1] for j in jobs}
        q, _ = testbed.pace_quantum([measured[j]["profile"]["period_us"] for j in ("A", "B")])
        client = phasor.Client(d.requests)
        _, offsets = testbed.rank_and_commit(client, pb, testbed.PAIR_LINKS, ["A", "B"],
                                             [("shared", {"A": testbed.PAIR_LINKS, "B": testbed.PAIR_LINKS})],
                                             "shared", q)
        client.close()
        print("offsets", offsets)
        ports = {"a1": "A", "b1": "B"}
        holder = {}
        timer = threading.Timer(2.2, lambda: holder.setdefault(
            "p", testbed.start_profiler(build, topo, ports, d, tmp, "during", 5)))
        timer.start()
        res = testbed.run_scenario("once-closed-loop", jobs, "once", 14, tmp)
        timer.join()
        got = testbed.collect_profiles(holder["p"], ports, topo)
        for j in ("A", "B"):
            r = res[j]["records"]
            print("%s: probe t0 %s; gate aligned at iterations %s; %s; mean iteration %.3f s"
                  % (j, got[j]["profile"].get("t0_epoch_us"), [x["k"] for x in r if x["aligned"]], res[j]["stats"],
                     statistics.mean(testbed.iteration_times(r))))
        text = urllib.request.urlopen("http://%s/metrics" % METRICS, timeout=5).read().decode()
        for line in text.splitlines():
            if line.startswith(("phasord_phase_error_us", "phasord_realignments_total", "phasord_epoch_us")):
                print(line)
        return 0
    except testbed.Failure as e:
        print("closed_loop: FAILED: %s" % e, file=sys.stderr)
        return 1
    finally:
        testbed.stop_jobs(jobs)
        netns.down(prefix)
        if d is not None:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build"))
