#!/bin/sh
# phasor's Slurm Prolog (PrologFlags=Alloc; docs/slurm.md): tells the
# controller that a job it placed started, so phasord publishes its offset,
# and, only once the commit succeeded, marks the job on this node for the
# TaskProlog. Endpoints and keys are in PHASOR_CONFIG, the one file the
# operator distributes to every node. Never fails the node: every problem is
# logged on stderr (slurmd's log) and the status is 0.
PHASOR=/usr/local/bin/phasor
PHASOR_CONFIG=/etc/phasor/slurm-node.yaml
case "$SLURM_JOB_COMMENT" in
  phasor|"phasor "*) "$PHASOR" slurm prolog --config "$PHASOR_CONFIG" || true ;;
esac
exit 0
