#!/usr/bin/env bash
# Thirty-fifth session, call 3: GPT-OSS-120B TP4 at M=16, the route-direct case of the M 16..512
# set that ran slower than vLLM on the H200 (0.99x, thirtieth session): the tuner over
# 'down_gluon' from its entries at M=16 (bf16, fp8_tensor, fp8_block), then the bench at
# M 8, 16, 32 on the start table and the tuned one in turn if an entry moved.
R=/tmp/r3; LIMIT=400; . scripts/call_setup.sh
cp $T $R/route_direct_start.json
timeout 150 python -m fusedmoe tune --shape gpt_oss_120b_tp4 --formats bf16,fp8_tensor,fp8_block --tokens 16 \
  --paths route_direct --moves down_gluon --force --budget-min 2 --log $R/tune.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
if ! same_configs $R/route_direct_start.json $R/route_direct_tuned.json; then
  bench_in_turn "python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block --tokens 8,16,32 --shape gpt_oss_120b_tp4 --replays 10" \
    45 start tuned tuned start
fi
finish
