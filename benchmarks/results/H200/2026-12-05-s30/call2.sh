#!/usr/bin/env bash
# Thirtieth session, call 2: the route-direct 'register_caps' tuner move (both kernels' register
# caps at once, so that down programs fit beside gate/up's under PDL) from each PEERS entry at
# M 1, 2 (30 cases), then the decode bench at M 1, 2 with the start table and the tuned one in
# turn (start, tuned, tuned, start).  On a device other than the H200 the H200 tables are
# copied under its name first (the start entries are the H200's).  Packed into $OUT/r.tgz.
set -u
R=/tmp/r2; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 585; pack ) >/dev/null 2>&1 & WD=$!
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; date -u; } > $R/env.txt 2>&1
DEV=$(python -c "import torch; from fusedmoe.policy import device_dir_name; print(device_dir_name(torch.cuda.get_device_name()))")
C=fusedmoe/configs
if [ "$DEV" != NVIDIA_H200 ]; then mkdir -p $C/$DEV; cp $C/NVIDIA_H200/*.json $C/$DEV/; fi
T=$C/$DEV/route_direct.json
cp $T $R/route_direct_start.json
timeout 400 python -m fusedmoe tune --shape peers --formats bf16,fp8_tensor,fp8_block --tokens 1,2 \
  --paths route_direct --moves register_caps --force --budget-min 6.2 --log $R/tune_register_caps.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block --tokens 1,2 --shape peers --replays 10"
n=0
for v in start tuned tuned start; do
  n=$((n+1)); cp $R/route_direct_$v.json $T
  timeout 60 $B --out $R/dec_${n}_$v > $R/dec_${n}_$v.log 2>&1; step "dec $n $v rc $?"
done
rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
