#!/usr/bin/env python3
"""One rank of a testbed training job (docs/testbed.md): torch.distributed with
gloo, compute modelled by time.sleep(COMPUTE_S), then an all_reduce of BYTES.
phasor's Python agent (phasor.IterationGate) gates the top of every iteration
with the offset phasord publishes for the job, in `once` or `pace` mode.

The process joins its job's process group once and then runs one training run
per line on stdin, so that the runs of a scenario start together without
paying torch's import and the rendezvous each time:

    {"run": "once-r1", "start_at_us": 1764590000000000, "iterations": 15,
     "gate": "off" | "once" | "pace", "log": "/tmp/.../once-r1.A.0.jsonl"}

It sleeps until start_at_us (wall clock, the clock the gate's slots use), runs
the iterations and writes one JSON line per iteration to `log`:
{"k", "gate_us", "start_us", "compute_end_us", "end_us", "waited_us",
"aligned", "failed_open", "offset_version"} (times: us since the Unix epoch;
gate_us is when wait() was called, start_us when it returned), then
{"stats": gate.stats()}; and answers "done RUN" on stdout. End of stdin ends
the process.

Arguments: --job, --rank, --world, --master (rank 0's address; its store
listens on --port, 27200 by default), --iface (GLOO_SOCKET_IFNAME), --compute-s, --bytes, and
phasord's --requests / --offsets endpoints. With PHASOR_RING_NODES and
PHASOR_NODE_RANK in the environment (the ring order phasor chose, as Slurm's
TaskProlog exports it) the process group is joined through
phasor.torch.init_process_group, which takes rank and master from them.
"""

import argparse
import json
import os
import sys
import time


def now_us():
    return time.time_ns() // 1000


def sleep_until(t_us):
    while True:
        left = t_us - now_us()
        if left <= 0:
            return
        time.sleep(min(left, 200000) / 1e6)


def main():
    ap = argparse.ArgumentParser(description="one rank of a testbed job")
    ap.add_argument("--job", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--master", required=True)
    ap.add_argument("--port", type=int, default=27200)
    ap.add_argument("--iface", default="eth0")
    ap.add_argument("--compute-s", type=float, default=0.35)
    ap.add_argument("--bytes", type=int, default=10_000_000)
    ap.add_argument("--requests", required=True, help="phasord's request endpoint")
    ap.add_argument("--offsets", required=True, help="phasord's offset endpoint")
    ap.add_argument("--fail-open-ms", type=int, default=3000)
    a = ap.parse_args()

    os.environ["GLOO_SOCKET_IFNAME"] = a.iface  # else the host name resolves to 127.0.0.1
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    import torch.distributed as dist
    import phasor
    import phasor.torch

    torch.set_num_threads(1)
    if os.environ.get("PHASOR_RING_NODES"):
        # The ring phasor committed (as Slurm's TaskProlog exports it): rank,
        # world size and master from PHASOR_RING_NODES / PHASOR_NODE_RANK.
        os.environ["MASTER_PORT"] = str(a.port)
        place = phasor.torch.init_process_group("gloo")
        if place["rank"] != a.rank or place["world_size"] != a.world:
            raise SystemExit("train.py: the exported ring gives rank %d of %d, the orchestrator said %d of %d"
                             % (place["rank"], place["world_size"], a.rank, a.world))
    else:
        dist.init_process_group("gloo", init_method="tcp://%s:%d" % (a.master, a.port), rank=a.rank,
                                world_size=a.world)
    tensor = torch.zeros(a.bytes // 4, dtype=torch.float32)
    dist.all_reduce(tensor)  # connections warm before the first run
    print("ready", flush=True)

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        gate = None
        if cmd["gate"] != "off":
            # Created before the start so that GetOffset's answer is in by then.
            gate = phasor.IterationGate(a.job, a.requests, a.offsets, mode=cmd["gate"],
                                        fail_open_ms=a.fail_open_ms)
        records = []
        sleep_until(cmd["start_at_us"])
        for k in range(cmd["iterations"]):
            t_gate = now_us()
            g = gate.wait() if gate is not None else {"waited_us": 0, "aligned": False, "failed_open": False,
                                                      "offset_version": 0}
            t_start = now_us()
            time.sleep(a.compute_s)
            t_compute = now_us()
            dist.all_reduce(tensor)
            t_end = now_us()
            records.append({"k": k, "gate_us": t_gate, "start_us": t_start, "compute_end_us": t_compute,
                            "end_us": t_end, "waited_us": g["waited_us"], "aligned": bool(g["aligned"]),
                            "failed_open": bool(g["failed_open"]), "offset_version": g["offset_version"]})
        with open(cmd["log"], "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
            f.write(json.dumps({"stats": gate.stats() if gate is not None else None}) + "\n")
        if gate is not None:
            gate.close()
        print("done %s" % cmd["run"], flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
