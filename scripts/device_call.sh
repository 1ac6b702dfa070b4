#!/usr/bin/env bash
# One device call: the GPU check steps given, the decode sweep, and a benchmark; results tarred into $OUT.
# Usage (on the device): scripts/device_call.sh "graphs accuracy memcheck sass" "SWEEP_ARGS" "BENCH_ARGS"
set -u
R=/tmp/res; mkdir -p $R
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/fusedmoe-triton-cache
t0=$(date +%s); stamp() { echo "--- $1 at +$(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
for s in $1; do stamp $s; timeout ${STEP_TIMEOUT:-200} scripts/gpu_check.sh $R $s 2>&1 | grep -v nvdisasm | tail -6; done
if [ -n "$2" ]; then stamp sweep; timeout ${SWEEP_TIMEOUT:-200} python scripts/sweep_route_direct.py --out $R $2 2>&1 | grep -v skip | tee $R/sweep.log | grep -E "M=|Error" ; fi
if [ -n "$3" ]; then stamp bench; timeout ${BENCH_TIMEOUT:-200} python -m fusedmoe bench --out $R/bench $3 > $R/bench.log 2>&1; tail -40 $R/bench.log; fi
stamp done
tar czf $OUT/res.tgz -C $R .
