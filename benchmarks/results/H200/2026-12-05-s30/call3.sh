#!/usr/bin/env bash
# Thirtieth session, call 3: the 'register_caps' move at M 4, 8 (PEERS shapes) and at M 16 where
# auto runs route-direct there (DeepSeek-V3 TP8, Hunyuan TP8, GPT-OSS TP4), from the table with
# call 2's M 1, 2 entries; then the decode bench (60 cases) with the session's start table
# (call2/route_direct_start.json) and the final one in turn (start, final, final, start), once more
# on the final table with the accuracy check, and M 16..512 on the final table (M=16 also on the
# start table).  Packed into $OUT/r.tgz.
set -u
R=/tmp/r3; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
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
S=benchmarks/results/H200/2026-12-05-s30
cp $S/call2/route_direct_start.json $R/route_direct_start.json
TU="python -m fusedmoe tune --paths route_direct --moves register_caps --force --formats bf16,fp8_tensor,fp8_block"
timeout 230 $TU --shape peers --tokens 4,8 --budget-min 3.6 --log $R/tune_m4_8.jsonl > $R/tune_m4_8.log 2>&1; step "tune m4,8 rc $?"
timeout 120 $TU --shape deepseek_v3_tp8,hunyuan_tp8,gpt_oss_120b_tp4 --tokens 16 --budget-min 1.8 --log $R/tune_m16.jsonl > $R/tune_m16.log 2>&1; step "tune m16 rc $?"
cp $T $R/route_direct_final.json
B="python -m fusedmoe bench --routing softmax --paths auto --formats bf16,fp8_tensor,fp8_block --shape peers --replays 10"
n=0
for v in start final final start; do
  n=$((n+1)); cp $R/route_direct_$v.json $T
  timeout 60 $B --no-check --tokens 1,2,4,8 --out $R/dec_${n}_$v > $R/dec_${n}_$v.log 2>&1; step "dec $n $v rc $?"
done
cp $R/route_direct_final.json $T
timeout 90 $B --tokens 1,2,4,8 --out $R/dec_checked_final > $R/dec_checked_final.log 2>&1; step "dec checked rc $?"
timeout 120 $B --no-check --tokens 16,32,64,128,512 --out $R/m16_final > $R/m16_final.log 2>&1; step "m16 final rc $?"
cp $R/route_direct_start.json $T
timeout 40 $B --no-check --tokens 16 --out $R/m16only_start > $R/m16only_start.log 2>&1; step "m16only start rc $?"
cp $R/route_direct_final.json $T
rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
