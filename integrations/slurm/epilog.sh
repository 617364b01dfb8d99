#!/bin/sh
# phasor's Slurm Epilog (docs/slurm.md): the job ended; its placement leaves
# phasord. Never fails the node.
PHASOR=/usr/local/bin/phasor
PHASOR_SOCKET=/run/phasor/slurm.sock
"$PHASOR" slurm epilog --socket "$PHASOR_SOCKET" || true
exit 0
