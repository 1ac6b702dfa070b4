#!/usr/bin/env bash
# Thirty-fourth session, call 4: where a small layer's fixed cost goes.  Timelines of the six M=1
# cases of the thirty-second session, as benched and with every id -1 (decode_timeline --dropped:
# both grids launched, no weight read: gate/up's programs exit at their id, the down's run their
# arithmetic on zeros); then the route-direct GPU tests at this commit (down_preload removed).
R=/tmp/r4; LIMIT=420; . scripts/call_setup.sh
timeout 150 python scripts/decode_timeline.py --dropped \
  --cases hunyuan_tp8:fp8_tensor:1,hunyuan_tp8:bf16:1,gpt_oss_120b_tp4:fp8_block:1,deepseek_v3_tp8:fp8_tensor:1,qwen3_30b_a3b:fp8_tensor:1,mixtral_8x7b_tp2:fp8_tensor:1 \
  --out $R/timeline > $R/timeline.log 2>&1
step "timeline rc $?"
timeout 230 python -m pytest -q -x tests/test_fused_moe.py -k "route_direct" > $R/tests.log 2>&1
step "tests rc $?"
finish
