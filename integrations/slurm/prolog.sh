#!/bin/sh
# phasor's Slurm Prolog (PrologFlags=Alloc; docs/slurm.md): tells the
# controller that a job it placed started, so phasord publishes its offset,
# and marks the job for the TaskProlog (which does not see the comment).
# Never fails the node: every problem is logged and the status is 0.
PHASOR=/usr/local/bin/phasor
PHASOR_SOCKET=/run/phasor/slurm.sock
PHASOR_JOBS_DIR=/run/phasor/jobs
case "$SLURM_JOB_ID" in ""|*[!0-9]*) exit 0 ;; esac
case "$SLURM_JOB_COMMENT" in
  phasor|"phasor "*)
    "$PHASOR" slurm prolog --socket "$PHASOR_SOCKET" || true
    mkdir -p "$PHASOR_JOBS_DIR" && : >"$PHASOR_JOBS_DIR/$SLURM_JOB_ID" ;;
esac
exit 0
