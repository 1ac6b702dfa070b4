#!/usr/bin/env bash
# For a later session (not run in the thirty-third: no device time left): what a route-direct
# decode call costs with no weight read, at the 15 PEERS x format cases at M=1
# (scripts/decode_timeline.py --fixed: as benched, every id -1, every route on one expert).
# Expected: the "every id -1" time is the two launches' fixed cost; graph minus it, over the
# floor, is the weight stream's efficiency; together they bound what a one-kernel decode layer
# (no gate/up -> down wait) could gain.
R=/tmp/r2; LIMIT=330; . scripts/call_setup.sh
C=$(for s in qwen3_30b_a3b deepseek_v3_tp8 mixtral_8x7b_tp2 hunyuan_tp8 gpt_oss_120b_tp4; do
      for f in bf16 fp8_tensor fp8_block; do printf "%s:%s:1," $s $f; done; done)
timeout 300 python scripts/decode_timeline.py --fixed --cases ${C%,} --out $R/fixed > $R/fixed.log 2>&1
step "fixed rc $?"
finish
