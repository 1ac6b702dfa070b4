#!/usr/bin/env bash
# Fifty-first session, call 3: fp8_block's few-routes dispatch limit (policy.FP8_SMALL_EXPERT_FEW, 2.0 up
# to 64 routes, held below fp8_tensor's 2.2 up to 80 because its route-direct GEMV ran 3-11% slower) now
# that untuned layers run the scale-row GEMVs: the fiftieth session's seven layers (its calls 1 and 3) at
# the same M, fp8_block, auto, route_direct and grouped forced.  Then the tuned fp8_block entries with
# the scale-row form under register caps at the per-row form's counts (route_direct_capped_rows.json,
# from capped_rows_table.py: the 13 entries whose kernels then compile without spills) against the
# shipped table: route_direct forced, fp8_block, PEERS M 1..8, in turn start, capped, capped, start.
R=${R:-/tmp/r3}; LIMIT=${LIMIT:-450}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s50/shapes
bench() {  # bench SHAPE TOKENS OUT_NAME TIMEOUT
  timeout $4 python -m fusedmoe bench --routing softmax --no-check --paths auto,route_direct,grouped \
    --formats fp8_block --tokens $2 --shape $S/$1.json --replays 10 --out $R/$3 > $R/$3.log 2>&1
}
bench e20_k2_h3072_i1024 13,14,15,16,17 k2_e20 60; step "k2_e20 rc $?"
bench e12_k2_h2048_i1536 8,9,10,11 k2_e12 45; step "k2_e12 rc $?"
bench e24_k3_h2560_i1280 11,12,13,14 k3_e24 45; step "k3_e24 rc $?"
bench e48_k8_h1536_i640 7,8,9,10 k8_e48 45; step "k8_e48 rc $?"
bench e40_k6_h2048_i512 11,12,13,14 k6_e40 45; step "k6_e40 rc $?"
bench e16_k2_h2560_i1536 13,14,15,16 k2_e16 40; step "k2_e16 rc $?"
bench e28_k4_h3072_i768 12,13,14 k4_e28 40; step "k4_e28 rc $?"
cp $T $R/route_direct_start.json; cp benchmarks/results/H200/2026-12-07-s51/route_direct_capped_rows.json $R/route_direct_capped.json
bench_in_turn "python -m fusedmoe bench --routing softmax --no-check --paths route_direct --formats fp8_block --tokens 1,2,4,8 --shape peers --replays 10" \
  70 start capped capped start
cp $R/route_direct_start.json $T
finish
