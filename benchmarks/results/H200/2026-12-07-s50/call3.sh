#!/usr/bin/env bash
# Fiftieth session, call 3: fp8_tensor's per-format few-routes limit (2.2 up to 80 routes, policy
# FP8_SMALL_EXPERT_FEW) on three more layers no rule was read from, either side of it: auto,
# route_direct and grouped forced.
R=${R:-/tmp/r3}; LIMIT=${LIMIT:-200}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s50/shapes
bench() {  # bench SHAPE TOKENS OUT_NAME TIMEOUT
  timeout $4 python -m fusedmoe bench --routing softmax --no-check --paths auto,route_direct,grouped \
    --formats fp8_tensor --tokens $2 --shape $S/$1.json --replays 10 --out $R/$3 > $R/$3.log 2>&1
}
bench e40_k6_h2048_i512 11,12,13,14 k6_e40 70; step "k6_e40 rc $?"
bench e16_k2_h2560_i1536 13,14,15,16 k2_e16 60; step "k2_e16 rc $?"
bench e28_k4_h3072_i768 12,13,14 k4_e28 60; step "k4_e28 rc $?"
finish
