#!/usr/bin/env bash
# Forty-ninth session, call 6: the FP8 small-expert limit on three more layers no rule was read from
# (shapes/: 16 experts top-2, 32 top-4, 32 top-8, experts of 4.7-9.8 MB), at the M where their routes
# per active expert cross 1.4-2.2: auto, route_direct and grouped forced.
R=${R:-/tmp/r6}; LIMIT=${LIMIT:-400}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s49/shapes
bench() {  # bench SHAPES TOKENS OUT_NAME TIMEOUT
  timeout $4 python -m fusedmoe bench --routing softmax --no-check --paths auto,route_direct,grouped \
    --formats fp8_tensor,fp8_block --tokens $2 --shape $1 --replays 10 --out $R/$3 > $R/$3.log 2>&1
}
bench $S/e16_k2_h4096_i800.json,$S/e32_k4_h2880_i720.json 6,8,10,12 k2k4 150; step "k2k4 rc $?"
bench $S/e32_k8_h2048_i768.json 4,5,6,8 k8 100; step "k8 rc $?"
finish
