#!/usr/bin/env python3
"""The Python agent's configuration from PHASOR_* variables (phasor.env,
IterationGate.from_env): every variable parsed, every bad value refused with a
message naming it (the same messages as the C++ agent_env_test.cc), a wrong
environment failing open at once with one logged line, and the gate's stats.
No phasord: the endpoints are ipc:// paths in a temp dir that nobody binds.
"""

import logging
import os
import shutil
import tempfile
import time
import unittest

import zmq

import phasor
from phasor import phasor_pb2 as pb
from phasor.env import ConfigError, gate_options_from_env


def write_key_pair(prefix):
    public, secret = zmq.curve_keypair()
    with open(prefix + ".pub", "w") as f:
        f.write(public.decode() + "\n")
    with open(prefix + ".secret", "w") as f:
        f.write(secret.decode() + "\n")
    return public.decode(), secret.decode()


class EnvTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="phasor-py-env-")
        self.env = {"PHASOR_JOB": "job-a", "PHASOR_REQUEST_ENDPOINT": "ipc://%s/requests" % self.dir,
                    "PHASOR_OFFSET_ENDPOINT": "ipc://%s/offsets" % self.dir}

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def error(self):
        with self.assertRaises(ConfigError) as e:
            gate_options_from_env(self.env)
        return str(e.exception)

    def test_required_variables_and_defaults(self):
        o = gate_options_from_env(self.env)
        self.assertEqual(o, {"job": "job-a", "request_endpoint": "ipc://%s/requests" % self.dir,
                             "offset_endpoint": "ipc://%s/offsets" % self.dir, "mode": "once",
                             "fail_open_ms": 2000, "curve": None, "initial_offset": None})

    def test_every_variable_is_read(self):
        server_public, _ = write_key_pair(self.dir + "/phasord")
        mine_public, mine_secret = write_key_pair(self.dir + "/trainer")
        self.env.update({"PHASOR_MODE": " pace ", "PHASOR_FAIL_OPEN_MS": "0",
                         "PHASOR_SERVER_KEY": self.dir + "/phasord.pub", "PHASOR_CLIENT_KEY": self.dir + "/trainer",
                         "PHASOR_ORIGIN_EPOCH_US": "1700000000000000", "PHASOR_PERIOD_US": "200000",
                         "PHASOR_SHIFT_US": "150000", "PHASOR_OFFSET_VERSION": "7"})
        o = gate_options_from_env(self.env)
        self.assertEqual(o["mode"], "pace")
        self.assertEqual(o["fail_open_ms"], 0)
        self.assertEqual(o["curve"], phasor.CurveKeys(server_public, mine_public, mine_secret))
        self.assertEqual(o["initial_offset"], pb.OffsetUpdate(job="job-a", origin_epoch_us=1700000000000000,
                                                              period_us=200000, shift_us=150000, version=7))

    def test_shift_and_version_default_to_zero(self):
        self.env.update({"PHASOR_ORIGIN_EPOCH_US": "1000", "PHASOR_PERIOD_US": "500"})
        o = gate_options_from_env(self.env)["initial_offset"]
        self.assertEqual((o.shift_us, o.version), (0, 0))

    def test_missing_required_variables_are_named(self):
        del self.env["PHASOR_JOB"]
        self.assertEqual(self.error(), "PHASOR_JOB: required (not set)")
        self.env["PHASOR_JOB"] = "  "
        self.assertEqual(self.error(), "PHASOR_JOB: required (not set)")
        self.env["PHASOR_JOB"] = "a"
        del self.env["PHASOR_OFFSET_ENDPOINT"]
        self.assertEqual(self.error(), "PHASOR_OFFSET_ENDPOINT: required (not set)")
        del self.env["PHASOR_REQUEST_ENDPOINT"]
        self.assertEqual(self.error(), "PHASOR_REQUEST_ENDPOINT: required (not set)")

    def test_several_endpoints_are_accepted_and_each_is_checked(self):
        # A phasord leader and its standbys (state_store.backend: etcd).
        self.env["PHASOR_REQUEST_ENDPOINT"] = "tcp://10.0.0.1:7410, tcp://10.0.0.2:7410"
        self.env["PHASOR_OFFSET_ENDPOINT"] = "tcp://10.0.0.1:7412,tcp://10.0.0.2:7412"
        o = gate_options_from_env(self.env)
        self.assertEqual(o["request_endpoint"], "tcp://10.0.0.1:7410, tcp://10.0.0.2:7410")
        self.env["PHASOR_REQUEST_ENDPOINT"] = "tcp://10.0.0.1:7410,phasord:7410"
        self.assertEqual(self.error(), "PHASOR_REQUEST_ENDPOINT: 'phasord:7410' is not a ZeroMQ endpoint "
                                       "(tcp://HOST:PORT, ipc://PATH)")

    def test_bad_values_are_named(self):
        self.env["PHASOR_REQUEST_ENDPOINT"] = "phasord:7410"
        self.assertEqual(self.error(), "PHASOR_REQUEST_ENDPOINT: 'phasord:7410' is not a ZeroMQ endpoint "
                                       "(tcp://HOST:PORT, ipc://PATH)")
        self.env["PHASOR_REQUEST_ENDPOINT"] = "tcp://"
        self.assertEqual(self.error(), "PHASOR_REQUEST_ENDPOINT: 'tcp://' is not a ZeroMQ endpoint "
                                       "(tcp://HOST:PORT, ipc://PATH)")
        self.env["PHASOR_REQUEST_ENDPOINT"] = "tcp://127.0.0.1:23001"
        self.env["PHASOR_MODE"] = "sometimes"
        self.assertEqual(self.error(), "PHASOR_MODE: 'sometimes' is not 'once' or 'pace'")
        self.env["PHASOR_MODE"] = "once"
        self.env["PHASOR_FAIL_OPEN_MS"] = "2s"
        self.assertEqual(self.error(), "PHASOR_FAIL_OPEN_MS: '2s' is not an integer")
        self.env["PHASOR_FAIL_OPEN_MS"] = "-1"
        self.assertEqual(self.error(), "PHASOR_FAIL_OPEN_MS: -1 is below 0")
        self.env["PHASOR_FAIL_OPEN_MS"] = "100"
        self.env["PHASOR_SHIFT_US"] = "10"
        self.assertEqual(self.error(), "PHASOR_ORIGIN_EPOCH_US: required when any of PHASOR_ORIGIN_EPOCH_US, "
                                       "PHASOR_PERIOD_US, PHASOR_SHIFT_US, PHASOR_OFFSET_VERSION is set")
        self.env["PHASOR_ORIGIN_EPOCH_US"] = "1000"
        self.assertEqual(self.error(), "PHASOR_PERIOD_US: required when any of PHASOR_ORIGIN_EPOCH_US, "
                                       "PHASOR_PERIOD_US, PHASOR_SHIFT_US, PHASOR_OFFSET_VERSION is set")
        self.env["PHASOR_PERIOD_US"] = "0"
        self.assertEqual(self.error(), "PHASOR_PERIOD_US: 0 is below 1")
        self.env["PHASOR_PERIOD_US"] = "4294967296"
        self.assertEqual(self.error(), "PHASOR_PERIOD_US: 4294967296 is above 4294967295")
        self.env["PHASOR_PERIOD_US"] = "10"
        self.assertEqual(self.error(), "PHASOR_SHIFT_US: 10 is not below PHASOR_PERIOD_US (10)")
        self.env["PHASOR_SHIFT_US"] = "3"
        self.env["PHASOR_OFFSET_VERSION"] = "+1"
        self.assertEqual(self.error(), "PHASOR_OFFSET_VERSION: '+1' is not an integer")

    def test_key_files_that_are_missing_or_wrong_are_named(self):
        d = self.dir
        self.env["PHASOR_SERVER_KEY"] = d + "/phasord.pub"
        self.assertEqual(self.error(), "PHASOR_CLIENT_KEY: required when PHASOR_SERVER_KEY is set")
        del self.env["PHASOR_SERVER_KEY"]
        self.env["PHASOR_CLIENT_KEY"] = d + "/trainer"
        self.assertEqual(self.error(), "PHASOR_SERVER_KEY: required when PHASOR_CLIENT_KEY is set")
        self.env["PHASOR_SERVER_KEY"] = d + "/phasord.pub"
        self.assertEqual(self.error(), "PHASOR_SERVER_KEY: %s/phasord.pub: cannot open key file" % d)
        write_key_pair(d + "/phasord")
        self.assertEqual(self.error(), "PHASOR_CLIENT_KEY: %s/trainer.pub: cannot open key file" % d)
        write_key_pair(d + "/trainer")
        os.remove(d + "/trainer.secret")
        self.assertEqual(self.error(), "PHASOR_CLIENT_KEY: %s/trainer.secret: cannot open key file" % d)
        with open(d + "/trainer.secret", "w") as f:
            f.write("not a key\n")
        self.assertEqual(self.error(), "PHASOR_CLIENT_KEY: %s/trainer.secret: not a 40-character Z85 CURVE key" % d)


class FromEnvTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="phasor-py-env-")
        self.env = {"PHASOR_JOB": "job-a", "PHASOR_REQUEST_ENDPOINT": "ipc://%s/requests" % self.dir,
                    "PHASOR_OFFSET_ENDPOINT": "ipc://%s/offsets" % self.dir}

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def assert_fails_open_at_once(self, message):
        with self.assertLogs("phasor.agent", logging.ERROR) as logs:
            gate = phasor.IterationGate.from_env(self.env)
        self.assertEqual(logs.output, ["ERROR:phasor.agent:phasor: %s; the gate fails open (iterations are not paced)"
                                       % message])
        for _ in range(3):
            self.assertEqual(gate.wait(), {"waited_us": 0, "aligned": False, "failed_open": True,
                                           "offset_version": 0, "slot_us": 0})
        self.assertEqual(gate.stats(), {"iterations": 3, "gated": 0, "waited_us": 0, "slots_missed": 0,
                                        "reslots": 0, "fail_opens": 3, "offset_version": 0, "config_error": message})
        gate.close()

    def test_a_missing_key_file_fails_open_with_one_line(self):
        self.env.update({"PHASOR_SERVER_KEY": self.dir + "/missing.pub", "PHASOR_CLIENT_KEY": self.dir + "/trainer"})
        self.assert_fails_open_at_once("PHASOR_SERVER_KEY: %s/missing.pub: cannot open key file" % self.dir)

    def test_a_bad_endpoint_fails_open_with_one_line(self):
        self.env["PHASOR_OFFSET_ENDPOINT"] = "pub.example:7411"
        self.assert_fails_open_at_once("PHASOR_OFFSET_ENDPOINT: 'pub.example:7411' is not a ZeroMQ endpoint "
                                       "(tcp://HOST:PORT, ipc://PATH)")

    def test_an_endpoint_zeromq_refuses_is_named_by_its_variable(self):
        self.env["PHASOR_REQUEST_ENDPOINT"] = "tcp://nohost"
        self.assert_fails_open_at_once("PHASOR_REQUEST_ENDPOINT: 'tcp://nohost': Invalid argument")

    def test_no_environment_at_all_fails_open(self):
        self.env = {}
        self.assert_fails_open_at_once("PHASOR_JOB: required (not set)")

    def test_key_material_zeromq_refuses_fails_open_with_one_line(self):
        # 40 characters of the Z85 alphabet, so the files pass the format
        # check, but no valid key: ZeroMQ itself refuses it (zmq.ZMQError).
        write_key_pair(self.dir + "/trainer")
        with open(self.dir + "/phasord.pub", "w") as f:
            f.write("#" * 40 + "\n")
        self.env.update({"PHASOR_SERVER_KEY": self.dir + "/phasord.pub", "PHASOR_CLIENT_KEY": self.dir + "/trainer"})
        self.assert_fails_open_at_once("PHASOR_SERVER_KEY, PHASOR_CLIENT_KEY: ZeroMQ refused the CURVE keys: "
                                       "Invalid argument")
        with self.assertRaises(ConfigError):
            phasor.IterationGate.from_env(self.env, strict=True)

    def test_an_unreachable_phasord_is_logged_once_and_fails_open(self):
        # Nobody binds the endpoints: the first wait() spends the budget, says
        # so in one line, and later iterations pass at once, without a line.
        self.env["PHASOR_FAIL_OPEN_MS"] = "200"
        gate = phasor.IterationGate.from_env(self.env, strict=True, retry_ms=50)
        with self.assertLogs("phasor.agent", logging.WARNING) as logs:
            first = gate.wait()
            for _ in range(3):
                self.assertTrue(gate.wait()["failed_open"])
        self.assertTrue(first["failed_open"])
        self.assertGreaterEqual(first["waited_us"], 150000)
        self.assertEqual(logs.output, [
            "WARNING:phasor.agent:phasor gate job-a: no offset from phasord at ipc://%s/requests within 200 ms "
            "(not running, unreachable or no placement for the job); the gate fails open: iterations run unpaced "
            "until an offset arrives" % self.dir])
        gate.close()

    def test_strict_raises(self):
        del self.env["PHASOR_JOB"]
        with self.assertRaises(ConfigError) as e:
            phasor.IterationGate.from_env(self.env, strict=True)
        self.assertEqual(str(e.exception), "PHASOR_JOB: required (not set)")

    def test_stats_count_gated_iterations_and_missed_slots(self):
        # The offset from the environment (nobody answers at the endpoints) and
        # a clock the test moves: slots are every 1000 us from 0.
        self.env.update({"PHASOR_MODE": "pace", "PHASOR_ORIGIN_EPOCH_US": "0", "PHASOR_PERIOD_US": "1000",
                         "PHASOR_OFFSET_VERSION": "3"})
        now = [1000]
        gate = phasor.IterationGate.from_env(self.env, strict=True, clock=lambda: now[0])
        results = []
        for t in (1000, 2000, 5000, 6000):
            now[0] = t
            results.append(gate.wait())
        self.assertEqual([r["slot_us"] for r in results], [1000, 2000, 5000, 6000])
        self.assertEqual([r["aligned"] for r in results], [True] * 4)
        # 5000 is more than a period after 2000: re-slotted there (it is on the
        # grid too), slots 3000 and 4000 missed.
        self.assertEqual(gate.stats(), {"iterations": 4, "gated": 4, "waited_us": 0, "slots_missed": 2,
                                        "reslots": 1, "fail_opens": 0, "offset_version": 3, "config_error": None})
        gate.close()

    def pace_gate(self, reslot):
        # Slots every 10 ms at 1,002,000 + n x 10,000 us; a fake clock that only
        # the gate's sleeps and the test's iterations move.
        self.env.update({"PHASOR_MODE": "pace", "PHASOR_ORIGIN_EPOCH_US": "1000000", "PHASOR_PERIOD_US": "10000",
                         "PHASOR_SHIFT_US": "2000", "PHASOR_OFFSET_VERSION": "1"})
        now = [1000500]

        def sleep_us(us):
            now[0] += us

        gate = phasor.IterationGate.from_env(self.env, strict=True, clock=lambda: now[0], sleep_us=sleep_us,
                                             reslot=reslot)

        def after(us):  # an iteration of `us`, then the gate
            now[0] += us
            r = gate.wait()
            return r["slot_us"], r["waited_us"]
        return gate, after

    def test_pace_reslots_an_iteration_that_overran_its_slot(self):
        gate, after = self.pace_gate(reslot=True)
        self.assertEqual(after(0), (1002000, 1500))      # phasord's grid
        self.assertEqual(after(8000), (1012000, 2000))   # 1,010,000: within its period
        self.assertEqual(after(13000), (1025000, 0))     # 13 ms after its slot: starts at once, the grid moves here
        self.assertEqual(after(7000), (1035000, 3000))   # on the re-anchored grid
        self.assertEqual(after(10000), (1045000, 0))     # exactly a period: the next slot, not an overrun
        self.assertEqual(gate.stats(), {"iterations": 5, "gated": 5, "waited_us": 6500, "slots_missed": 1,
                                        "reslots": 1, "fail_opens": 0, "offset_version": 1, "config_error": None})
        gate.close()

    def test_without_reslot_an_overrun_waits_for_the_next_slot_of_the_grid(self):
        gate, after = self.pace_gate(reslot=False)
        self.assertEqual(after(0), (1002000, 1500))
        self.assertEqual(after(8000), (1012000, 2000))
        self.assertEqual(after(13000), (1032000, 7000))  # 7 ms of a 10 ms period lost
        self.assertEqual(gate.stats()["slots_missed"], 1)
        self.assertEqual(gate.stats()["reslots"], 0)
        gate.close()

    def test_log_every_n_iterations(self):
        self.env.update({"PHASOR_ORIGIN_EPOCH_US": "0", "PHASOR_PERIOD_US": "1000"})
        now = [1000]
        gate = phasor.IterationGate.from_env(self.env, strict=True, clock=lambda: now[0], log_every=2)
        with self.assertLogs("phasor.agent", logging.INFO) as logs:
            for _ in range(5):
                gate.wait()
        self.assertEqual(logs.output, [
            "INFO:phasor.agent:phasor gate job-a: 2 iterations, 1 gated, waited 0.000 s, 0 slots missed, "
            "0 fail-opens, offset version 0",
            "INFO:phasor.agent:phasor gate job-a: 4 iterations, 1 gated, waited 0.000 s, 0 slots missed, "
            "0 fail-opens, offset version 0"])
        gate.close()


