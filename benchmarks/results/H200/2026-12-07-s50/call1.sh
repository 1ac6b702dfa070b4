#!/usr/bin/env bash
# Fiftieth session, call 1.  On any device: the FP8 small-expert dispatch limits (policy.FP8_SMALL_EXPERT_*)
# on four layers no rule was read from (shapes/: experts of 2.9-9.8 MB, 24-80 routes, 1.6-2.3 routes per
# active expert), auto, route_direct and grouped forced.  On an H200 first: issue 4's figures (auto over
# the PEERS shapes x bf16, fp8_tensor, fp8_block at M 1..8 and 16..512; the forty-ninth session's call 4).
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s50/shapes
bench() {  # bench PATHS FORMATS TOKENS SHAPES OUT_NAME TIMEOUT
  timeout $6 python -m fusedmoe bench --routing softmax --no-check --paths $1 --formats $2 \
    --tokens $3 --shape $4 --replays 10 --out $R/$5 > $R/$5.log 2>&1
}
if [ "$DEV" = NVIDIA_H200 ]; then
  bench auto bf16,fp8_tensor,fp8_block 1,2,4,8 peers decode 150; step "decode rc $?"
  bench auto bf16,fp8_tensor,fp8_block 16,32,64,128,512 peers m16_512 170; step "m16_512 rc $?"
fi
bench auto,route_direct,grouped fp8_tensor,fp8_block 13,14,15,16,17 $S/e20_k2_h3072_i1024.json k2_e20 90; step "k2_e20 rc $?"
bench auto,route_direct,grouped fp8_tensor,fp8_block 8,9,10,11 $S/e12_k2_h2048_i1536.json k2_e12 70; step "k2_e12 rc $?"
bench auto,route_direct,grouped fp8_tensor,fp8_block 11,12,13,14 $S/e24_k3_h2560_i1280.json k3_e24 70; step "k3_e24 rc $?"
bench auto,route_direct,grouped fp8_tensor,fp8_block 7,8,9,10 $S/e48_k8_h1536_i640.json k8_e48 70; step "k8_e48 rc $?"
finish
