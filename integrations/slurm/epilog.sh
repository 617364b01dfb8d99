#!/bin/sh
# phasor's Slurm Epilog (docs/slurm.md), for every job: the controller
# releases the job if phasor placed it, and, while this node is still held,
# re-plans the opted-in jobs that wait for nodes, so they start where phasor
# chose. Bounded by controller_timeout_ms in PHASOR_CONFIG. Never fails the
# node.
PHASOR=/usr/local/bin/phasor
PHASOR_CONFIG=/etc/phasor/slurm-node.yaml
"$PHASOR" slurm epilog --config "$PHASOR_CONFIG" || true
exit 0
