#!/usr/bin/env bash
# Throw-away (25th session): auto's plan over R 8..2048 x E 8..2048 with the measured rule, the plan tests
# on the GPU, and the atomic recount under compute-sanitizer memcheck.
set -u
R=/tmp/r2; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( sleep 560; tar czf $OUT/r.tgz -C $R . ) >/dev/null 2>&1 & WD=$!
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt
P="python -m fusedmoe.bench.plan --routes 8,64,256,512,1024,2048"
t0=$(date +%s)
for e in 8 64 128 256 512 1024 2048; do $P --experts $e > $R/warm_$e.log 2>&1 & done
python tmp_plan_memcheck.py > $R/warm_memcheck.log 2>&1 &
wait; echo "warm +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
$P --experts 8,64,128,256,512,1024,2048 --out $R/plan_auto > $R/plan_auto.log 2>&1
echo "plan auto rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
  python tmp_plan_memcheck.py > $R/memcheck_plan.log 2>&1
echo "memcheck rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
tar czf $OUT/r.tgz -C $R .
timeout $((540-$(date +%s)+t0)) python -m pytest -q tests/test_plan.py -p no:cacheprovider > $R/test_plan_gpu.log 2>&1
echo "tests rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
kill $WD 2>/dev/null; tar czf $OUT/r.tgz -C $R .
