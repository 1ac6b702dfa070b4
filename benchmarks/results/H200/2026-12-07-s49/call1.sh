#!/usr/bin/env bash
# Forty-ninth session, call 1: issue 4's "auto within 5% of the best forced path at every measured M",
# last measured over the PEERS shapes at M 1..32 in the sixteenth session: auto, route_direct and
# grouped forced, the PEERS shapes x bf16, fp8_tensor, fp8_block at M 1..512 on the committed tree.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
bench() {  # bench TOKENS OUT_NAME TIMEOUT
  timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths auto,route_direct,grouped \
    --formats bf16,fp8_tensor,fp8_block --tokens $1 --shape peers --replays 10 --out $R/$2 > $R/$2.log 2>&1
}
bench 1,2,4,8 decode 200; step "decode rc $?"
bench 16,32,64,128,512 m16_512 340; step "m16_512 rc $?"
finish
