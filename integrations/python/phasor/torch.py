"""PyTorch helpers: gate every optimizer step at the job's slot.

    import phasor, phasor.torch
    gate = phasor.IterationGate.from_env(log_every=100)
    phasor.torch.gate_optimizer(optimizer, gate)   # each optimizer.step() first waits
    for batch in loader:
        loss = model(batch).sum(); loss.backward()
        optimizer.step(); optimizer.zero_grad()

With PyTorch Lightning importable (``lightning`` or ``pytorch_lightning``),
``phasor.torch.GateCallback(gate)`` gates the top of every training batch.

Each rank runs its own gate with the same job id (PHASOR_JOB): all ranks get
the same offset, so they wait for the same wall-clock slot. Nothing here is a
collective: the ranks meet at the slot through the clock, not through
torch.distributed.
"""

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
