#!/usr/bin/env python3
"""A gNMI target for the tests of phasor's gNMI counter source.

It serves gnmi.gNMI/Subscribe (Debian's python3-grpcio; the messages from
probe/gnmi.proto, compiled by protoc into gnmi_pb2) on 127.0.0.1 with an
ephemeral port, and streams interface octet counters that follow square
waves, sampled at the interval the client subscribed with, in real time, the
way a switch does. Faults on request: dropped streams and refused
reconnects, out-of-order and duplicate notifications, counter wraps and
resets, bad values, a target that accepts the subscription and never sends,
a listener that never answers at all, TLS, username/password metadata.

usage: gnmi_target.py CONFIG.json

CONFIG (every key optional but port_file):
  port_file      where the bound port is written (atomically) once listening
  log            JSON lines: {"event": "subscribe", ...} per Subscribe call,
                 {"if", "dir", "t", "v"} per counter value sent (t in ns)
  mode           "grpc" (default) or "mute": a TCP listener that accepts
                 connections and never answers
  tls            {"cert": PEM file, "key": PEM file}: serve TLS
  auth           {"username", "password"}: refuse other metadata
                 (UNAUTHENTICATED)
  style          "proto_leaves" (default: per interface a notification with
                 prefix /interfaces/interface[name=X]/state/counters and
                 in-octets/out-octets uint_val updates), "json_ietf_container"
                 (per interface one update of .../state/counters holding a
                 JSON_IETF object), "sonic_counters_db" (per sample one
                 COUNTERS/Ethernet* update in target COUNTERS_DB holding
                 every port's SAI_PORT_STAT_IF_{IN,OUT}_OCTETS)
  interfaces     [{"name", "period_s", "duty", "up_gbps", "down_gbps",
                   "start" (counter at t=0, for wraps), "reset_at_s",
                   "bad_every" (every Nth sample of out-octets is "n/a")}]
  drop_every_s   abort each stream (UNAVAILABLE) after this long
  refuse_after_drop  refuse (UNAVAILABLE) this many Subscribe calls after a drop
  reorder_window shuffle notifications within windows of this many samples
  duplicate_every    send every Nth notification twice
  silent         accept the subscription and never send anything
  seed           for the shuffles
"""
import json
import os
import random
import signal
import socket
import sys
import threading
import time
from concurrent import futures

import grpc

import gnmi_pb2

WRAP = 1 << 64


class Counters:
    """Octet counters of one interface: a square-wave rate integrated from t0."""

    def __init__(self, spec, t0_ns):
        self.name = spec["name"]
        self.period = float(spec.get("period_s", 0.5))
        self.duty = float(spec.get("duty", 0.3))
        self.up = float(spec.get("up_gbps", 40.0)) * 1e9 / 8  # bytes per second
        self.down = float(spec.get("down_gbps", 2.0)) * 1e9 / 8
        self.start = int(spec.get("start", 0))
        self.reset_at = spec.get("reset_at_s")
        self.bad_every = int(spec.get("bad_every", 0))
        self.t0 = t0_ns

    def _bytes(self, seconds):
        if seconds <= 0:
            return 0
        full, rest = divmod(seconds, self.period)
        per_period = self.up * self.duty * self.period + self.down * (1 - self.duty) * self.period
        up_part = min(rest, self.duty * self.period)
        return int(full * per_period + up_part * self.up + (rest - up_part) * self.down)

    def value(self, t_ns, scale):
        seconds = (t_ns - self.t0) / 1e9
        if self.reset_at is not None and seconds >= float(self.reset_at):
            # Cleared counters: they count again from 0 at reset_at.
            return int((self._bytes(seconds) - self._bytes(float(self.reset_at))) * scale) % WRAP
        return (self.start + int(self._bytes(seconds) * scale)) % WRAP


def path(*elems):
    p = gnmi_pb2.Path()
    for e in elems:
        if isinstance(e, tuple):
            pe = p.elem.add(name=e[0])
            pe.key.update(e[1])
        else:
            p.elem.add(name=e)
    return p


