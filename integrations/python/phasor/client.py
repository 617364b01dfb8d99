"""Client of phasord's ROUTER socket (host schedulers) and PULL socket (probes).

    import phasor
    from phasor import phasor_pb2 as pb
    client = phasor.Client("ipc:///run/phasor/requests")
    req = pb.RankRequest()
    ...                                   # links, jobs, candidates
    reply = client.rank(req)              # pb.RankReply, best first
    client.commit(reply.ranking_id, reply.ranked[0].candidate)

A Client is not thread-safe; use one per thread. Error replies raise PhasorError.

Several phasords (a leader and standbys, state_store.backend: etcd): `endpoint`
may list them comma-separated ("tcp://a:7410,tcp://b:7410,tcp://c:7410"). A
call goes to the endpoint that answered last; on no reply or UNAVAILABLE (a
standby, naming the leader in Error.leader_endpoint) it tries the named leader,
else the next endpoint, until one answers or timeout_ms (the call's whole
bound) has passed.
"""

import collections
import itertools
import time

import zmq

from phasor import phasor_pb2 as pb
from phasor.wire import PhasorError, decode, encode

CurveKeys = collections.namedtuple("CurveKeys", "server_public client_public client_secret")


def apply_curve(socket, curve):
    if curve is not None:
        socket.curve_serverkey = curve.server_public.encode() if isinstance(curve.server_public, str) else curve.server_public
        socket.curve_publickey = curve.client_public.encode() if isinstance(curve.client_public, str) else curve.client_public
        socket.curve_secretkey = curve.client_secret.encode() if isinstance(curve.client_secret, str) else curve.client_secret


def split_endpoints(value):
    """The endpoints of a comma-separated list (spaces dropped)."""
    return [e.strip() for e in value.split(",") if e.strip()]


class Client:
    def __init__(self, endpoint, timeout_ms=5000, curve=None, context=None):
        self._context = context or zmq.Context.instance()
        self._curve = curve
        self._endpoints = split_endpoints(endpoint)
        if not self._endpoints:
            raise ValueError("endpoint: required")
        self._socket = None
        self._connect(0)
        self._timeout_ms = timeout_ms
        self._ids = itertools.count(1)
        self.stale_replies = 0

    def _connect(self, i):
        socket = self._context.socket(zmq.DEALER)
        socket.linger = 0
        apply_curve(socket, self._curve)
        socket.connect(self._endpoints[i])
        if self._socket is not None:
            self._socket.close(0)
        self._socket = socket
        self._current = i
        self._endpoint = self._endpoints[i]

    def close(self):
        self._socket.close(0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def call(self, request, reply_type):
        """Sends `request` with a fresh request_id; returns the reply of `reply_type`,
        failing over between the endpoints within timeout_ms."""
        deadline = time.monotonic() + self._timeout_ms / 1000.0
        if len(self._endpoints) == 1:
            try:
                return self._call_once(request, reply_type, self._timeout_ms)
            except PhasorError as e:
                # One endpoint that is a standby (a Service address): the named leader next.
                if e.code != "UNAVAILABLE" or not e.leader_endpoint or e.leader_endpoint == self._endpoints[0]:
                    raise
                self._endpoints.append(e.leader_endpoint)
                self._connect(1)
        share = max(100, self._timeout_ms // len(self._endpoints))
        tried = 0
        while True:
            left = int((deadline - time.monotonic()) * 1000)
            try:
                return self._call_once(request, reply_type, max(1, min(share, left)))
            except PhasorError as e:
                if e.code != "UNAVAILABLE" or time.monotonic() >= deadline:
                    raise
                nxt = (self._current + 1) % len(self._endpoints)
                if e.leader_endpoint and e.leader_endpoint != self._endpoint:
                    # The leader, also when it is not listed (a Service address in front of pods).
                    if e.leader_endpoint not in self._endpoints:
                        self._endpoints.append(e.leader_endpoint)
                    nxt = self._endpoints.index(e.leader_endpoint)
                tried += 1
                if tried % len(self._endpoints) == 0:
                    time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))  # a failover under way
                self._connect(nxt)

    def _call_once(self, request, reply_type, wait_ms):
        request_id = next(self._ids)
        request.request_id = request_id
        self._socket.send_multipart([b""] + encode(request))
        deadline = time.monotonic() + wait_ms / 1000.0
        while True:
            left = int((deadline - time.monotonic()) * 1000)
            if left <= 0 or not self._socket.poll(left):
                raise PhasorError("UNAVAILABLE", "no reply from %s within %d ms" % (self._endpoint, wait_ms))
            frames = self._socket.recv_multipart()
            if frames and frames[0] == b"":
                frames = frames[1:]
            reply = decode(frames)
            if reply.request_id not in (request_id, 0) or (reply.request_id == 0 and not isinstance(reply, pb.Error)):
                self.stale_replies += 1
                continue
            if isinstance(reply, pb.Error):
                raise PhasorError(pb.Error.Code.Name(reply.code), reply.message, reply.request_id,
                                  leader_endpoint=getattr(reply, "leader_endpoint", ""))
            if not isinstance(reply, reply_type):
                raise PhasorError("INTERNAL", "unexpected %s reply" % type(reply).__name__)
            return reply

    def rank(self, request):
        """Ranks `request` (a pb.RankRequest); wait_ms is set to this client's
        timeout unless given, so phasord does not solve a request the client
        stopped waiting for."""
        if not request.wait_ms and self._timeout_ms > 0:
            request.wait_ms = self._timeout_ms
        return self.call(request, pb.RankReply)

    def commit(self, ranking_id, candidate):
        return self.call(pb.CommitPlacement(ranking_id=ranking_id, candidate=candidate), pb.CommitReply)

    def get_offset(self, job):
        return self.call(pb.GetOffset(job=job), pb.OffsetUpdate)

    def health(self):
        return self.call(pb.Health(), pb.HealthReply)

    def snapshot(self):
        """What phasord knows of the committed placement (a Snapshot)."""
        return self.call(pb.GetSnapshot(), pb.Snapshot)


class ProfileSender:
    """Pushes ProfileUpdates to phasord's profile endpoint (no reply)."""

    def __init__(self, endpoint, curve=None, context=None):
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.PUSH)
        self._socket.linger = 2000
        apply_curve(self._socket, curve)
        self._socket.connect(endpoint)

    def send(self, update):
        self._socket.send_multipart(encode(update), flags=zmq.NOBLOCK)

    def close(self):
        self._socket.close()
