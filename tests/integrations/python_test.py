#!/usr/bin/env python3
"""The Python package `phasor` against a real phasord process (ipc:// in a
temp dir): ranking and commit, errors as PhasorError, profiles, the
IterationGate in once/pace modes and failing open, and the framing helpers.

Run by ctest with PHASORD (the binary) and either PYTHONPATH (the package
assembled in the build tree) or the package installed into a venv
(python_package_test.py).
"""

import os
import shutil
import tempfile
import time
import unittest

import zmq

import phasor
from phasor import phasor_pb2 as pb
from phasord_fixture import Phasord


def sample_request():
    r = pb.RankRequest()
    r.links.add(id="l", capacity_gbps=50.0)
    for job in ("a", "b"):
        j = r.jobs.add(id=job)
        j.profile.period_us = 40000
        j.profile.square.up_us = 16000
        j.profile.square.up_gbps = 40.0
    c = r.candidates.add(id="c0")
    c.links["a"].shares["l"] = 1.0
    c.links["b"].shares["l"] = 1.0
    bad = r.candidates.add(id="c1")
    bad.links["zz"].shares["l"] = 1.0
    return r


def since_slot(offset, t_us):
    return (t_us - offset.origin_epoch_us - offset.shift_us) % offset.period_us


class PhasordTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.phasord = Phasord()
        cls.dir = cls.phasord.dir
        cls.requests = cls.phasord.requests
        cls.profiles = cls.phasord.profiles
        cls.offsets = cls.phasord.offsets
        try:
            cls.client = phasor.Client(cls.requests, timeout_ms=5000)
            reply = cls.client.rank(sample_request())
            cls.commit = cls.client.commit(reply.ranking_id, reply.ranked[0].candidate)
            cls.rank_reply = reply
        except Exception:
            cls.phasord.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.phasord.stop()

    def test_rank_and_commit(self):
        r = self.rank_reply
        self.assertEqual([c.candidate for c in r.ranked], ["c0"])
        self.assertEqual(r.rejected[0].candidate, "c1")
        self.assertIn("zz", r.rejected[0].reason)
        # Two 40% square waves fit in one period: the optimum interleaves them.
        self.assertEqual(r.ranked[0].score, 1.0)
        self.assertEqual([o.job for o in self.commit.offsets], ["a", "b"])
        self.assertEqual(self.commit.offsets[0].period_us, 40000)
        got = self.client.get_offset("b")
        self.assertEqual(got.shift_us, self.commit.offsets[1].shift_us)
        self.assertEqual(self.client.health().versions, ["phasor.v1"])

    def test_errors_raise_phasor_error(self):
        with self.assertRaises(phasor.PhasorError) as e:
            self.client.get_offset("nobody")
        self.assertEqual(e.exception.code, "NOT_FOUND")
        with self.assertRaises(phasor.PhasorError) as e:
            self.client.commit(12345, "c0")
        self.assertEqual(e.exception.code, "NOT_FOUND")
        bad = sample_request()
        bad.links[0].capacity_gbps = 0
        with self.assertRaises(phasor.PhasorError) as e:
            self.client.rank(bad)
        self.assertEqual(e.exception.code, "INVALID_ARGUMENT")
        self.assertIn("links[0].capacity_gbps", e.exception.message)

    def test_unknown_version_names_the_versions_spoken(self):
        s = zmq.Context.instance().socket(zmq.REQ)  # REQ works too (empty delimiter)
        s.linger = 0
        s.connect(self.requests)
        s.send_multipart([b"phasor.v9", b"Health", b""])
        self.assertTrue(s.poll(5000))
        err = phasor.decode(s.recv_multipart())
        s.close()
        self.assertIsInstance(err, pb.Error)
        self.assertEqual(err.code, pb.Error.UNSUPPORTED_VERSION)
        self.assertEqual(list(err.supported_versions), ["phasor.v1"])

    def test_profiles_feed_the_next_ranking(self):
        sender = phasor.ProfileSender(self.profiles)
        u = pb.ProfileUpdate(subject="p", kind=pb.ProfileUpdate.JOB, period_us=30000, bin_us=10000,
                             gbps=[30.0, 0.0, 0.0], confidence=0.95, source="python-test")
        sender.send(u)
        req = sample_request()
        j = req.jobs.add(id="p")  # no profile: phasord uses the probe's
        req.candidates[0].links["p"].shares["l"] = 1.0
        deadline = time.time() + 5
        while True:
            try:
                reply = self.client.rank(req)
                break
            except phasor.PhasorError as e:
                self.assertEqual(e.code, "NOT_FOUND")
                self.assertLess(time.time(), deadline)
                time.sleep(0.02)
        shifts = {s.job: s for s in reply.ranked[0].shifts}
        self.assertEqual(shifts["p"].period_us, 30000)
        sender.close()
        del j

    # The gates' checks are about slots, not durations (the machine may be
    # loaded): a gated iteration starts at or after a slot of the job's grid.
    def test_gate_once_aligns_first_iteration(self):
        gate = phasor.IterationGate("b", self.requests, self.offsets, mode="once", fail_open_ms=3000)
        r = gate.wait()
        t = time.time_ns() // 1000
        self.assertTrue(r["aligned"])
        self.assertFalse(r["failed_open"])
        self.assertEqual(gate.offset.shift_us, self.commit.offsets[1].shift_us)
        self.assertEqual(since_slot(gate.offset, r["slot_us"]), 0)
        self.assertGreaterEqual(t, r["slot_us"])
        r = gate.wait()
        self.assertFalse(r["aligned"])
        self.assertEqual(r["slot_us"], 0)  # runs free
        gate.close()

    def test_gate_pace_waits_every_slot(self):
        gate = phasor.IterationGate("a", self.requests, self.offsets, mode="pace", fail_open_ms=3000)
        last = gate.wait()["slot_us"]
        for _ in range(3):
            r = gate.wait()
            t = time.time_ns() // 1000
            self.assertTrue(r["aligned"])
            self.assertEqual(since_slot(gate.offset, r["slot_us"]), 0)
            self.assertGreater(r["slot_us"], last)  # a new slot every iteration
            self.assertGreaterEqual(t, r["slot_us"])
            last = r["slot_us"]
        gate.close()

    def test_gate_hears_published_offsets(self):
        # Its own jobs m and n, so the other tests' offsets stay as committed.
        def request(pin=None):
            req = sample_request()
            req.jobs[0].id, req.jobs[1].id = "m", "n"
            del req.candidates[:]
            c = req.candidates.add(id="mn")
            c.links["m"].shares["l"] = 1.0
            c.links["n"].shares["l"] = 1.0
            if pin is not None:
                req.jobs[0].pinned_shift_us = pin
            return req
        reply = self.client.rank(request())
        first = self.client.commit(reply.ranking_id, "mn").offsets[0]
        gate = phasor.IterationGate("m", self.requests, self.offsets, mode="once", fail_open_ms=3000)
        gate.wait()
        self.assertEqual(gate.offset.version, first.version)
        time.sleep(0.1)  # the SUB socket is connected by now
        # Pin m to another shift: its offset changes and is published.
        reply = self.client.rank(request(pin=(first.shift_us + 20000) % 40000))
        new_m = [o for o in self.client.commit(reply.ranking_id, "mn").offsets if o.job == "m"][0]
        self.assertEqual(new_m.version, first.version + 1)
        self.assertNotEqual(new_m.shift_us, first.shift_us)
        deadline = time.time() + 5
        while gate.offset.version != new_m.version and time.time() < deadline:
            gate.wait()
            time.sleep(0.01)
        self.assertEqual(gate.offset.shift_us, new_m.shift_us)
        gate.close()


