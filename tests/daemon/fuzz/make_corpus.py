#!/usr/bin/env python3
"""Builds the seed corpus of service_fuzz from readable seed files.

Each SEED file holds records, each starting with a line `--- KIND MESSAGE`
(KIND the fuzzer's record kind, MESSAGE a phasor.v1 message name) followed by
the message in protobuf text format. protoc encodes each message; the output
file holds [KIND][length, 2 bytes little-endian][payload] per record, the
fuzzer's input format (tests/daemon/fuzz/service_fuzz.cc).

  make_corpus.py PROTOC PROTO_DIR OUT_DIR SEED...
"""
import os
import subprocess
import sys


def records(path):
    kind, message, body = None, None, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("---"):
                if message is not None:
                    yield kind, message, "".join(body)
                parts = line.split()
                if len(parts) != 3 or not parts[1].isdigit() or int(parts[1]) > 255:
                    sys.exit(f"{path}:{n}: expected '--- KIND MESSAGE' with KIND 0..255, got {line.strip()!r}")
                kind, message, body = int(parts[1]), parts[2], []
            elif message is not None:
                body.append(line)
            elif line.strip() and not line.startswith("#"):
                sys.exit(f"{path}:{n}: text before the first '--- KIND MESSAGE' line")
    if message is not None:
        yield kind, message, "".join(body)


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: make_corpus.py PROTOC PROTO_DIR OUT_DIR SEED...")
    protoc, proto_dir, out_dir, seeds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    os.makedirs(out_dir, exist_ok=True)
    for seed in seeds:
        out = bytearray()
        for kind, message, text in records(seed):
            encoded = subprocess.run(
                [protoc, f"--encode=phasor.v1.{message}", f"-I{proto_dir}", os.path.join(proto_dir, "phasor.proto")],
                input=text.encode(), capture_output=True)
            if encoded.returncode != 0:
                sys.exit(f"{seed}: {message}: {encoded.stderr.decode().strip()}")
            payload = encoded.stdout
            if len(payload) > 0xFFFF:
                sys.exit(f"{seed}: {message}: {len(payload)} bytes is over the record limit of 65535")
            out += bytes([kind, len(payload) & 0xFF, len(payload) >> 8]) + payload
        name = os.path.splitext(os.path.basename(seed))[0]
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(out)


if __name__ == "__main__":
    main()
