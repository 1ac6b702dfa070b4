#!/usr/bin/env bash
# Forty-ninth session, call 4: issue 4's figures on the tree with the FP8 small-expert limit (a44a510):
# auto over the PEERS shapes x bf16, fp8_tensor, fp8_block at M 1..8 and 16..512, compared with
# PEERS-H200.md here (`python -m fusedmoe.bench.compare`; meaningful on an H200 only: env.txt names the device).
R=${R:-/tmp/r4}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
if [ "$DEV" != NVIDIA_H200 ]; then step "not an H200: stopped"; finish; exit 0; fi
bench() {  # bench TOKENS OUT_NAME TIMEOUT
  timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block \
    --tokens $1 --shape peers --replays 10 --out $R/$2 > $R/$2.log 2>&1
}
bench 1,2,4,8 decode 150; step "decode rc $?"
bench 16,32,64,128,512 m16_512 170; step "m16_512 rc $?"
finish
