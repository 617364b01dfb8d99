#!/usr/bin/env python3
"""Debian's real Prometheus server scrapes a real phasord: phasord's series
reach Prometheus's HTTP API with the values phasord serves.

Starts both in a temp dir (phasord on ipc:// with metrics on a free loopback
port, Prometheus on another), stops both by pid. Run by ctest with PHASORD
(the binary) and PROMETHEUS (Debian's /usr/bin/prometheus).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class PrometheusScrapeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="phasor-prom-")
        self.procs = []
        self.metrics_port = free_port()
        self.prom_port = free_port()
        config = os.path.join(self.dir, "phasord.yaml")
        with open(config, "w") as f:
            f.write("request_endpoint: ipc://%s/requests\nprofile_endpoint: ipc://%s/profiles\n"
                    "offset_endpoint: ipc://%s/offsets\nmetrics_listen: 127.0.0.1:%d\nallow_plain: true\n"
                    "log_level: warn\nstate_path: %s/state.db\n"
                    % (self.dir, self.dir, self.dir, self.metrics_port, self.dir))
        ready = os.path.join(self.dir, "ready.json")
        self.procs.append(subprocess.Popen([os.environ["PHASORD"], "--config", config, "--ready-file", ready]))
        deadline = time.time() + 10
        while not os.path.exists(ready):
            self.assertLess(time.time(), deadline, "phasord did not start")
            self.assertIsNone(self.procs[0].poll(), "phasord exited")
            time.sleep(0.02)
        scrape = os.path.join(self.dir, "prometheus.yml")
        with open(scrape, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
                    "  - job_name: phasord\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                    % self.metrics_port)
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.procs.append(subprocess.Popen(
            [os.environ.get("PROMETHEUS", "/usr/bin/prometheus"), "--config.file=" + scrape,
             "--storage.tsdb.path=" + os.path.join(self.dir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.prom_port, "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT))

    def tearDown(self):
        for p in reversed(self.procs):
            stop(p)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def query(self, expr):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.prom_port, urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=2) as r:
            doc = json.load(r)
        self.assertEqual(doc["status"], "success")
        return doc["data"]["result"]

    def wait_for(self, expr, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.assertIsNone(self.procs[1].poll(), "prometheus exited: see its log")
            try:
                result = self.query(expr)
                if result:
                    return result
            except OSError:
                pass  # Prometheus still starting
            time.sleep(0.25)
        self.fail("no series for %s within %d s" % (expr, timeout))

    def test_phasords_series_reach_prometheus(self):
        up = self.wait_for('up{job="phasord"} == 1')
        self.assertEqual(up[0]["metric"]["instance"], "127.0.0.1:%d" % self.metrics_port)
        self.assertEqual(self.wait_for("phasord_up")[0]["value"][1], "1")
        self.assertEqual(self.wait_for("phasord_jobs")[0]["value"][1], "0")
        epoch = float(self.wait_for("phasord_epoch_us")[0]["value"][1])
        self.assertGreater(epoch, 1.7e15)  # microseconds since the epoch, after 2023
        # The solve histogram is exported as a histogram family.
        buckets = self.wait_for("phasord_solve_seconds_bucket")
        self.assertIn("+Inf", [b["metric"]["le"] for b in buckets])


if __name__ == "__main__":
    unittest.main()
