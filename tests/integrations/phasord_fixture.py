"""Starts a real phasord (PHASORD: its binary) on ipc:// endpoints in a temp
dir and stops it by pid; shared by the Python integration tests."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time


class Phasord:
    def __init__(self, prefix="phasord-py-"):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.requests = "ipc://%s/requests" % self.dir
        self.profiles = "ipc://%s/profiles" % self.dir
        self.offsets = "ipc://%s/offsets" % self.dir
        config = os.path.join(self.dir, "phasord.yaml")
        with open(config, "w") as f:
            f.write("request_endpoint: %s\nprofile_endpoint: %s\noffset_endpoint: %s\n"
                    "metrics_listen: ''\nallow_plain: true\nlog_level: warn\n"
                    "state_path: %s/state.db\n" % (self.requests, self.profiles, self.offsets, self.dir))
        ready = os.path.join(self.dir, "ready.json")
        self.proc = subprocess.Popen([os.environ["PHASORD"], "--config", config, "--ready-file", ready])
        deadline = time.time() + 10
        while not os.path.exists(ready):
            if time.time() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("phasord did not start")
            time.sleep(0.02)
        with open(ready) as f:
            assert json.load(f)["request_endpoint"] == self.requests

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
