#!/usr/bin/env bash
# Thirty-fifth session, call 1: the Gluon route-direct down (RouteDirectConfig.down_gluon: the
# activations loaded in the weights' layout, no shared-memory round per K step, the K reduction
# across lanes once after the loop).  GPU tests of it; timelines of four M=1 FP8 cases with the
# entry's down and the Gluon one, as benched and with every id -1 (the down's own instruction
# cost); the tuner over 'down_gluon' from each PEERS entry at M 1, 2, then the decode bench at
# M 1, 2 on the start table and the tuned one in turn if an entry moved.
R=/tmp/r1; LIMIT=590; . scripts/call_setup.sh
timeout 150 python -m pytest -q -x tests/test_fused_moe.py -k "gluon_down or pdl_equals or trace_writes" > $R/tests.log 2>&1
step "tests rc $?"
timeout 130 python scripts/decode_timeline.py --dropped --variants down_gluon \
  --cases hunyuan_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_tensor:1,deepseek_v3_tp8:fp8_block:1,mixtral_8x7b_tp2:fp8_tensor:1 \
  --out $R/timeline > $R/timeline.log 2>&1
step "timeline rc $?"
tune_and_ab down_gluon 1,2 120 1.8 1,2 38
finish
