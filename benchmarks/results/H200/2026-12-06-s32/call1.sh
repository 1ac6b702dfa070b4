#!/usr/bin/env bash
# Thirty-second session, call 1 (as run at cfebf11; the down_prefetch move and its variants were
# removed after it, so this script no longer runs as it stands): the down's weights prefetched into
# L2 by the GEMV gate/up (RouteDirectConfig.down_prefetch, new) and the down's preload (thirty-first
# session, untimed).
#  1. GPU tests: both moves bitwise their plain runs, every format.
#  2. Timelines (scripts/decode_timeline.py) of six M=1 cases under down_prefetch 1 / 2 and
#     down_preload 4 against the case's tuned config (graph us a call, and where the time goes).
# Floor (bytes / 4.25 TB/s) and expectation: Hunyuan TP8 fp8_tensor M=1 reads 18.9 MB (4.4 us)
# and takes 9.3; its down (6.3 MB, 256 programs, one short wave) starts when gate/up ends and
# waits on HBM round trips.  Prefetched into L2 during gate/up, the down should read L2: 0.5-1.5
# us less at the small M=1 FP8 layers (Hunyuan, GPT-OSS TP4, DeepSeek-V3 TP8), less in bf16.
# On a device other than the H200 the H200 tables are copied under its name first.  Packed into $OUT/r.tgz.
R=/tmp/r1; LIMIT=230; . scripts/call_setup.sh
timeout 60 python -m pytest -q -x tests/test_fused_moe.py -k "prefetch or preload" > $R/tests.log 2>&1; step "tests rc $?"
timeout 150 python scripts/decode_timeline.py \
  --cases hunyuan_tp8:fp8_tensor:1,hunyuan_tp8:bf16:1,gpt_oss_120b_tp4:fp8_block:1,deepseek_v3_tp8:fp8_tensor:1,qwen3_30b_a3b:fp8_tensor:1,mixtral_8x7b_tp2:fp8_tensor:1 \
  --variants down_prefetch1,down_prefetch2,down_preload4 --out $R/variants > $R/variants.log 2>&1; step "variants rc $?"
finish
