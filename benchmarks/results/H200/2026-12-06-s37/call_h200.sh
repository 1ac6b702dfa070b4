#!/usr/bin/env bash
# Thirty-seventh session (a copy of the thirty-sixth session's call3.sh), H200 measurement (runs only on an H200; elsewhere it stops at once): the
# thirty-fifth session's 'down_gluon' move from each PEERS entry at M 1, 2, 4, 8 (the tuner, then
# the decode bench on the start table and the tuned one in turn), then, with SKIP_M16 unset,
# M 16..512 on the tuned table (the decision to ship it is made on the CPU from the A/B).
R=${R:-/tmp/rh}; LIMIT=${LIMIT:-590}; . scripts/call_setup.sh
if [ "$DEV" != NVIDIA_H200 ]; then step "not an H200 ($DEV): stopped"; finish; exit 0; fi
tune_and_ab down_gluon 1,2,4,8 170 2.5 1,2,4,8 75
cp $R/route_direct_tuned.json $T
[ -n "${SKIP_M16:-}" ] || timeout 130 python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block \
  --tokens 16,32,64,128,512 --shape peers --replays 10 --out $R/m16_512 > $R/m16_512.log 2>&1
step "m16..512 rc $?"
cp $R/route_direct_start.json $T
finish
