#!/bin/sh
# phasor's Slurm TaskProlog (docs/slurm.md): every task of a job the Prolog
# committed on this node gets its offset as PHASOR_* variables, which the
# C++ and Python agents read. Other jobs get nothing and cost nothing (no
# mark, no question to phasord).
PHASOR=/usr/local/bin/phasor
PHASOR_CONFIG=/etc/phasor/slurm-node.yaml
"$PHASOR" slurm task-prolog --config "$PHASOR_CONFIG" 2>/dev/null || true
exit 0
