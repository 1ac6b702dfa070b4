#!/usr/bin/env bash
# Forty-sixth session, call 1: the staged Gluon down (RouteDirectConfig.down_staged: each down
# program copies its whole weight tile to shared memory before its PDL wait; gate/up prefers the
# most shared memory per SM).  Timelines of two M=1 FP8 cases with staged tiles of about one
# program an SM, then the tuner's down_staged and register_caps moves from every PEERS entry at
# M=1, then the decode bench at M=1 on the start table and the tuned one in turn.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
timeout 100 python scripts/decode_timeline.py --cases hunyuan_tp8:fp8_tensor:1,deepseek_v3_tp8:fp8_tensor:1 \
  --variants down_gluon,staged:32:64:4,staged:16:64:4,staged:64:32:8 --out $R/timeline > $R/timeline.log 2>&1
step "timeline rc $?"
cp $T $R/route_direct_start.json
timeout 270 python -m fusedmoe tune --shape hunyuan_tp8,gpt_oss_120b_tp4,deepseek_v3_tp8,qwen3_30b_a3b,mixtral_8x7b_tp2 \
  --formats fp8_tensor,fp8_block,bf16 --tokens 1 --paths route_direct --moves down_staged,register_caps --force \
  --budget-min 3.8 --log $R/tune.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
if same_configs $R/route_direct_start.json $R/route_direct_tuned.json; then step "no entry moved"; else
  bench_in_turn "python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block --tokens 1 --shape peers --replays 10" \
    50 start tuned tuned start
fi
cp $R/route_direct_start.json $T
finish
