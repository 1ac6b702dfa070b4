#!/usr/bin/env bash
# Forty-ninth session, call 3: the final FP8 small-expert limit (1.8 routes per active expert, M <= 32)
# confirmed: auto, route_direct and grouped forced on the PEERS shapes at M 16, 24, 32 and on the
# held-out, top-1 and Qwen3-235B TP4 layers at M 12, 16, 24 (the cases call 2's first limit lost).
R=${R:-/tmp/r3}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
bench() {  # bench SHAPES TOKENS OUT_NAME TIMEOUT
  timeout $4 python -m fusedmoe bench --routing softmax --no-check --paths auto,route_direct,grouped \
    --formats fp8_tensor,fp8_block --tokens $2 --shape $1 --replays 10 --out $R/$3 > $R/$3.log 2>&1
}
H=benchmarks/heldout; T=benchmarks/top1
bench peers 16,24,32 peers 200; step "peers rc $?"
bench $H/deepseek_v2_lite.json,$H/llama4_scout_tp8.json,$H/olmoe_1b_7b.json,$T/top1_e16_h2048_i768.json,qwen3_235b_a22b_tp4 12,16,24 others 200; step "others rc $?"
finish
