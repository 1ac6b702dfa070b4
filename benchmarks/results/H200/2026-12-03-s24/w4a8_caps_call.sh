#!/usr/bin/env bash
# Throw-away (24th session): the w4a8 heuristic's register caps on the GPU: tests, PEERS bench, held-out shapes with and without the caps.
# Run from the repository root with tmp_policy_head.py beside it: git show 1d0cbff:fusedmoe/policy.py (uncapped w4a8).
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
t0=$(date +%s)
( sleep 520; tar czf $OUT/r.tgz -C $R . ) >/dev/null 2>&1 & WD=$!
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt
timeout 150 python -m pytest -q -x tests/test_fused_moe.py tests/test_policy.py -k "register or w4a8" > $R/tests.log 2>&1; echo "tests rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
B="python -m fusedmoe bench --routing softmax --replays 10 --paths auto --formats w4a8 --tokens 128,512,2048"
timeout 150 $B --shape peers --no-check --out $R/peers_w4a8 > $R/peers_w4a8.log 2>&1; echo "peers rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
cp fusedmoe/policy.py $R/policy_tree.py
for f in benchmarks/heldout/*.json; do n=$(basename $f .json)
  timeout 90 $B --shape $f --out $R/heldout_${n}_caps > $R/heldout_${n}_caps.log 2>&1; echo "$n caps rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
  cp tmp_policy_head.py fusedmoe/policy.py
  timeout 90 $B --shape $f --no-check --out $R/heldout_${n}_nocaps > $R/heldout_${n}_nocaps.log 2>&1; echo "$n nocaps rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
  cp $R/policy_tree.py fusedmoe/policy.py
  timeout 90 $B --shape $f --no-check --out $R/heldout_${n}_caps2 > /dev/null 2>&1; echo "$n caps2 rc $? +$(( $(date +%s)-t0 ))s" | tee -a $R/steps.log
done
kill $WD 2>/dev/null; tar czf $OUT/r.tgz -C $R .
