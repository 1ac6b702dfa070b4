#!/usr/bin/env bash
# Thirtieth session, call 1: cache hints on the route-direct weight loads (an experiment knob,
# FUSEDMOE_EXP_WLOAD = "" | cg | ef | cg_ef: ld.global.cg, L2 evict_first, both).  Warm the
# Triton cache (each variant x shape in its own process), then decode M 1..8 over the PEERS
# shapes in the order base, cg, ef, cg_ef, cg_ef, ef, cg, base; then M 16..512 on base.
# Results packed into $OUT/r.tgz after every step.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R/warm; export PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 580; pack ) >/dev/null 2>&1 & WD=$!
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; date -u; } > $R/env.txt 2>&1
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block"
SHAPES="qwen3_30b_a3b deepseek_v3_tp8 mixtral_8x7b_tp2 hunyuan_tp8 gpt_oss_120b_tp4"
pids=""
for v in base cg ef cg_ef; do
  for s in $SHAPES; do
    x=$v; [ $v = base ] && x=""
    (FUSEDMOE_EXP_WLOAD=$x timeout 240 $B --tokens 1,2,4,8 --shape $s --calls 1 --replays 1 --out $R/warm/${v}_$s > $R/warm/${v}_$s.log 2>&1) &
    pids="$pids $!"
  done
done
(timeout 240 $B --tokens 16,32,64,128,512 --shape peers --calls 1 --replays 1 --out $R/warm/m16 > $R/warm/m16.log 2>&1) &
pids="$pids $!"
wait $pids
step "warm done"
D="$B --tokens 1,2,4,8 --shape peers --replays 10"
n=0
for v in base cg ef cg_ef cg_ef ef cg base; do
  n=$((n+1)); x=$v; [ $v = base ] && x=""
  FUSEDMOE_EXP_WLOAD=$x timeout 120 $D --out $R/dec_${n}_$v > $R/dec_${n}_$v.log 2>&1; step "dec $n $v rc $?"
done
timeout $((560 - $(el))) $B --tokens 16,32,64,128,512 --shape peers --replays 10 --out $R/m16_base > $R/m16_base.log 2>&1; step "m16 base rc $?"
rm -rf $R/warm/*/ ; rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
