"""PyTorch helpers: gate every optimizer step at the job's slot.

    import phasor, phasor.torch
    gate = phasor.IterationGate.from_env(log_every=100)
    phasor.torch.gate_optimizer(optimizer, gate)   # each optimizer.step() first waits
    for batch in loader:
        loss = model(batch).sum(); loss.backward()
        optimizer.step(); optimizer.zero_grad()

With PyTorch Lightning importable (``lightning`` or ``pytorch_lightning``),
``phasor.torch.GateCallback(gate)`` gates the top of every training batch.

Ranks in phasor's ring order: where the scheduler integration exported the
ring (Slurm's TaskProlog: PHASOR_RING_NODES, PHASOR_NODE_RANK), ``ring_rank()``
gives this process's rank in it and ``init_process_group(backend)`` sets
RANK, WORLD_SIZE, NODE_RANK and (when unset) MASTER_ADDR/MASTER_PORT from it
before calling torch.distributed.init_process_group, so consecutive ranks
share a rack (docs/agents.md). On Kubernetes the pod's index is its rank
already (the extender puts it at its place in the ring).

Each rank runs its own gate with the same job id (PHASOR_JOB): all ranks get
the same offset, so they wait for the same wall-clock slot. Nothing here is a
collective: the ranks meet at the slot through the clock, not through
torch.distributed.
"""

import os
import types

import torch as _torch


class GateHandle:
    """Returned by gate_optimizer; remove() stops gating the optimizer."""

    def __init__(self, remove):
        self._remove = remove

    def remove(self):
        if self._remove is not None:
            self._remove()
            self._remove = None


def gate_optimizer(optimizer, gate):
    """Makes every optimizer.step() first call gate.wait(). Uses
    Optimizer.register_step_pre_hook where PyTorch has it (2.0 and later);
    on older PyTorch (Debian 12's 1.13) it wraps the optimizer's step method
    (before or after LR schedulers are created). Returns a GateHandle."""
    if not isinstance(optimizer, _torch.optim.Optimizer):
        raise TypeError("optimizer: %s is not a torch.optim.Optimizer" % type(optimizer).__name__)
    if hasattr(optimizer, "register_step_pre_hook"):
        def pre_hook(opt, args, kwargs):
            gate.wait()
            return None  # a non-None return would replace step()'s arguments

        return GateHandle(optimizer.register_step_pre_hook(pre_hook).remove)
    inner = optimizer.step  # the bound method (or an LR scheduler's wrapper)
    had_own_step = "step" in optimizer.__dict__

    def gated_step(self, *args, **kwargs):
        gate.wait()
        return inner(*args, **kwargs)

    # A bound method, as PyTorch 1.13's LR schedulers expect of step (they
    # wrap it through __self__ and __func__); under a scheduler's counting
    # wrapper it keeps the wrapper's mark, so the scheduler sees step() counted.
    if getattr(inner, "_with_counter", False):
        gated_step._with_counter = True
    step = types.MethodType(gated_step, optimizer)
    optimizer.step = step

    def remove():
        if optimizer.__dict__.get("step") is not step:
            return  # wrapped again since (an LR scheduler): leave the chain alone
        if had_own_step:
            optimizer.step = inner
        else:
            del optimizer.step

    return GateHandle(remove)


def _lightning_callback_base():
    try:
        from lightning.pytorch import Callback
        return Callback
    except ImportError:
        pass
    try:
        from pytorch_lightning import Callback
        return Callback
    except ImportError:
        return None


_Callback = _lightning_callback_base()

if _Callback is not None:
    class GateCallback(_Callback):
        """A PyTorch Lightning callback: gate.wait() at the start of every
        training batch (the top of the iteration)."""

        def __init__(self, gate):
            super().__init__()
            self.gate = gate

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args):
            self.gate.wait()


def _int_var(environ, name, default=None, minimum=0):
    value = environ.get(name)
    if value is None or value == "":
        if default is None:
            from phasor.env import ConfigError
            raise ConfigError("%s: missing" % name)
        return default
    try:
        n = int(value)
    except ValueError:
        n = None
    if n is None or n < minimum or str(n) != value.strip():
        from phasor.env import ConfigError
        raise ConfigError("%s: must be a whole number >= %d, got %r" % (name, minimum, value))
    return n


def ring_rank(environ=None):
    """This process's place in the ring phasor committed for the job, as a
    dict {rank, world_size, node_rank, local_rank, local_world_size,
    master_addr}, or None when no ring was exported (PHASOR_RING_NODES
    unset). The node's rank is PHASOR_NODE_RANK; processes of one node are
    numbered by LOCAL_RANK (else SLURM_LOCALID, else 0) of LOCAL_WORLD_SIZE
    (else SLURM_NTASKS_PER_NODE, else 1). Raises phasor.env.ConfigError
    naming the variable when one is wrong."""
    from phasor.env import ConfigError
    environ = os.environ if environ is None else environ
    ring = environ.get("PHASOR_RING_NODES")
    if not ring:
        return None
    nodes = ring.split(",")
    if any(not n for n in nodes):
        raise ConfigError("PHASOR_RING_NODES: an empty node name in %r" % ring)
    node_rank = _int_var(environ, "PHASOR_NODE_RANK")
    if node_rank >= len(nodes):
        raise ConfigError("PHASOR_NODE_RANK: %d is not below the ring's %d nodes" % (node_rank, len(nodes)))
    local_rank = _int_var(environ, "LOCAL_RANK", _int_var(environ, "SLURM_LOCALID", 0))
    local_world = _int_var(environ, "LOCAL_WORLD_SIZE", _int_var(environ, "SLURM_NTASKS_PER_NODE", 1, 1), 1)
    if local_rank >= local_world:
        raise ConfigError("LOCAL_RANK: %d is not below the node's %d processes" % (local_rank, local_world))
    return {"rank": node_rank * local_world + local_rank, "world_size": len(nodes) * local_world,
            "node_rank": node_rank, "local_rank": local_rank, "local_world_size": local_world,
            "master_addr": nodes[0]}


def init_process_group(backend=None, environ=None, **kwargs):
    """torch.distributed.init_process_group with the ranks in phasor's ring
    order: sets RANK, WORLD_SIZE and NODE_RANK in `environ` (default
    os.environ), and MASTER_ADDR (the ring's first node) and MASTER_PORT
    (29500) where unset, then initialises with init_method env:// unless
    kwargs name another. Without an exported ring the environment is left
    as it is. Returns ring_rank()'s dict (or None)."""
    import torch.distributed as dist
    environ = os.environ if environ is None else environ
    place = ring_rank(environ)
    if place is not None:
        environ["RANK"] = str(place["rank"])
        environ["WORLD_SIZE"] = str(place["world_size"])
        environ["NODE_RANK"] = str(place["node_rank"])
        environ.setdefault("MASTER_ADDR", place["master_addr"])
        environ.setdefault("MASTER_PORT", "29500")
    if "store" not in kwargs:
        kwargs.setdefault("init_method", "env://")
    dist.init_process_group(backend, **kwargs)
    return place