class FailoverTest(unittest.TestCase):
    """A Client given several endpoints: a dead one is skipped within the
    call's bound, and a standby's UNAVAILABLE naming the leader is followed."""

    def setUp(self):
        self.phasord = Phasord()
        self.context = zmq.Context()
        self.standby = self.context.socket(zmq.ROUTER)
        self.standby.linger = 0
        self.standby_endpoint = "ipc://%s/standby" % self.phasord.dir
        self.standby.bind(self.standby_endpoint)
        self.refused = 0
        self.leader = self.phasord.requests  # what the standby names
        self.stop = False
        import threading
        self.thread = threading.Thread(target=self.serve_standby)
        self.thread.start()

    def serve_standby(self):
        while not self.stop:
            if not self.standby.poll(50):
                continue
            frames = self.standby.recv_multipart()
            request = phasor.decode(frames[2:])
            error = pb.Error(code=pb.Error.UNAVAILABLE, message="not the leader: a standby",
                             request_id=request.request_id, leader_endpoint=self.leader)
            # Counted before the answer goes: the client may follow it and
            # the test read the count before this thread runs again.
            self.refused += 1
            self.standby.send_multipart(frames[:2] + phasor.encode(error))

    def tearDown(self):
        self.stop = True
        self.thread.join()
        self.standby.close(0)
        self.context.term()
        self.phasord.stop()

    def test_a_standby_redirects_to_the_leader(self):
        dead = "ipc://%s/nobody" % self.phasord.dir
        client = phasor.Client(",".join([dead, self.standby_endpoint, self.phasord.requests]), timeout_ms=3000)
        start = time.monotonic()
        self.assertEqual(client.health().versions, ["phasor.v1"])
        self.assertLess(time.monotonic() - start, 3.0)
        self.assertEqual(self.refused, 1)  # the standby named the leader: asked once
        client.health()  # stays with the leader
        self.assertEqual(self.refused, 1)
        client.close()

    def test_an_unlisted_leader_named_by_a_standby_is_followed(self):
        # One address (a Service in front of the pods) that reaches a standby.
        client = phasor.Client(self.standby_endpoint, timeout_ms=3000)
        self.assertEqual(client.health().versions, ["phasor.v1"])
        self.assertEqual(self.refused, 1)
        client.close()

    def test_only_standbys_is_unavailable_within_the_bound(self):
        self.leader = ""  # a failover under way: no leader known
        client = phasor.Client(self.standby_endpoint + ",ipc://%s/nobody" % self.phasor_dir(), timeout_ms=600)
        start = time.monotonic()
        with self.assertRaises(phasor.PhasorError) as e:
            client.health()
        self.assertEqual(e.exception.code, "UNAVAILABLE")
        self.assertLess(time.monotonic() - start, 1.2)
        client.close()

    def phasor_dir(self):
        return self.phasord.dir


