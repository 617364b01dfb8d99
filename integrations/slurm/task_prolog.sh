#!/bin/sh
# phasor's Slurm TaskProlog (docs/slurm.md): every task of a placed job gets
# its offset as PHASOR_* variables, which the C++ and Python agents read.
# Jobs without an offset get nothing.
PHASOR=/usr/local/bin/phasor
PHASOR_REQUEST_ENDPOINT=ipc:///run/phasor/requests
PHASOR_OFFSET_ENDPOINT=ipc:///run/phasor/offsets
case "$SLURM_JOB_COMMENT" in
  phasor*) "$PHASOR" offset --job "$SLURM_JOB_ID" --phasord "$PHASOR_REQUEST_ENDPOINT" \
             --offset-endpoint "$PHASOR_OFFSET_ENDPOINT" --mode once --timeout-ms 1000 2>/dev/null || true ;;
esac
exit 0
