#!/usr/bin/env python3
"""A runnable example training loop paced by phasord.

Each "iteration" computes for --compute-ms (Down phase) and then communicates
for --comm-ms (Up phase; here just a sleep standing in for all-reduce). The
IterationGate holds the top of each iteration until the job's slot.

    PYTHONPATH=build/integrations/python python3 integrations/python/examples/train_loop.py \
        --job a --requests ipc:///tmp/phasor/requests --offsets ipc:///tmp/phasor/offsets \
        --mode pace --iterations 20

Without --job the gate is configured by the PHASOR_* variables
(phasor.IterationGate.from_env(), docs/agents.md). Without a running phasord it
fails open after the fail-open bound and trains anyway.
"""

import argparse
import time

import phasor


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--job", help="job id (default: PHASOR_JOB and the other PHASOR_* variables)")
    p.add_argument("--requests", help="phasord request_endpoint (ROUTER)")
    p.add_argument("--offsets", help="phasord offset_endpoint (PUB)")
    p.add_argument("--mode", choices=("once", "pace"), default="once")
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--compute-ms", type=float, default=30.0)
    p.add_argument("--comm-ms", type=float, default=10.0)
    p.add_argument("--fail-open-ms", type=int, default=1000)
    args = p.parse_args()

    if args.job is None:
        gate = phasor.IterationGate.from_env()
    elif args.requests is None or args.offsets is None:
        p.error("--job needs --requests and --offsets")
    else:
        gate = phasor.IterationGate(args.job, args.requests, args.offsets, mode=args.mode,
                                    fail_open_ms=args.fail_open_ms)
    try:
        for step in range(args.iterations):
            r = gate.wait()
            start = time.time()
            time.sleep(args.compute_ms / 1e3)  # forward/backward
            time.sleep(args.comm_ms / 1e3)     # all-reduce burst
            print("step %d: waited %.1f ms aligned=%s failed_open=%s offset_version=%d iteration %.1f ms"
                  % (step, r["waited_us"] / 1e3, r["aligned"], r["failed_open"], r["offset_version"],
                     (time.time() - start) * 1e3), flush=True)
        print("stats: %s" % gate.stats(), flush=True)
    finally:
        gate.close()


if __name__ == "__main__":
    main()
