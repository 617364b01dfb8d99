"""The training-loop agent (SPEC section 7), same behaviour as the C++
phasor::agent::IterationGate. Call ``wait()`` at the top of every iteration:

    gate = phasor.IterationGate.from_env()   # PHASOR_* variables, docs/agents.md
    for step in range(steps):
        gate.wait()
        train_step()

mode "once": only the first iteration after an offset arrives or changes
waits for its slot (a changed offset: a newer version, which phasord's closed
loop also sends for a drifting job, or another slot grid; the same offset
heard again, re-published or answering GetOffset, costs no wait); "pace": every iteration waits for its slot, and an
iteration that overran its slot (more than one period since the slot it
started on) does not wait for the next one, which would lose most of a
period: it starts at once and the gate's slot grid re-anchors there until
phasord sends an offset again (re-slot, the simulator's rule; reslot=False
waits instead). Fail open:
without an offset the gate blocks at most fail_open_ms in total, then lets
iterations through until one arrives (one log line, logger "phasor.agent",
says so, and another when an offset arrives later). ``stats()`` says what the
gate did. ``from_env()`` never raises for configuration or connection
trouble: it logs one line and returns a gate that fails open.

Every rank of a job gets the same offset, so ranks gating their iterations
wait for the same wall-clock slot; the gate adds no collective of its own.
Not thread-safe: one gate per training process.
"""

import logging
import os
import time

import zmq

from phasor import phasor_pb2 as pb
from phasor.client import apply_curve
from phasor.wire import PhasorError, decode, encode

logger = logging.getLogger("phasor.agent")


def _now_us():
    return time.time_ns() // 1000


