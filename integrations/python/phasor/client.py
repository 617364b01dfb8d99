"""Client of phasord's ROUTER socket (host schedulers) and PULL socket (probes).

    import phasor
    from phasor import phasor_pb2 as pb
    client = phasor.Client("ipc:///run/phasor/requests")
    req = pb.RankRequest()
    ...                                   # links, jobs, candidates
    reply = client.rank(req)              # pb.RankReply, best first
    client.commit(reply.ranking_id, reply.ranked[0].candidate)

A Client is not thread-safe; use one per thread. Error replies raise PhasorError.
"""

import collections
import itertools

import zmq

from phasor import phasor_pb2 as pb
from phasor.wire import PhasorError, decode, encode

CurveKeys = collections.namedtuple("CurveKeys", "server_public client_public client_secret")


def apply_curve(socket, curve):
    if curve is not None:
        socket.curve_serverkey = curve.server_public.encode() if isinstance(curve.server_public, str) else curve.server_public
        socket.curve_publickey = curve.client_public.encode() if isinstance(curve.client_public, str) else curve.client_public
        socket.curve_secretkey = curve.client_secret.encode() if isinstance(curve.client_secret, str) else curve.client_secret


class Client:
    def __init__(self, endpoint, timeout_ms=5000, curve=None, context=None):
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.DEALER)
        self._socket.linger = 0
        apply_curve(self._socket, curve)
        self._socket.connect(endpoint)
        self._endpoint = endpoint
        self._timeout_ms = timeout_ms
        self._ids = itertools.count(1)
        self.stale_replies = 0

    def close(self):
        self._socket.close(0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def call(self, request, reply_type):
        """Sends `request` with a fresh request_id; returns the reply of `reply_type`."""
        request_id = next(self._ids)
        request.request_id = request_id
        self._socket.send_multipart([b""] + encode(request))
        while True:
            if not self._socket.poll(self._timeout_ms):
                raise PhasorError("UNAVAILABLE", "no reply from %s within %d ms" % (self._endpoint, self._timeout_ms))
            frames = self._socket.recv_multipart()
            if frames and frames[0] == b"":
                frames = frames[1:]
            reply = decode(frames)
            if reply.request_id not in (request_id, 0) or (reply.request_id == 0 and not isinstance(reply, pb.Error)):
                self.stale_replies += 1
                continue
            if isinstance(reply, pb.Error):
                raise PhasorError(pb.Error.Code.Name(reply.code), reply.message, reply.request_id)
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
