#!/usr/bin/env bash
# Thirty-fifth session, call 2: the Gluon down after call 1 (1.044x the Triton down's time over the
# 17 M 1, 2 cases it could run; its packed-fp16 form 1.03-1.20x): its warps now go along the
# routes and K before the rows (no two warps load the same activations) and its products are
# fp32 always.  GPU tests; the tuner over 'down_gluon' from each PEERS entry at M 1, 2, 4, 8,
# then the decode bench at M 1, 2, 4, 8 on the start table and the tuned one in turn if an
# entry moved (if none moved, the bench once on the start table).
R=/tmp/r2; LIMIT=590; . scripts/call_setup.sh
timeout 100 python -m pytest -q -x tests/test_fused_moe.py -k "gluon_down" > $R/tests.log 2>&1
step "tests rc $?"
tune_and_ab down_gluon 1,2,4,8 170 2.5 1,2,4,8 75
if [ ! -d $R/dec_1_start ]; then
  timeout 75 python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block \
    --tokens 1,2,4,8 --shape peers --replays 10 --out $R/dec_start > $R/dec_start.log 2>&1
  step "dec start rc $?"
fi
finish
