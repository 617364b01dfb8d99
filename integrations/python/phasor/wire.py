"""Framing of the phasor wire protocol: [b"phasor.v1", type name, payload]."""

from phasor import phasor_pb2 as pb

VERSION = b"phasor.v1"
SUPPORTED_VERSIONS = (VERSION,)

# Wire type name -> protobuf class.
TYPES = {
    name.encode(): getattr(pb, name)
    for name in ("RankRequest", "RankReply", "CommitPlacement", "CommitReply", "GetOffset",
                 "OffsetUpdate", "ProfileUpdate", "Health", "HealthReply", "GetSnapshot", "Snapshot",
                 "Error")
}


class PhasorError(Exception):
    """An Error reply from phasord (code is the Error.Code name, e.g. "NOT_FOUND"),
    or a local failure ("UNAVAILABLE" when no reply came in time). A standby's
    UNAVAILABLE names the leader's request endpoint in leader_endpoint."""

    def __init__(self, code, message, request_id=0, leader_endpoint=""):
        super().__init__("phasord: %s: %s" % (code, message))
        self.code = code
        self.message = message
        self.request_id = request_id
        self.leader_endpoint = leader_endpoint


def encode(message):
    """The three frames of `message` (a phasor_pb2 message)."""
    return [VERSION, type(message).__name__.encode(), message.SerializeToString()]


def decode(frames):
    """The message in frames [version, type, payload]; raises PhasorError
    (BAD_FRAMES, UNSUPPORTED_VERSION, UNKNOWN_TYPE, BAD_PAYLOAD)."""
    if len(frames) != 3:
        raise PhasorError("BAD_FRAMES", "expected 3 frames, got %d" % len(frames))
    version, type_name, payload = (bytes(f) for f in frames)
    if version not in SUPPORTED_VERSIONS:
        raise PhasorError("UNSUPPORTED_VERSION", "version %r is not spoken" % version)
    cls = TYPES.get(type_name)
    if cls is None:
        raise PhasorError("UNKNOWN_TYPE", "unknown message type %r" % type_name)
    message = cls()
    try:
        message.ParseFromString(payload)
    except Exception as e:  # protobuf raises DecodeError
        raise PhasorError("BAD_PAYLOAD", "payload does not parse as %s: %s" % (cls.__name__, e))
    return message
