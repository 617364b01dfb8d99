#!/usr/bin/env python3
"""phasor.torch.gate_optimizer in a real torch.distributed job: two gloo
processes on loopback (DistributedDataParallel, FileStore rendezvous in a temp
dir), each with its own gate configured by the PHASOR_* variables, paced by a
real phasord (ipc://). Both ranks gate every optimizer step at the same slot
of the job's offset; the helper adds no collective (the only ones are DDP's).

Also, in one process: gate_optimizer with LR schedulers made before and
after it, remove(), a non-optimizer refused, and the Lightning callback
(defined only where Lightning imports; a stand-in module here).

Fails (exit 1) with a message naming the package where torch is not installed.
Run by ctest with PHASORD and the phasor package importable.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

STEPS = 4
PERIOD_US = 300000


def worker(rank, out_path):
    import torch
    import torch.distributed as dist
    import phasor
    import phasor.torch

    store = dist.FileStore(os.environ["TEST_STORE"], 2)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    gate = phasor.IterationGate.from_env(strict=True)
    results = []
    wait = gate.wait
    gate.wait = lambda: results.append(wait()) or results[-1]  # the test's record of each step's gate
    handle = phasor.torch.gate_optimizer(optimizer, gate)
    for step in range(STEPS):
        x = torch.full((4, 8), float(rank + step))
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    handle.remove()
    optimizer.step()  # no longer gated
    weights = [p.detach().flatten().tolist() for p in model.parameters()]
    with open(out_path, "w") as f:
        json.dump({"results": results, "stats": gate.stats(), "offset": [gate.offset.origin_epoch_us,
                   gate.offset.period_us, gate.offset.shift_us, gate.offset.version], "weights": weights}, f)
    gate.close()
    dist.destroy_process_group()



def wait_all(procs, timeout=120):
    """The exit codes of `procs`; any still running after `timeout` s is killed."""
    try:
        return [p.wait(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

class TorchGateTest(unittest.TestCase):
    def test_two_gloo_ranks_gate_every_step_at_the_same_slot(self):
        import phasor
        from phasor import phasor_pb2 as pb
        from phasord_fixture import Phasord

        d = Phasord(prefix="phasor-torch-")
        try:
            client = phasor.Client(d.requests, timeout_ms=5000)
            req = pb.RankRequest()
            req.links.add(id="l", capacity_gbps=50.0)
            j = req.jobs.add(id="ddp")
            j.profile.period_us = PERIOD_US
            j.profile.square.up_us = PERIOD_US // 3
            j.profile.square.up_gbps = 40.0
            req.candidates.add(id="c0").links["ddp"].shares["l"] = 1.0
            reply = client.rank(req)
            offset = client.commit(reply.ranking_id, "c0").offsets[0]
            client.close()
            env = dict(os.environ, PHASOR_JOB="ddp", PHASOR_REQUEST_ENDPOINT=d.requests,
                       PHASOR_OFFSET_ENDPOINT=d.offsets, PHASOR_MODE="pace", PHASOR_FAIL_OPEN_MS="5000",
                       TEST_STORE=os.path.join(d.dir, "store"), OMP_NUM_THREADS="1")
            outs = [os.path.join(d.dir, "rank%d.json" % r) for r in (0, 1)]
            procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(r), outs[r]], env=env)
                     for r in (0, 1)]
            codes = wait_all(procs)
            self.assertEqual(codes, [0, 0])
            ranks = []
            for path in outs:
                with open(path) as f:
                    ranks.append(json.load(f))
        finally:
            d.stop()

        for r in ranks:
            self.assertEqual(r["offset"], [offset.origin_epoch_us, PERIOD_US, offset.shift_us, offset.version])
            self.assertEqual(len(r["results"]), STEPS)  # one gate per step, none after remove()
            self.assertEqual([x["aligned"] for x in r["results"]], [True] * STEPS)
            self.assertEqual([x["failed_open"] for x in r["results"]], [False] * STEPS)
            for x in r["results"]:
                self.assertEqual((x["slot_us"] - offset.origin_epoch_us - offset.shift_us) % PERIOD_US, 0)
            s = r["stats"]
            self.assertEqual((s["iterations"], s["gated"], s["fail_opens"]), (STEPS, STEPS, 0))
        slots = [[x["slot_us"] for x in r["results"]] for r in ranks]
        # DDP's all-reduce in backward() brings the ranks together before each
        # step, so from the second step on both wait for the same slot. The
        # first step's arrival (after process start) may straddle a slot
        # boundary by the all-reduce's skew; then the ranks are one slot apart
        # once and meet at the next.
        self.assertIn(abs(slots[0][0] - slots[1][0]), (0, PERIOD_US))
        self.assertEqual(slots[0][1:], slots[1][1:])
        self.assertEqual(ranks[0]["weights"], ranks[1]["weights"])  # DDP kept the replicas equal


class GateOptimizerTest(unittest.TestCase):
    """gate_optimizer in one process with a gate that counts its calls."""

    class CountingGate:
        def __init__(self):
            self.waits = 0

        def wait(self):
            self.waits += 1

    def test_every_step_waits_until_removed_also_under_an_lr_scheduler(self):
        import torch
        import phasor.torch
        p = torch.nn.Parameter(torch.ones(2))
        optimizer = torch.optim.SGD([p], lr=0.5)
        gate = self.CountingGate()
        handle = phasor.torch.gate_optimizer(optimizer, gate)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)  # wraps step() again
        for _ in range(3):
            p.grad = torch.ones(2)
            optimizer.step()
            scheduler.step()
        self.assertEqual(gate.waits, 3)
        self.assertEqual(p.detach().tolist(), [1 - 0.5 - 0.25 - 0.125] * 2)  # the steps themselves ran
        handle.remove()
        optimizer.step()
        self.assertEqual(gate.waits, 4)  # a scheduler wrapped the gated step: removing leaves its chain alone

    def test_a_scheduler_made_before_the_gate_counts_the_gated_steps(self):
        import warnings
        import torch
        import phasor.torch
        p = torch.nn.Parameter(torch.ones(1))
        optimizer = torch.optim.SGD([p], lr=1.0)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        gate = self.CountingGate()
        handle = phasor.torch.gate_optimizer(optimizer, gate)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "optimizer.step() has been overridden" would raise
            for _ in range(2):
                p.grad = torch.ones(1)
                optimizer.step()
                scheduler.step()
        self.assertEqual(gate.waits, 2)
        self.assertEqual(optimizer._step_count, 2)
        self.assertEqual(p.detach().tolist(), [1 - 1.0 - 0.5])
        handle.remove()
        optimizer.step()
        self.assertEqual(gate.waits, 2)
        self.assertEqual(optimizer._step_count, 3)  # the scheduler's wrapper is back

    def test_remove_restores_the_plain_step(self):
        import torch
        import phasor.torch
        p = torch.nn.Parameter(torch.ones(1))
        optimizer = torch.optim.SGD([p], lr=1.0)
        gate = self.CountingGate()
        handle = phasor.torch.gate_optimizer(optimizer, gate)
        p.grad = torch.ones(1)
        optimizer.step()
        handle.remove()
        handle.remove()  # twice is harmless
        optimizer.step()
        self.assertEqual(gate.waits, 1)
        self.assertEqual(p.detach().tolist(), [-1.0])

    def test_lightning_callback_is_defined_only_where_lightning_imports(self):
        # Lightning is not packaged in Debian 12: a stand-in `lightning.pytorch`
        # with a Callback base shows the callback is defined and gates each batch.
        import importlib
        import types
        import phasor.torch
        self.assertFalse(hasattr(phasor.torch, "GateCallback"))  # no lightning here
        lightning = types.ModuleType("lightning")
        lightning.pytorch = types.ModuleType("lightning.pytorch")
        lightning.pytorch.Callback = type("Callback", (), {})
        sys.modules.update({"lightning": lightning, "lightning.pytorch": lightning.pytorch})
        try:
            importlib.reload(phasor.torch)
            gate = self.CountingGate()
            callback = phasor.torch.GateCallback(gate)
            self.assertIsInstance(callback, lightning.pytorch.Callback)
            for batch_idx in range(3):
                callback.on_train_batch_start(None, None, batch=[], batch_idx=batch_idx)
            self.assertEqual(gate.waits, 3)
        finally:
            del sys.modules["lightning"], sys.modules["lightning.pytorch"]
            phasor.torch.__dict__.pop("GateCallback", None)  # reload() keeps old names
            importlib.reload(phasor.torch)
        self.assertFalse(hasattr(phasor.torch, "GateCallback"))

    def test_not_an_optimizer_is_refused(self):
        import phasor.torch
        with self.assertRaises(TypeError) as e:
            phasor.torch.gate_optimizer(object(), self.CountingGate())
        self.assertEqual(str(e.exception), "optimizer: object is not a torch.optim.Optimizer")


def ring_worker(out_path):
    """One node of a two-node ring: init_process_group from the PHASOR_*
    variables alone; writes its rank, the world and every rank's node."""
    import torch
    import torch.distributed as dist
    import phasor.torch

    place = phasor.torch.init_process_group("gloo")
    mine = torch.tensor([dist.get_rank(), int(os.environ["PHASOR_NODE_RANK"])])
    every = [torch.zeros(2, dtype=torch.int64) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    with open(out_path, "w") as f:
        json.dump({"place": place, "world": dist.get_world_size(), "gathered": [t.tolist() for t in every]}, f)
    dist.destroy_process_group()


class RingRankTest(unittest.TestCase):
    def test_ranks_follow_the_ring_and_bad_variables_are_named(self):
        import phasor.torch
        from phasor.env import ConfigError
        self.assertIsNone(phasor.torch.ring_rank({}))
        env = {"PHASOR_RING_NODES": "n07,n03,n04", "PHASOR_NODE_RANK": "1", "LOCAL_RANK": "2",
               "LOCAL_WORLD_SIZE": "4"}
        self.assertEqual(phasor.torch.ring_rank(env),
                         {"rank": 6, "world_size": 12, "node_rank": 1, "local_rank": 2, "local_world_size": 4,
                          "master_addr": "n07"})
        # Slurm's own per-node numbering when torchrun's is absent.
        self.assertEqual(phasor.torch.ring_rank({"PHASOR_RING_NODES": "a,b", "PHASOR_NODE_RANK": "0",
                                                 "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "2"})["rank"], 1)
        for bad, message in [({"PHASOR_NODE_RANK": "3"}, "PHASOR_NODE_RANK: 3 is not below the ring's 3 nodes"),
                             ({"PHASOR_NODE_RANK": "x"}, "PHASOR_NODE_RANK: must be a whole number >= 0, got 'x'"),
                             ({"PHASOR_NODE_RANK": None}, "PHASOR_NODE_RANK: missing"),
                             ({"PHASOR_RING_NODES": "a,,b"}, "PHASOR_RING_NODES: an empty node name in 'a,,b'"),
                             ({"LOCAL_RANK": "4"}, "LOCAL_RANK: 4 is not below the node's 4 processes")]:
            e2 = dict(env, **bad)
            e2 = {k: v for k, v in e2.items() if v is not None}
            with self.assertRaises(ConfigError) as e:
                phasor.torch.ring_rank(e2)
            self.assertEqual(str(e.exception), message)

    def test_two_gloo_nodes_take_their_ranks_from_the_ring(self):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with tempfile.TemporaryDirectory(prefix="phasor-ring-") as d:
            # The ring's first node is the rendezvous host; node "127.0.0.1"
            # is rank 1 although Slurm would have numbered it first.
            outs = [os.path.join(d, "node%d.json" % r) for r in (0, 1)]
            procs = []
            for node_rank in (1, 0):
                env = dict(os.environ, PHASOR_RING_NODES="localhost,127.0.0.1", PHASOR_NODE_RANK=str(node_rank),
                           MASTER_PORT=str(port), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
                for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_LOCALID",
                          "SLURM_NTASKS_PER_NODE"):
                    env.pop(k, None)
                procs.append(subprocess.Popen([sys.executable, __file__, "--ring-worker", outs[node_rank]], env=env))
            codes = wait_all(procs)
            self.assertEqual(codes, [0, 0])
            for node_rank in (0, 1):
                with open(outs[node_rank]) as f:
                    r = json.load(f)
                self.assertEqual(r["world"], 2)
                self.assertEqual(r["place"]["rank"], node_rank)
                self.assertEqual(r["place"]["master_addr"], "localhost")
                self.assertEqual(r["gathered"], [[0, 0], [1, 1]])  # rank i is ring node i


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), sys.argv[3])
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "--ring-worker":
        ring_worker(sys.argv[2])
        sys.exit(0)
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("python_torch_test: FAILED: torch is not importable (%s); install it: apt-get install python3-torch "
              "(scripts/install-deps.sh)" % e, file=sys.stderr)
        sys.exit(1)
    unittest.main()
