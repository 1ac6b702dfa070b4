#!/usr/bin/env bash
# Forty-ninth session, call 2: the FP8 small-expert dispatch limit (policy.FP8_SMALL_EXPERT_*), out of
# the sample it was read from: auto (the new rule), route_direct and grouped forced at M 8..48 on the
# held-out shapes, the three top-1 layers and Qwen3-235B TP4 (9.4 MB experts, near the bound), and on
# the PEERS shapes at M 24 (both formats).
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
bench() {  # bench SHAPES TOKENS OUT_NAME TIMEOUT
  timeout $4 python -m fusedmoe bench --routing softmax --no-check --paths auto,route_direct,grouped \
    --formats fp8_tensor,fp8_block --tokens $2 --shape $1 --replays 10 --out $R/$3 > $R/$3.log 2>&1
}
H=benchmarks/heldout; T=benchmarks/top1
bench $H/deepseek_v2_lite.json,$H/llama4_scout_tp8.json,$H/olmoe_1b_7b.json 8,12,16,24,32,48 heldout 200; step "heldout rc $?"
bench $T/top1_e16_h2048_i768.json,$T/top1_e16_h4096_i2048.json,$T/top1_e8_h4096_i14336.json 8,12,16,24,32 top1 150; step "top1 rc $?"
bench qwen3_235b_a22b_tp4 8,16,24,32,48 qwen235_tp4 80; step "qwen235 rc $?"
bench peers 24 peers_m24 120; step "peers m24 rc $?"
finish
