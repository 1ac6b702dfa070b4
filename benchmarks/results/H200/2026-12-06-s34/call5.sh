#!/usr/bin/env bash
# Thirty-fourth session, call 5: is the down after its PDL wait bound by its own instructions?
# Timelines, as benched and with every id -1, of four M=1 FP8 cases with the entry's down and
# with its products in fp16 or fp32 (fewer or more instructions a weight) and 4 or 8 warps.
R=/tmp/r5; LIMIT=300; . scripts/call_setup.sh
timeout 280 python scripts/decode_timeline.py --dropped --variants fp16_on,fp16_off,down_w4,down_w8 \
  --cases hunyuan_tp8:fp8_tensor:1,deepseek_v3_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_tensor:1,qwen3_30b_a3b:fp8_tensor:1 \
  --out $R/timeline > $R/timeline.log 2>&1
step "timeline rc $?"
finish
