"""Python client of phasord and the training-loop agent (docs/protocol.md).

The protobuf module ``phasor.phasor_pb2`` is generated from protocol/phasor.proto
at build time; the build tree's ``integrations/python`` directory is the
importable package root (put it on PYTHONPATH).
"""

from phasor.wire import VERSION, SUPPORTED_VERSIONS, PhasorError, encode, decode
from phasor.client import Client, ProfileSender, CurveKeys
from phasor.agent import IterationGate, next_slot

__all__ = [
    "VERSION", "SUPPORTED_VERSIONS", "PhasorError", "encode", "decode",
    "Client", "ProfileSender", "CurveKeys", "IterationGate", "next_slot",
]
