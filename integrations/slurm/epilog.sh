#!/bin/sh
# phasor's Slurm Epilog (docs/slurm.md): the job ended; its placement leaves
# phasord. Never fails the node.
PHASOR=/usr/local/bin/phasor
PHASOR_SOCKET=/run/phasor/slurm.sock
PHASOR_JOBS_DIR=/run/phasor/jobs
case "$SLURM_JOB_ID" in ""|*[!0-9]*) exit 0 ;; esac
if [ -e "$PHASOR_JOBS_DIR/$SLURM_JOB_ID" ]; then
  "$PHASOR" slurm epilog --socket "$PHASOR_SOCKET" || true
  rm -f "$PHASOR_JOBS_DIR/$SLURM_JOB_ID"
fi
exit 0
