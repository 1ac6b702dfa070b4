#!/usr/bin/env bash
# Throw-away (28th session), call 1: where w4a8 route-direct stops beating grouped.  Both paths
# forced, w4a8, M 1..64, on the five PEERS shapes and the three top-1 shapes (in sample) and the
# three held-out shapes (to check the rule).  The Triton cache is warmed first, one process per
# shape, while the w4a8 GPU tests run.  Results packed into $OUT/r.tgz after every step.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R/warm; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 580; pack ) >/dev/null 2>&1 & WD=$!
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; } > $R/env.txt 2>&1
PEERS="qwen3_30b_a3b deepseek_v3_tp8 mixtral_8x7b_tp2 hunyuan_tp8 gpt_oss_120b_tp4"
TOP1="benchmarks/top1/top1_e8_h4096_i14336.json benchmarks/top1/top1_e16_h4096_i2048.json benchmarks/top1/top1_e16_h2048_i768.json"
HELD="benchmarks/heldout/deepseek_v2_lite.json benchmarks/heldout/llama4_scout_tp8.json benchmarks/heldout/olmoe_1b_7b.json"
TOK=1,2,4,8,12,16,24,32,48,64
B="python -m fusedmoe bench --routing softmax --no-check --formats w4a8 --paths route_direct,grouped --tokens $TOK"
pids=""
i=0
for s in $PEERS $TOP1 $HELD; do
  i=$((i+1))
  (timeout 240 $B --shape $s --calls 1 --replays 1 --out $R/warm/$i > $R/warm/$i.log 2>&1) &
  pids="$pids $!"
done
(timeout 240 python -m pytest -q -n 4 tests/test_w4a8.py tests/test_fused_moe.py tests/test_policy.py -k "w4a8 or fp4 or choose or dispatch" > $R/tests.log 2>&1; echo "rc $?" >> $R/tests.log) &
pids="$pids $!"
wait $pids
step "warm+tests done"
(timeout 200 $B --shape $(echo $PEERS | tr ' ' ,) --replays 10 --out $R/peers > $R/peers.log 2>&1); step "peers rc $?"
(timeout 120 $B --shape $(echo $TOP1 | tr ' ' ,) --replays 10 --out $R/top1 > $R/top1.log 2>&1); step "top1 rc $?"
(timeout $((570 - $(el))) $B --shape $(echo $HELD | tr ' ' ,) --replays 10 --out $R/heldout > $R/heldout.log 2>&1); step "heldout rc $?"
rm -rf $R/warm/*/ ; rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
