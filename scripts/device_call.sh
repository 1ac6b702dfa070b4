#!/usr/bin/env bash
# One call on the lent GPU: scripts/gpu_check.sh with the given steps, everything it wrote
# packed into $OUT/results.tgz (the device tool brings back at most 8 files).
#   scripts/device_call.sh [steps...]
set -u
R=/tmp/fusedmoe-results
mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $R/gpu.txt
scripts/gpu_check.sh $R "$@"; rc=$?
tar czf "$OUT/results.tgz" -C $R .
exit $rc