class RepeatedOffsetTest(unittest.TestCase):
    """A stand-in for phasord's PUB socket on the gate's offset endpoint: the
    same offset heard again (re-published) never re-aligns the gate; a newer
    version (phasord's closed loop re-sends a drifting job's offset with one)
    or another slot grid does; an older version is ignored. The gate's clock
    is fake (only its sleeps and the test move it); the sockets are real."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="phasor-py-repeat-")
        self.context = zmq.Context()
        self.pub = self.context.socket(zmq.PUB)
        self.pub.linger = 0
        self.pub.bind("ipc://%s/offsets" % self.dir)
        self.now = [1000500]

        def sleep_us(us):
            self.now[0] += us

        env = {"PHASOR_JOB": "job-a", "PHASOR_REQUEST_ENDPOINT": "ipc://%s/requests" % self.dir,
               "PHASOR_OFFSET_ENDPOINT": "ipc://%s/offsets" % self.dir, "PHASOR_MODE": "once",
               "PHASOR_ORIGIN_EPOCH_US": "1000000", "PHASOR_PERIOD_US": "10000", "PHASOR_SHIFT_US": "2000",
               "PHASOR_OFFSET_VERSION": "1"}
        self.gate = phasor.IterationGate.from_env(env, strict=True, clock=lambda: self.now[0], sleep_us=sleep_us)
        self.assertEqual(self.after(0), (True, 1500, 1))  # the environment's offset: its first slot
        time.sleep(0.3)  # the subscription reaches the PUB socket before anything is sent

    def tearDown(self):
        self.gate.close()
        self.pub.close(0)
        self.context.term()
        shutil.rmtree(self.dir, ignore_errors=True)

    def publish(self, origin=1000000, shift=2000, version=1):
        update = pb.OffsetUpdate(job="job-a", origin_epoch_us=origin, period_us=10000, shift_us=shift,
                                 version=version)
        self.pub.send_multipart([b"job-a"] + phasor.encode(update))
        time.sleep(0.05)  # delivered to the gate's socket before its next wait()

    def after(self, us):
        self.now[0] += us
        r = self.gate.wait()
        return r["aligned"], r["waited_us"], r["offset_version"]

    def test_a_repeated_offset_never_realigns_a_newer_one_does(self):
        # The same offset, re-published three times: no iteration waits.
        for _ in range(3):
            self.publish()
            self.assertEqual(self.after(3000), (False, 0, 1))
        # The same slots said another way (origin one period later): no wait.
        self.publish(origin=1010000)
        self.assertEqual(self.after(3000), (False, 0, 1))
        # A newer version, same slots (a closed-loop re-send): re-aligns.
        self.publish(version=2)
        aligned, waited, version = self.after(3000)
        self.assertEqual((aligned, version), (True, 2))
        self.assertEqual((self.now[0] - 1002000) % 10000, 0)  # on a slot
        self.assertLess(waited, 10000)
        # An older version after it: ignored.
        self.publish(version=1, shift=7000)
        self.assertEqual(self.after(3000), (False, 0, 2))
        # The same version on another grid (a phasord that lost its state): re-aligns.
        self.publish(version=2, shift=7000)
        aligned, _, version = self.after(3000)
        self.assertEqual((aligned, version), (True, 2))
        self.assertEqual((self.now[0] - 1007000) % 10000, 0)


if __name__ == "__main__":
    unittest.main()
