#!/usr/bin/env bash
# Thirty-fourth session, call 6: the tensor-core down's chain after its wait.  Timelines, as
# benched and with every id -1, of four M=1 FP8 cases with the entry's GEMV down and with the
# tensor-core down (16 x 128, stacked routes; the MMA does the products, so its chain after the
# wait is few instructions, but it loads no weight before the wait).
R=/tmp/r6; LIMIT=200; . scripts/call_setup.sh
timeout 180 python scripts/decode_timeline.py --dropped --variants down_mma \
  --cases hunyuan_tp8:fp8_tensor:1,deepseek_v3_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_tensor:1,qwen3_30b_a3b:fp8_tensor:1 \
  --out $R/timeline > $R/timeline.log 2>&1
step "timeline rc $?"
finish
