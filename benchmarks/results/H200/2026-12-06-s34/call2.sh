#!/usr/bin/env bash
# Thirty-fourth session, call 2: the tuner with its case's first graph timing dropped (call 1: the
# start's descent time read 5-15% above its confirmation runs), run over down_preload 2..4 from
# each PEERS entry at M 1, 2 (the thirty-second session's call 2, never run); the decode bench at
# M 1, 2 on the start table and the tuned one in turn; then the fixed cost of each PEERS x
# format case at M=1 (decode_timeline --fixed: as benched, every id -1, every route on one
# expert; the thirty-third session's call 2, never run).
R=/tmp/r2; LIMIT=570; . scripts/call_setup.sh
tune_and_ab down_preload 1,2 200 3.0 1,2 35
C=$(for s in qwen3_30b_a3b deepseek_v3_tp8 mixtral_8x7b_tp2 hunyuan_tp8 gpt_oss_120b_tp4; do
      for f in bf16 fp8_tensor fp8_block; do printf "%s:%s:1," $s $f; done; done)
timeout 200 python scripts/decode_timeline.py --fixed --cases ${C%,} --out $R/fixed > $R/fixed.log 2>&1
step "fixed rc $?"
finish
