#!/usr/bin/env bash
# End-to-end pcap rate of phasor-probe (DPDK net_pcap -> parse -> bins -> profiles).
#   bench/probe/pcap_e2e.sh [BUILD_DIR=build] [PACKETS=2000000] [FRAME_BYTES=256]
# Prints the stats line of phasor-probe (packets, pps) and the wall time.
set -euo pipefail
build=${1:-build}
packets=${2:-2000000}
frame=${3:-256}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bench/probe/probe_make_pcap" "$tmp/bench.pcap" "$packets" "$frame"
ls -l "$tmp/bench.pcap"
start=$(date +%s.%N)
"$build/cmd/phasor-probe/phasor-probe" --bin-us 1000 --out "$tmp/out.jsonl" -- \
  --no-huge --no-shconf -m 512 --no-pci --no-telemetry --log-level=error \
  --vdev=net_pcap0,rx_pcap="$tmp/bench.pcap" 2>&1 | grep '"stats"'
end=$(date +%s.%N)
echo "wall: $(echo "$end - $start" | bc) s for $packets packets of $frame bytes"
