#!/usr/bin/env bash
# Throw-away (25th session): the recount plan counting by atomics against the histogram, tiled and
# single kernels, R 8..2048 x E 8..2048 (graph-timed, fusedmoe.bench.plan), then the plan tests on the GPU.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( sleep 520; tar czf $OUT/r.tgz -C $R . ) >/dev/null 2>&1 & WD=$!
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt
P="python -m fusedmoe.bench.plan --routes 8,64,256,512,1024,2048"
EA=8,64,128,256,512,1024,2048
EH=8,64,128,256,512
declare -A V=(
  [auto]="--experts $EA"
  [mem_c32_w4]="--path recount --experts $EA"
  [mem_c32_w8]="--path recount --warps 8 --experts $EA"
  [mem_c64_w4]="--path recount --chunk 64 --experts $EA"
  [mem_c64_w8]="--path recount --chunk 64 --warps 8 --experts $EA"
  [mem_c16_w4]="--path recount --chunk 16 --experts $EA"
  [hist_c32_w4]="--path recount --histogram --experts $EH"
  [tiled]="--path tiled --experts $EA"
  [single_w2]="--path single --warps 2 --routes 8,64,256 --experts $EA"
)
t0=$(date +%s)
# compile every variant's kernels in parallel first (timings of this pass are discarded)
for v in "${!V[@]}"; do $P ${V[$v]} > $R/warm_$v.log 2>&1 & done; wait
echo "warm +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
for v in auto mem_c32_w4 mem_c32_w8 mem_c64_w4 mem_c64_w8 mem_c16_w4 hist_c32_w4 tiled single_w2; do
  $P ${V[$v]} --out $R/$v > $R/$v.log 2>&1; echo "$v rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
done
timeout 120 python -m pytest -q -x tests/test_plan.py -p no:cacheprovider > $R/test_plan_gpu.log 2>&1
echo "tests rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
kill $WD 2>/dev/null; tar czf $OUT/r.tgz -C $R .
