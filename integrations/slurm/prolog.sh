#!/bin/sh
# phasor's Slurm Prolog (PrologFlags=Alloc; docs/slurm.md): tells the
# controller that a job it placed started, so phasord publishes its offset.
# Never fails the node: every problem is logged and the status is 0.
PHASOR=/usr/local/bin/phasor
PHASOR_SOCKET=/run/phasor/slurm.sock
"$PHASOR" slurm prolog --socket "$PHASOR_SOCKET" || true
exit 0
