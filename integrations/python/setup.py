"""Build hooks of the phasor package (metadata is in pyproject.toml).

build_py generates phasor/phasor_pb2.py from phasor.proto with protoc, so the
module is in every wheel and every install; sdist ships phasor.proto beside
setup.py so an sdist builds without the rest of the repository. The .proto is
looked up in order: $PHASOR_PROTO, ./phasor.proto (an sdist),
../../protocol/phasor.proto (the repository). protoc is $PROTOC or the one on
PATH (Debian's protobuf-compiler).
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))


def find_proto():
    candidates = [os.environ.get("PHASOR_PROTO"), os.path.join(HERE, "phasor.proto"),
                  os.path.join(HERE, "..", "..", "protocol", "phasor.proto")]
    for path in candidates:
        if path and os.path.isfile(path):
            return os.path.abspath(path)
    raise SystemExit("phasor: phasor.proto not found (looked at %s); set PHASOR_PROTO to protocol/phasor.proto"
                     % ", ".join(p for p in candidates if p))


def find_protoc():
    protoc = os.environ.get("PROTOC")
    if protoc:
        if not (os.path.isfile(protoc) and os.access(protoc, os.X_OK)):
            raise SystemExit("phasor: PROTOC=%s is not an executable file" % protoc)
        return protoc
    protoc = shutil.which("protoc")
    if not protoc:
        raise SystemExit("phasor: protoc not found on PATH (set PROTOC); on Debian: "
                         "apt-get install protobuf-compiler")
    return protoc


class BuildPyWithProto(build_py):
    """build_py that also writes phasor/phasor_pb2.py into the build tree."""

    def run(self):
        super().run()
        if self.dry_run:
            return
        proto = find_proto()
        out = os.path.join(self.build_lib, "phasor")
        os.makedirs(out, exist_ok=True)
        cmd = [find_protoc(), "--python_out=" + out, "-I", os.path.dirname(proto), proto]
        self.announce("phasor: " + " ".join(cmd), level=2)
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit("phasor: protoc failed on %s: %s" % (proto, result.stderr.strip()))

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, "phasor", "phasor_pb2.py")]


class SdistWithProto(sdist):
    """sdist that ships phasor.proto next to setup.py."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        shutil.copyfile(find_proto(), os.path.join(base_dir, "phasor.proto"))


setup(cmdclass={"build_py": BuildPyWithProto, "sdist": SdistWithProto})
