#!/bin/sh
# phasor's Slurm TaskProlog (docs/slurm.md): every task of a job phasor
# placed (marked by the Prolog) gets its offset as PHASOR_* variables, which
# the C++ and Python agents read. Other jobs get nothing and cost nothing.
PHASOR=/usr/local/bin/phasor
PHASOR_JOBS_DIR=/run/phasor/jobs
PHASOR_REQUEST_ENDPOINT=ipc:///run/phasor/requests
PHASOR_OFFSET_ENDPOINT=ipc:///run/phasor/offsets
case "$SLURM_JOB_ID" in ""|*[!0-9]*) exit 0 ;; esac
if [ -e "$PHASOR_JOBS_DIR/$SLURM_JOB_ID" ]; then
  "$PHASOR" offset --job "$SLURM_JOB_ID" --phasord "$PHASOR_REQUEST_ENDPOINT" \
    --offset-endpoint "$PHASOR_OFFSET_ENDPOINT" --mode once --timeout-ms 1000 2>/dev/null || true
fi
exit 0
