"""The agent's configuration from the environment (docs/agents.md has the table).

The Slurm TaskProlog and the Kubernetes path set these for every rank, so a
training script needs no phasor arguments:

    PHASOR_JOB                job id phasord knows (required)
    PHASOR_REQUEST_ENDPOINT   phasord's ROUTER, for GetOffset (required; several comma-separated)
    PHASOR_OFFSET_ENDPOINT    phasord's PUB, OffsetUpdates (required; several comma-separated)
    PHASOR_MODE               once | pace (default once)
    PHASOR_FAIL_OPEN_MS       total block without an offset (default 2000)
    PHASOR_SERVER_KEY         file with phasord's CURVE public key
    PHASOR_CLIENT_KEY         prefix of this client's pair PREFIX.pub, PREFIX.secret
    PHASOR_ORIGIN_EPOCH_US, PHASOR_PERIOD_US, PHASOR_SHIFT_US, PHASOR_OFFSET_VERSION
                              the offset known at job start, used until phasord answers

gate_options_from_env() returns IterationGate's keyword arguments or raises
ConfigError, whose message names the variable.
"""

import re

from phasor import phasor_pb2 as pb
from phasor.client import CurveKeys

JOB = "PHASOR_JOB"
REQUEST_ENDPOINT = "PHASOR_REQUEST_ENDPOINT"
OFFSET_ENDPOINT = "PHASOR_OFFSET_ENDPOINT"
MODE = "PHASOR_MODE"
FAIL_OPEN_MS = "PHASOR_FAIL_OPEN_MS"
SERVER_KEY = "PHASOR_SERVER_KEY"
CLIENT_KEY = "PHASOR_CLIENT_KEY"
ORIGIN_EPOCH_US = "PHASOR_ORIGIN_EPOCH_US"
PERIOD_US = "PHASOR_PERIOD_US"
SHIFT_US = "PHASOR_SHIFT_US"
OFFSET_VERSION = "PHASOR_OFFSET_VERSION"

# The ZeroMQ transports a phasord endpoint may use.
_ENDPOINT = re.compile(r"^(tcp|ipc|inproc)://.+$")
_Z85 = re.compile(r"^[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}$")


_UINT32_MAX = 2**32 - 1  # period_us and shift_us are uint32 on the wire


class ConfigError(ValueError):
    """A variable that is missing or wrong; str() starts with its name."""


def _get(environ, name):
    value = environ.get(name)
    return None if value is None or value.strip() == "" else value.strip()


def _required(environ, name):
    value = _get(environ, name)
    if value is None:
        raise ConfigError("%s: required (not set)" % name)
    return value


def _endpoint(environ, name):
    """One endpoint, or several comma-separated (a phasord leader and its standbys)."""
    value = _required(environ, name)
    for part in value.split(","):
        if not _ENDPOINT.match(part.strip()):
            raise ConfigError("%s: %r is not a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH)" % (name, part.strip()))
    return value


def _integer(environ, name, minimum, default=None, maximum=None):
    value = _get(environ, name)
    if value is None:
        return default
    if not re.match(r"^-?[0-9]+$", value):
        raise ConfigError("%s: %r is not an integer" % (name, value))
    n = int(value)
    if n < minimum:
        raise ConfigError("%s: %d is below %d" % (name, n, minimum))
    if maximum is not None and n > maximum:
        raise ConfigError("%s: %d is above %d" % (name, n, maximum))
    return n


def read_key_file(name, path):
    """The Z85 key in `path` (one 40-character key, whitespace ignored)."""
    try:
        with open(path) as f:
            key = f.read().strip()
    except OSError:
        raise ConfigError("%s: %s: cannot open key file" % (name, path))
    if not _Z85.match(key):
        raise ConfigError("%s: %s: not a 40-character Z85 CURVE key" % (name, path))
    return key


def _curve(environ):
    server = _get(environ, SERVER_KEY)
    client = _get(environ, CLIENT_KEY)
    if server is None and client is None:
        return None
    if server is None:
        raise ConfigError("%s: required when %s is set" % (SERVER_KEY, CLIENT_KEY))
    if client is None:
        raise ConfigError("%s: required when %s is set" % (CLIENT_KEY, SERVER_KEY))
    return CurveKeys(read_key_file(SERVER_KEY, server), read_key_file(CLIENT_KEY, client + ".pub"),
                     read_key_file(CLIENT_KEY, client + ".secret"))


def _initial_offset(environ, job):
    names = (ORIGIN_EPOCH_US, PERIOD_US, SHIFT_US, OFFSET_VERSION)
    if all(_get(environ, n) is None for n in names):
        return None
    for n in (ORIGIN_EPOCH_US, PERIOD_US):
        if _get(environ, n) is None:
            raise ConfigError("%s: required when any of %s is set" % (n, ", ".join(names)))
    origin = _integer(environ, ORIGIN_EPOCH_US, 0)
    period = _integer(environ, PERIOD_US, 1, maximum=_UINT32_MAX)
    shift = _integer(environ, SHIFT_US, 0, default=0, maximum=_UINT32_MAX)
    if shift >= period:
        raise ConfigError("%s: %d is not below %s (%d)" % (SHIFT_US, shift, PERIOD_US, period))
    version = _integer(environ, OFFSET_VERSION, 0, default=0)
    return pb.OffsetUpdate(job=job, origin_epoch_us=origin, period_us=period, shift_us=shift, version=version)


def gate_options_from_env(environ):
    """IterationGate's keyword arguments (job, request_endpoint, offset_endpoint,
    mode, fail_open_ms, curve, initial_offset) from `environ` (a mapping, e.g.
    os.environ). Raises ConfigError naming the first variable that is wrong."""
    job = _required(environ, JOB)
    options = {
        "job": job,
        "request_endpoint": _endpoint(environ, REQUEST_ENDPOINT),
        "offset_endpoint": _endpoint(environ, OFFSET_ENDPOINT),
    }
    mode = _get(environ, MODE) or "once"
    if mode not in ("once", "pace"):
        raise ConfigError("%s: %r is not 'once' or 'pace'" % (MODE, mode))
    options["mode"] = mode
    options["fail_open_ms"] = _integer(environ, FAIL_OPEN_MS, 0, default=2000)
    options["curve"] = _curve(environ)
    options["initial_offset"] = _initial_offset(environ, job)
    return options
