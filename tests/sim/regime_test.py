#!/usr/bin/env python3
"""scripts/regime.py on series written by the simulator's --series format:
a link overloaded on average is named with its mean demand and "no time shift
can help"; a link whose duty cycles sum below 1 says shifts can interleave;
a --compare series is read by mode; a file that is not a series exits 2
naming it."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "regime.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def square(cap, demand_up, up_us, period_us, periods):
    # [t, carried, demand] points of a square wave, piecewise constant.
    pts = []
    for k in range(periods):
        t = k * period_us
        pts.append([t, min(cap, demand_up), demand_up])
        pts.append([t + up_us, 0.0, 0.0])
    pts.append([periods * period_us, 0.0, 0.0])
    return {"capacity_gbps": cap, "load": pts}


class RegimeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="phasor-regime-")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, doc):
        path = os.path.join(self.dir.name, "series.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_overloaded_and_interleavable_links(self):
        # up: 100 Gb/s for 75 % of each period on a 50 Gb/s link: demand 1.5x.
        # calm: 40 Gb/s for 50 %: 0.4x, never above capacity.
        series = {"window_us": 1, "links": {"up": square(50, 100, 75, 100, 10), "calm": square(50, 40, 50, 100, 10)}}
        r = run(self.write(series))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("bottleneck up: mean demand 1.50x its capacity: overloaded on average", r.stdout)
        series = {"off": {"links": {"calm": square(50, 40, 50, 100, 10)}}, "phasor": {"links": {}}}
        r = run(self.write(series), "off")
        self.assertIn("bottleneck calm: mean demand 0.40x its capacity (duty cycles sum to at most 1)", r.stdout)
        self.assertEqual(run(self.write(series), "phasor").stdout.strip(), "regime: no loaded link in the recorded window")

    def test_bad_inputs_are_named(self):
        r = run(self.write({"nothing": 1}))
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a series of `phasor simulate --series` (no 'links')", r.stderr)
        r = run(self.write({"off": {"links": {}}}), "cassini")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no mode 'cassini' (has off)", r.stderr)
        r = run(os.path.join(self.dir.name, "missing.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.json", r.stderr)


if __name__ == "__main__":
    unittest.main()
