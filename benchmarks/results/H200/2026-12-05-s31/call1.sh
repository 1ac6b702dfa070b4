#!/usr/bin/env bash
# Thirty-first session, call 1: per-program timelines of route-direct decode calls
# (scripts/decode_timeline.py): M=1 FP8 and bf16 cases on the tuned table, and on four of them
# config variants (PDL off, 4-warp programs, twice the gate/up rows, register caps, the down's
# K steps preloaded before its PDL wait).
# Packed into $OUT/r.tgz.
R=/tmp/r1; LIMIT=470; . scripts/call_setup.sh
TL="python scripts/decode_timeline.py"
timeout 200 $TL --cases hunyuan_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_block:1,qwen3_30b_a3b:fp8_tensor:1,deepseek_v3_tp8:fp8_tensor:1 \
  --variants pdl_off,down_w4,down_w8,gu_w4,gu_n2x,gu_cap64_dn_cap96,down_preload4 --out $R/variants > $R/variants.log 2>&1; step "variants rc $?"
timeout 150 $TL --cases hunyuan_tp8:fp8_block:1,gpt_oss_120b_tp4:fp8_tensor:1,qwen3_30b_a3b:fp8_block:1,deepseek_v3_tp8:fp8_block:1,hunyuan_tp8:bf16:1,qwen3_30b_a3b:bf16:1,gpt_oss_120b_tp4:bf16:1,mixtral_8x7b_tp2:fp8_tensor:1,hunyuan_tp8:fp8_tensor:2,hunyuan_tp8:fp8_tensor:8,gpt_oss_120b_tp4:fp8_tensor:4 \
  --out $R/cases > $R/cases.log 2>&1; step "cases rc $?"
finish
