#!/bin/sh
# phasor's Slurm TaskProlog (docs/slurm.md): every task of a job the Prolog
# committed on this node gets its offset as PHASOR_* variables, which the
# C++ and Python agents read. Other jobs get nothing and cost nothing: no
# mark in PHASOR_JOBS_DIR (jobs_dir of PHASOR_CONFIG), no program started.
PHASOR=/usr/local/bin/phasor
PHASOR_CONFIG=/etc/phasor/slurm-node.yaml
PHASOR_JOBS_DIR=/run/phasor/jobs
case "$SLURM_JOB_ID" in ""|*[!0-9]*) exit 0 ;; esac
if [ -e "$PHASOR_JOBS_DIR/$SLURM_JOB_ID" ]; then
  "$PHASOR" slurm task-prolog --config "$PHASOR_CONFIG" 2>/dev/null || true
fi
exit 0
