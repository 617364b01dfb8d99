"""Python client of phasord and the training-loop agent (docs/protocol.md,
docs/agents.md).

Install with ``pip install --no-build-isolation --no-index ./integrations/python``
(or the wheel from ``make python-wheel``); the protobuf module
``phasor.phasor_pb2`` is generated from protocol/phasor.proto when the package
is built. ``phasor.torch`` (imported on its own) gates PyTorch optimizer steps.
"""

from phasor.wire import VERSION, SUPPORTED_VERSIONS, PhasorError, encode, decode
from phasor.client import Client, ProfileSender, CurveKeys
from phasor.agent import IterationGate, next_slot
from phasor.env import ConfigError, gate_options_from_env

__all__ = [
    "VERSION", "SUPPORTED_VERSIONS", "PhasorError", "encode", "decode",
    "Client", "ProfileSender", "CurveKeys", "IterationGate", "next_slot",
    "ConfigError", "gate_options_from_env",
]