class FromEnvWithPhasordTest(unittest.TestCase):
    """IterationGate.from_env() against a real phasord: the PHASOR_* variables
    as the Slurm TaskProlog sets them, the offset received, the gate aligned."""

    @classmethod
    def setUpClass(cls):
        cls.phasord = Phasord()
        try:
            cls.client = phasor.Client(cls.phasord.requests, timeout_ms=5000)
            reply = cls.client.rank(sample_request())
            cls.commit = cls.client.commit(reply.ranking_id, reply.ranked[0].candidate)
        except Exception:
            cls.phasord.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.phasord.stop()

    def env(self, **more):
        env = {"PHASOR_JOB": "b", "PHASOR_REQUEST_ENDPOINT": self.phasord.requests,
               "PHASOR_OFFSET_ENDPOINT": self.phasord.offsets, "PHASOR_FAIL_OPEN_MS": "3000"}
        env.update(more)
        return env

    def test_offset_received_and_gate_aligned(self):
        gate = phasor.IterationGate.from_env(self.env(), strict=True)
        r = gate.wait()
        t = time.time_ns() // 1000
        committed = self.commit.offsets[1]
        self.assertTrue(r["aligned"])
        self.assertFalse(r["failed_open"])
        self.assertEqual((gate.offset.shift_us, gate.offset.period_us, gate.offset.version),
                         (committed.shift_us, committed.period_us, committed.version))
        self.assertEqual(since_slot(committed, r["slot_us"]), 0)  # on the job's grid
        self.assertGreaterEqual(t, r["slot_us"])
        gate.wait()
        stats = gate.stats()
        self.assertEqual((stats["iterations"], stats["gated"], stats["fail_opens"], stats["offset_version"]),
                         (2, 1, 0, committed.version))
        gate.close()

    def test_phasord_replaces_the_offset_from_the_environment(self):
        committed = self.commit.offsets[1]
        start = pb.OffsetUpdate(job="b", origin_epoch_us=committed.origin_epoch_us, period_us=committed.period_us,
                                shift_us=(committed.shift_us + 1000) % committed.period_us, version=0)
        gate = phasor.IterationGate.from_env(self.env(
            PHASOR_ORIGIN_EPOCH_US=str(start.origin_epoch_us), PHASOR_PERIOD_US=str(start.period_us),
            PHASOR_SHIFT_US=str(start.shift_us), PHASOR_OFFSET_VERSION="0"), strict=True)
        self.assertEqual(gate.offset, start)  # in force before phasord answers
        deadline = time.time() + 5
        while gate.offset.shift_us != committed.shift_us and time.time() < deadline:
            gate.wait()
            time.sleep(0.01)
        self.assertEqual((gate.offset.shift_us, gate.offset.version), (committed.shift_us, committed.version))
        gate.close()