class Target:
    def __init__(self, config):
        self.config = config
        self.t0 = time.time_ns()
        self.counters = [Counters(s, self.t0) for s in config.get("interfaces", [])]
        self.lock = threading.Lock()
        self.log_file = open(config["log"], "a", buffering=1) if config.get("log") else None
        self.refusals_left = 0
        self.sample_index = 0
        self.rng = random.Random(config.get("seed", 1))

    def log(self, record):
        if self.log_file is None:
            return
        with self.lock:
            self.log_file.write(json.dumps(record) + "\n")

    def notifications(self, t_ns):
        """The notifications of one sample at t_ns, with what they carry."""
        style = self.config.get("style", "proto_leaves")
        self.sample_index += 1
        out = []
        if style == "sonic_counters_db":
            n = gnmi_pb2.Notification(timestamp=t_ns)
            n.prefix.target = "COUNTERS_DB"
            ports, sent = {}, []
            for c in self.counters:
                vi, vo = c.value(t_ns, 0.5), c.value(t_ns, 1.0)
                ports[c.name] = {"SAI_PORT_STAT_IF_IN_OCTETS": str(vi),
                                 "SAI_PORT_STAT_IF_OUT_OCTETS": str(vo),
                                 "SAI_PORT_STAT_IF_IN_UCAST_PKTS": "7"}
                sent += [(c.name, "in", vi), (c.name, "out", vo)]
            u = n.update.add()
            u.path.CopyFrom(path("COUNTERS", "Ethernet*"))
            u.val.json_ietf_val = json.dumps(ports).encode()
            out.append((n, t_ns, sent))
            return out
        for c in self.counters:
            vi, vo = c.value(t_ns, 0.5), c.value(t_ns, 1.0)
            bad = c.bad_every > 0 and self.sample_index % c.bad_every == 0
            n = gnmi_pb2.Notification(timestamp=t_ns)
            sent = [(c.name, "in", vi)] + ([] if bad else [(c.name, "out", vo)])
            if style == "json_ietf_container":
                n.prefix.CopyFrom(path("interfaces", ("interface", {"name": c.name}), "state"))
                u = n.update.add()
                u.path.CopyFrom(path("counters"))
                body = {"openconfig-interfaces:in-octets": str(vi),
                        "openconfig-interfaces:out-octets": "n/a" if bad else str(vo),
                        "openconfig-interfaces:in-pkts": "7"}
                u.val.json_ietf_val = json.dumps(body).encode()
            else:
                n.prefix.CopyFrom(
                    path("interfaces", ("interface", {"name": c.name}), "state", "counters"))
                u = n.update.add()
                u.path.CopyFrom(path("in-octets"))
                u.val.uint_val = vi
                u = n.update.add()
                u.path.CopyFrom(path("out-octets"))
                if bad:
                    u.val.string_val = "n/a"
                else:
                    u.val.uint_val = vo
            out.append((n, t_ns, sent))
        return out

    def Subscribe(self, requests, context):
        metadata = dict(context.invocation_metadata())
        try:
            request = next(requests)
        except StopIteration:
            return
        subs = request.subscribe.subscription
        interval_ns = max(5_000_000, subs[0].sample_interval if subs else 100_000_000)
        record = {"event": "subscribe", "t": time.time_ns(),
                  "username": metadata.get("username"), "password": metadata.get("password"),
                  "paths": ["/".join(e.name for e in s.path.elem) for s in subs],
                  "mode": request.subscribe.mode, "encoding": request.subscribe.encoding,
                  "prefix_target": request.subscribe.prefix.target,
                  "sample_ns": subs[0].sample_interval if subs else 0, "refused": False}
        auth = self.config.get("auth")
        if auth and (metadata.get("username") != auth["username"] or
                     metadata.get("password") != auth["password"]):
            record["refused"] = True
            self.log(record)
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad username or password")
        with self.lock:
            refuse = self.refusals_left > 0
            if refuse:
                self.refusals_left -= 1
        if refuse:
            record["refused"] = True
            self.log(record)
            context.abort(grpc.StatusCode.UNAVAILABLE, "refusing: the test target is down")
        self.log(record)
        if self.config.get("silent"):
            while context.is_active():
                time.sleep(0.05)
            return
        started = time.monotonic()
        drop_after = self.config.get("drop_every_s")
        window = int(self.config.get("reorder_window", 0))
        dup_every = int(self.config.get("duplicate_every", 0))
        pending, sent_count, synced = [], 0, False
        next_tick = time.time_ns()
        while context.is_active():
            now = time.time_ns()
            if now < next_tick:
                time.sleep((next_tick - now) / 1e9)
            t_ns = time.time_ns()
            next_tick += interval_ns
            if next_tick < t_ns:  # fell behind: skip missed ticks
                next_tick = t_ns + interval_ns
            if drop_after is not None and time.monotonic() - started > float(drop_after):
                with self.lock:
                    self.refusals_left = int(self.config.get("refuse_after_drop", 0))
                self.log({"event": "drop", "t": time.time_ns()})
                context.abort(grpc.StatusCode.UNAVAILABLE, "dropped by the test target")
            pending += self.notifications(t_ns)
            if window > 1 and len(pending) < window * max(1, len(self.counters)):
                continue
            if window > 1:
                self.rng.shuffle(pending)
            for n, t, sent in pending:
                for name, direction, value in sent:
                    self.log({"if": name, "dir": direction, "t": t, "v": value})
                yield gnmi_pb2.SubscribeResponse(update=n)
                sent_count += 1
                if dup_every > 0 and sent_count % dup_every == 0:
                    self.log({"event": "duplicate", "t": t})
                    yield gnmi_pb2.SubscribeResponse(update=n)
            pending = []
            if not synced:
                synced = True
                yield gnmi_pb2.SubscribeResponse(sync_response=True)


def write_port(path_, port):
    tmp = path_ + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.rename(tmp, path_)


def serve_mute(config):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held = []
    write_port(config["port_file"], listener.getsockname()[1])
    log = open(config["log"], "a", buffering=1) if config.get("log") else None
    while True:
        conn, _ = listener.accept()
        held.append(conn)  # never read, never answered, never closed
        if log:
            log.write(json.dumps({"event": "accept", "t": time.time_ns()}) + "\n")


def main():
    config = json.load(open(sys.argv[1]))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if config.get("mode") == "mute":
        serve_mute(config)
        return
    target = Target(config)
    handler = grpc.method_handlers_generic_handler("gnmi.gNMI", {
        "Subscribe": grpc.stream_stream_rpc_method_handler(
            target.Subscribe,
            request_deserializer=gnmi_pb2.SubscribeRequest.FromString,
            response_serializer=gnmi_pb2.SubscribeResponse.SerializeToString),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers((handler,))
    tls = config.get("tls")
    if tls:
        key = open(tls["key"], "rb").read()
        cert = open(tls["cert"], "rb").read()
        port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key, cert)]))
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    write_port(config["port_file"], port)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
