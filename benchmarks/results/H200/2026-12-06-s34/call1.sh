#!/usr/bin/env bash
# Thirty-fourth session, call 1: short K steps with a deep pipeline in the route-direct GEMV tiles
# (tune's gate_up_pipelined / down_pipelined moves: tile and depth together).  GPU test of the
# pipelined loops (bitwise the plain loads, depths 2..6); the tuner over both moves from each
# PEERS entry at M 1, 2 (30 cases); the decode bench at M 1, 2 with the start table and the tuned
# one in turn (start tuned tuned start); timelines of two small FP8 layers with pipelined gate/up
# tiles forced (gate/up's last end, the down's start).
R=/tmp/r1; LIMIT=570; . scripts/call_setup.sh
cp $T $R/route_direct_start.json
timeout 90 python -m pytest -q -x tests/test_fused_moe.py -k "pipeline_is_bitwise" > $R/tests.log 2>&1
step "tests rc $?"
timeout 250 python -m fusedmoe tune --shape peers --formats bf16,fp8_tensor,fp8_block --tokens 1,2 \
  --paths route_direct --moves gate_up_pipelined,down_pipelined --force --budget-min 3.8 --log $R/tune.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block --tokens 1,2 --shape peers --replays 10"
bench_in_turn "$B" 35 start tuned tuned start
cp $R/route_direct_start.json $T
timeout 75 python scripts/decode_timeline.py --cases hunyuan_tp8:fp8_tensor:1,gpt_oss_120b_tp4:fp8_tensor:1 \
  --variants gu_4x512_s4,gu_4x512_s6,gu_8x256_s4,dn_8x128_s4 --out $R/timeline > $R/timeline.log 2>&1
step "timeline rc $?"
finish
