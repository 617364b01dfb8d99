#!/bin/sh
# Renders the `phasor diagnose` HTML report of an input in headless Chromium
# and saves a screenshot, to check by eye that the report is clear at a
# glance (docs/diagnose.md). No network access: the page is self-contained.
#
#   bench/diagnose_screenshot.sh [PHASOR_BINARY] [INPUT_JSON] [OUT_DIR]
# defaults: build/cmd/phasor, data/examples/diagnose.json, demo-out/
# Writes OUT_DIR/diagnose.html and OUT_DIR/diagnose.png.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
phasor=${1:-$root/build/cmd/phasor}
input=${2:-$root/data/examples/diagnose.json}
out=${3:-$root/demo-out}
width=${WIDTH:-1400}
height=${HEIGHT:-2400}
chromium=${CHROMIUM:-/usr/bin/chromium}

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/diagnose.png"
"$phasor" diagnose --rank-input "$input" --html "$out/diagnose.html" > /dev/null
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
  --hide-scrollbars --screenshot="$out/diagnose.png" --window-size="$width,$height" \
  "file://$out/diagnose.html" > /dev/null 2>&1
# A PNG of the window's size with something drawn on it (an empty page
# compresses to a few kB; the report's pictures to hundreds).
python3 - "$out/diagnose.png" "$width" "$height" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (int(sys.argv[2]), int(sys.argv[3])), f"size {w}x{h}"
assert len(data) > 60000, f"only {len(data)} bytes: is the page blank?"
PY
echo "$out/diagnose.png"
