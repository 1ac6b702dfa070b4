#!/usr/bin/env bash
# Thirty-first session, call 1: per-program timelines of route-direct decode calls
# (scripts/decode_timeline.py): M=1 FP8 and bf16 cases on the tuned table, and on four of them
# config variants (PDL off, 4-warp programs, twice the gate/up rows, register caps).
# Packed into $OUT/r.tgz.
set -u
R=/tmp/r1; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 470; pack ) >/dev/null 2>&1 & WD=$!
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; date -u; } > $R/env.txt 2>&1
DEV=$(python -c "import torch; from fusedmoe.policy import device_dir_name; print(device_dir_name(torch.cuda.get_device_name()))")
C=fusedmoe/configs
if [ "$DEV" != NVIDIA_H200 ]; then mkdir -p $C/$DEV; cp $C/NVIDIA_H200/*.json $C/$DEV/; fi
TL="python scripts/decode_timeline.py"
timeout 200 $TL --cases hunyuan_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_block:1,qwen3_30b_a3b:fp8_tensor:1,deepseek_v3_tp8:fp8_tensor:1 \
  --variants pdl_off,down_w4,down_w8,gu_w4,gu_n2x,gu_cap64_dn_cap96 --out $R/variants > $R/variants.log 2>&1; step "variants rc $?"
timeout 150 $TL --cases hunyuan_tp8:fp8_block:1,gpt_oss_120b_tp4:fp8_tensor:1,qwen3_30b_a3b:fp8_block:1,deepseek_v3_tp8:fp8_block:1,hunyuan_tp8:bf16:1,qwen3_30b_a3b:bf16:1,gpt_oss_120b_tp4:bf16:1,mixtral_8x7b_tp2:fp8_tensor:1,hunyuan_tp8:fp8_tensor:2,hunyuan_tp8:fp8_tensor:8,gpt_oss_120b_tp4:fp8_tensor:4 \
  --out $R/cases > $R/cases.log 2>&1; step "cases rc $?"
kill $WD 2>/dev/null; pack