class FailOpenTest(unittest.TestCase):
    def test_without_phasord_the_gate_blocks_at_most_the_bound(self):
        d = tempfile.mkdtemp(prefix="phasor-py-")
        gate = phasor.IterationGate("a", "ipc://%s/none-r" % d, "ipc://%s/none-o" % d, mode="pace",
                                    fail_open_ms=300, retry_ms=100)
        t0 = time.time()
        r = gate.wait()
        self.assertTrue(r["failed_open"])
        self.assertGreaterEqual(time.time() - t0, 0.25)
        self.assertLess(time.time() - t0, 1.0)
        for _ in range(3):
            r = gate.wait()
            self.assertTrue(r["failed_open"])
            self.assertLess(r["waited_us"], 5000)
        gate.close()
        shutil.rmtree(d)

    def test_bad_mode_is_refused(self):
        with self.assertRaises(ValueError):
            phasor.IterationGate("a", "ipc:///tmp/x", "ipc:///tmp/y", mode="sometimes")


class WireTest(unittest.TestCase):
    def test_round_trip_and_errors(self):
        frames = phasor.encode(pb.GetOffset(request_id=3, job="a"))
        self.assertEqual(frames[:2], [b"phasor.v1", b"GetOffset"])
        self.assertEqual(phasor.decode(frames).job, "a")
        for bad, code in (([b"phasor.v1", b"Health"], "BAD_FRAMES"),
                          ([b"phasor.v2", b"Health", b""], "UNSUPPORTED_VERSION"),
                          ([b"phasor.v1", b"Nope", b""], "UNKNOWN_TYPE"),
                          ([b"phasor.v1", b"RankRequest", b"\xff\xff\xff"], "BAD_PAYLOAD")):
            with self.assertRaises(phasor.PhasorError) as e:
                phasor.decode(bad)
            self.assertEqual(e.exception.code, code)

    def test_next_slot(self):
        o = pb.OffsetUpdate(origin_epoch_us=1000000, shift_us=300, period_us=1000)
        self.assertEqual(phasor.next_slot(o, 1000300), 1000300)
        self.assertEqual(phasor.next_slot(o, 1000301), 1001300)
        self.assertEqual(phasor.next_slot(o, 999000), 999300)


if __name__ == "__main__":
    unittest.main()
