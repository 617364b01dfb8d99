"""The training-loop agent (SPEC section 7), same behaviour as the C++
phasor::agent::IterationGate. Call ``wait()`` at the top of every iteration:

    gate = phasor.IterationGate("job-a", "ipc:///run/phasor/requests",
                                "ipc:///run/phasor/offsets", mode="once")
    for step in range(steps):
        gate.wait()
        train_step()

mode "once": only the first iteration after an offset arrives (or is re-sent)
waits for its slot; "pace": every iteration waits for its slot. Fail open:
without an offset the gate blocks at most fail_open_ms in total, then lets
iterations through until one arrives.
"""

import time

import zmq

from phasor import phasor_pb2 as pb
from phasor.client import apply_curve
from phasor.wire import PhasorError, decode, encode


def _now_us():
    return time.time_ns() // 1000


def next_slot(offset, now_us):
    """The first slot origin + shift + n * period at or after now_us."""
    period = offset.period_us
    base = offset.origin_epoch_us + offset.shift_us
    k = -((base - now_us) // period)  # ceil((now - base) / period)
    return base + k * period


class IterationGate:
    def __init__(self, job, request_endpoint, offset_endpoint, mode="once", fail_open_ms=2000,
                 retry_ms=500, curve=None, clock=_now_us, context=None):
        if mode not in ("once", "pace"):
            raise ValueError("mode: %r is not 'once' or 'pace'" % mode)
        if not job:
            raise ValueError("job: required")
        self.job = job
        self.mode = mode
        self.offset = None
        self._clock = clock
        self._retry_us = retry_ms * 1000
        self._fail_open_left_us = fail_open_ms * 1000
        self._need_align = False
        self._ids = 0
        self._context = context or zmq.Context.instance()
        self._sub = self._context.socket(zmq.SUB)
        self._dealer = self._context.socket(zmq.DEALER)
        for s in (self._sub, self._dealer):
            s.linger = 0
            apply_curve(s, curve)
        self._sub.setsockopt(zmq.SUBSCRIBE, job.encode())
        self._sub.connect(offset_endpoint)
        self._dealer.connect(request_endpoint)
        self._poller = zmq.Poller()
        self._poller.register(self._sub, zmq.POLLIN)
        self._poller.register(self._dealer, zmq.POLLIN)
        self._send_get_offset()

    def close(self):
        self._sub.close(0)
        self._dealer.close(0)

    def _send_get_offset(self):
        self._ids += 1
        self._dealer.send_multipart([b""] + encode(pb.GetOffset(request_id=self._ids, job=self.job)), flags=zmq.NOBLOCK)
        self._last_request_us = self._clock()

    def _accept(self, frames):
        try:
            update = decode(frames)
        except PhasorError:
            return
        if not isinstance(update, pb.OffsetUpdate) or update.job != self.job or update.period_us == 0:
            return
        if self.offset is not None and update.version < self.offset.version:
            return
        update.request_id = 0
        self.offset = update
        self._need_align = True

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

    def wait(self):
        """Holds the iteration until its slot. Returns a dict: waited_us,
        aligned, failed_open, offset_version."""
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
            if self._clock() - self._last_request_us >= self._retry_us:
                self._send_get_offset()
            return {"waited_us": self._clock() - start, "aligned": False, "failed_open": True, "offset_version": 0}
        aligned = False
        if self.mode == "pace" or self._need_align:
            slot = next_slot(self.offset, self._clock())
            while True:
                left = slot - self._clock()
                if left <= 0:
                    break
                time.sleep(left / 1e6)
            self._need_align = False
            aligned = True
        return {"waited_us": self._clock() - start, "aligned": aligned, "failed_open": False,
                "offset_version": self.offset.version}
