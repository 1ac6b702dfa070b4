#!/usr/bin/env bash
# Thirty-sixth session, call 6: the down's weights asked of L2 by gate/up
# (RouteDirectConfig.down_l2_prefetch).  GPU tests; traced timelines with and without it (four
# M=1 cases); the tuner over the move from each PEERS entry at M 1, 2, 4, 8, then the decode
# bench on the start table and the tuned one in turn if an entry moved.
R=/tmp/r6; LIMIT=560; . scripts/call_setup.sh
timeout 90 python -m pytest -q -x tests/test_fused_moe.py -k "l2_prefetch or gemv_pipeline" > $R/tests.log 2>&1
step "tests rc $?"
timeout 90 python scripts/decode_timeline.py --variants down_l2_prefetch \
  --cases hunyuan_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_block:1,qwen3_30b_a3b:fp8_tensor:1,deepseek_v3_tp8:fp8_tensor:1 \
  --out $R/timeline > $R/timeline.log 2>&1
step "timeline rc $?"
rm -f $R/timeline/timeline.json
tune_and_ab down_l2_prefetch 1,2,4,8 150 2.2 1,2,4,8 75
finish