def next_slot(offset, now_us):
    """The first slot origin + shift + n * period at or after now_us."""
    period = offset.period_us
    base = offset.origin_epoch_us + offset.shift_us
    k = -((base - now_us) // period)  # ceil((now - base) / period)
    return base + k * period


def next_slot_from(anchor_us, period_us, now_us):
    """The first slot anchor + n * period (any integer n) at or after now_us."""
    return anchor_us - ((anchor_us - now_us) // period_us) * period_us


def _sleep_us(us):
    time.sleep(us / 1e6)


def _same_slots(a, b):
    """True when offsets a and b have the same slots (origin + shift + n * period)."""
    return a.period_us == b.period_us and a.period_us > 0 and \
        ((a.origin_epoch_us + a.shift_us) - (b.origin_epoch_us + b.shift_us)) % a.period_us == 0


def _env_names(message):
    """The constructor's message with its leading option named as the variable."""
    for option, variable in (("request_endpoint", "PHASOR_REQUEST_ENDPOINT"),
                             ("offset_endpoint", "PHASOR_OFFSET_ENDPOINT"),
                             ("curve", "PHASOR_SERVER_KEY, PHASOR_CLIENT_KEY")):
        if message.startswith(option + ":"):
            return variable + message[len(option):]
    return message


class IterationGate:
    """Holds iterations until the job's slot.

    initial_offset: an OffsetUpdate known at job start (PHASOR_PERIOD_US, ...),
    in force until phasord answers. log_every: log one summary line (logger
    "phasor.agent", INFO) every that many iterations; 0: never. reslot (pace):
    an iteration that overran its slot starts at once and the grid re-anchors
    there (default True). clock (us since the epoch) and sleep_us (sleeps that
    many us) are injected together so tests run on a fake clock.
    Raises ValueError for a bad mode, a missing job, CURVE keys or an
    endpoint ZeroMQ refuses (zmq.ZMQError for what ZeroMQ itself cannot do,
    e.g. no more sockets).
    """

    def __init__(self, job, request_endpoint, offset_endpoint, mode="once", fail_open_ms=2000,
                 retry_ms=500, curve=None, clock=_now_us, context=None, initial_offset=None, log_every=0,
                 reslot=True, sleep_us=_sleep_us):
        if mode not in ("once", "pace"):
            raise ValueError("mode: %r is not 'once' or 'pace'" % mode)
        if not job:
            raise ValueError("job: required")
        self.job = job
        self.mode = mode
        self.offset = None
        self.config_error = None
        self._clock = clock
        self._sleep_us = sleep_us
        self._reslot = reslot
        self._retry_us = retry_ms * 1000
        self._fail_open_ms = fail_open_ms
        self._fail_open_left_us = fail_open_ms * 1000
        self._request_endpoint = request_endpoint
        self._said_failing_open = False
        self._need_align = False
        self._ids = 0
        self._log_every = log_every
        self._last_slot = None
        self._stats = {"iterations": 0, "gated": 0, "waited_us": 0, "slots_missed": 0, "reslots": 0,
                       "fail_opens": 0}
        self._sub = self._dealer = None
        self._context = context or zmq.Context.instance()
        self._sub = self._context.socket(zmq.SUB)
        self._dealer = self._context.socket(zmq.DEALER)
        try:
            for s in (self._sub, self._dealer):
                s.linger = 0
                try:
                    apply_curve(s, curve)
                except zmq.ZMQError as e:  # e.g. a 40-character key that is not valid Z85 material
                    raise ValueError("curve: ZeroMQ refused the CURVE keys: %s" % e)
            self._sub.setsockopt(zmq.SUBSCRIBE, job.encode())
            # Each may list several phasords (comma-separated): the SUB hears
            # every PUB (only the leader publishes); GetOffsets go round the
            # ROUTERs and standbys' UNAVAILABLE answers are dropped.
            for socket, name, endpoints in ((self._sub, "offset_endpoint", offset_endpoint),
                                            (self._dealer, "request_endpoint", request_endpoint)):
                for endpoint in [e.strip() for e in endpoints.split(",") if e.strip()]:
                    try:
                        socket.connect(endpoint)
                    except zmq.ZMQError as e:
                        raise ValueError("%s: %r: %s" % (name, endpoint, e))
        except Exception:
            self.close()
            raise
        self._poller = zmq.Poller()
        self._poller.register(self._sub, zmq.POLLIN)
        self._poller.register(self._dealer, zmq.POLLIN)
        if initial_offset is not None:
            self._accept_offset(initial_offset)
        self._send_get_offset()

    @classmethod
    def from_env(cls, environ=None, strict=False, **kwargs):
        """A gate configured by the PHASOR_* variables (docs/agents.md) of
        `environ` (default os.environ); kwargs (log_every, retry_ms, ...) are
        passed on. When the environment is wrong it logs one error naming the
        variable and returns a gate that lets every iteration through at once
        (failing open), so a training loop never breaks; strict=True raises
        phasor.env.ConfigError instead."""
        from phasor.env import ConfigError, gate_options_from_env
        environ = os.environ if environ is None else environ
        try:
            options = gate_options_from_env(environ)
            options.update(kwargs)
            return cls(**options)
        except (ValueError, zmq.ZMQError, OSError) as e:
            # ConfigError; keys or an endpoint ZeroMQ refuses (ValueError);
            # ZeroMQ or the system out of something (ZMQError, OSError).
            if isinstance(e, ConfigError):
                error = e
            elif isinstance(e, ValueError):
                error = ConfigError(_env_names(str(e)))
            else:
                error = ConfigError("phasor: cannot set up the gate's sockets: %s" % e)
            if strict:
                raise error
            logger.error("phasor: %s; the gate fails open (iterations are not paced)", error)
            return cls._failing_open(environ.get("PHASOR_JOB") or "", str(error), kwargs.get("log_every", 0))

    @classmethod
    def _failing_open(cls, job, error, log_every):
        gate = cls.__new__(cls)
        gate.job = job
        gate.mode = "once"
        gate.offset = None
        gate.config_error = error
        gate._sub = gate._dealer = None
        gate._log_every = log_every
        gate._stats = {"iterations": 0, "gated": 0, "waited_us": 0, "slots_missed": 0, "reslots": 0,
                       "fail_opens": 0}
        return gate

    def close(self):
        for s in (self._sub, self._dealer):
            if s is not None:
                s.close(0)
        self._sub = self._dealer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def stats(self):
        """What the gate did, as a dict: iterations (wait() calls), gated
        (iterations held until a slot), waited_us (total time in wait()),
        slots_missed (pace mode: slots that passed between two gated
        iterations, i.e. iterations longer than the period), reslots (pace
        mode: iterations that overran their slot and started at once, the
        grid re-anchored there), fail_opens
        (iterations let through without an offset), offset_version (0 before
        an offset), config_error (the environment's error, or None)."""
        s = dict(self._stats)
        s["offset_version"] = self.offset.version if self.offset is not None else 0
        s["config_error"] = self.config_error
        return s

    def _send_get_offset(self):
        self._ids += 1
        try:
            self._dealer.send_multipart([b""] + encode(pb.GetOffset(request_id=self._ids, job=self.job)),
                                        flags=zmq.NOBLOCK)
        except zmq.Again:
            pass  # no connection yet: asked again after retry_ms
        self._last_request_us = self._clock()

    def _accept_offset(self, update):
        if update.job != self.job or update.period_us == 0:
            return
        # An older version never replaces a newer one, and the offset in force
        # heard again (re-published, answering GetOffset) is no reason to
        # wait: only a newer version or another slot grid re-aligns.
        if self.offset is not None and (update.version < self.offset.version or (
                update.version == self.offset.version and _same_slots(update, self.offset))):
            return
        if self.offset is None and self._said_failing_open:
            logger.info("phasor gate %s: offset version %d from phasord; iterations are paced from now",
                        self.job, update.version)
        update = pb.OffsetUpdate.FromString(update.SerializeToString())
        update.request_id = 0
        if self.offset is None or self.offset.period_us != update.period_us or \
                self.offset.origin_epoch_us != update.origin_epoch_us or self.offset.shift_us != update.shift_us:
            self._last_slot = None  # another slot grid: nothing was missed on it yet
        self.offset = update
        self._need_align = True

    def _accept(self, frames):
        try:
            update = decode(frames)
        except PhasorError:
            return
        if isinstance(update, pb.OffsetUpdate):
            self._accept_offset(update)

    def _drain(self, timeout_ms):
        if not self._poller.poll(timeout_ms):
            return
        while True:
            got = False
            try:
                frames = self._sub.recv_multipart(zmq.NOBLOCK)
                got = True
                self._accept(frames[1:])  # skip the topic
            except zmq.Again:
                pass
            try:
                frames = self._dealer.recv_multipart(zmq.NOBLOCK)
                got = True
                self._accept(frames[1:] if frames and frames[0] == b"" else frames)
            except zmq.Again:
                pass
            if not got:
                return

    def _finish(self, result):
        st = self._stats
        st["iterations"] += 1
        st["waited_us"] += result["waited_us"]
        st["gated"] += result["aligned"]
        st["fail_opens"] += result["failed_open"]
        if self._log_every and st["iterations"] % self._log_every == 0:
            logger.info("phasor gate %s: %d iterations, %d gated, waited %.3f s, %d slots missed, "
                        "%d fail-opens, offset version %d", self.job, st["iterations"], st["gated"],
                        st["waited_us"] / 1e6, st["slots_missed"], st["fail_opens"], result["offset_version"])
        return result

    def wait(self):
        """Holds the iteration until its slot. Returns a dict: waited_us,
        aligned, failed_open, offset_version, slot_us (the slot waited for,
        0 when none)."""
        if self._sub is None:  # failing open for good (bad environment, or closed)
            return self._finish({"waited_us": 0, "aligned": False, "failed_open": True, "offset_version": 0,
                                 "slot_us": 0})
        start = self._clock()
        self._drain(0)
        while self.offset is None and self._fail_open_left_us > 0:
            now = self._clock()
            if now - self._last_request_us >= self._retry_us:
                self._send_get_offset()
            slice_us = min(self._fail_open_left_us, self._retry_us)
            self._drain((slice_us + 999) // 1000)
            self._fail_open_left_us -= max(self._clock() - now, 1000)
        if self.offset is None:
            if not self._said_failing_open:
                self._said_failing_open = True
                logger.warning("phasor gate %s: no offset from phasord at %s within %d ms (not running, "
                               "unreachable or no placement for the job); the gate fails open: iterations "
                               "run unpaced until an offset arrives", self.job, self._request_endpoint,
                               self._fail_open_ms)
            if self._clock() - self._last_request_us >= self._retry_us:
                self._send_get_offset()
            return self._finish({"waited_us": self._clock() - start, "aligned": False, "failed_open": True,
                                 "offset_version": 0, "slot_us": 0})
        aligned = False
        slot = 0
        if self.mode == "pace" or self._need_align:
            now = self._clock()
            period = self.offset.period_us
            reslotted = False
            if self._need_align or self._last_slot is None:
                slot = next_slot(self.offset, now)  # phasord's grid
            elif self._reslot and now - self._last_slot > period:
                # The last iteration overran its slot: start now, the grid
                # re-anchors here (the simulator's SimJob::pace_reslot).
                slot = now
                reslotted = True
                self._stats["reslots"] += 1
                self._stats["slots_missed"] += (now - self._last_slot - 1) // period  # passed during the overrun
            else:
                slot = next_slot_from(self._last_slot, period, now)
            if self.mode == "pace" and self._last_slot is not None and slot > self._last_slot and not reslotted:
                self._stats["slots_missed"] += (slot - self._last_slot) // period - 1
            while True:
                left = slot - self._clock()
                if left <= 0:
                    break
                self._sleep_us(left)
            self._last_slot = slot
            self._need_align = False
            aligned = True
        return self._finish({"waited_us": self._clock() - start, "aligned": aligned, "failed_open": False,
                             "offset_version": self.offset.version, "slot_us": slot})
