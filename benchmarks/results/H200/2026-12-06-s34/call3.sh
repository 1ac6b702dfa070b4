#!/usr/bin/env bash
# Thirty-fourth session, call 3: the route-direct GEMV down split over K (down.split_k, each
# tile's last program adds the shares in split order).  GPU tests of the split (and the kernels
# it touched); the split at real shapes with CUDA-graph replays (split_down_check.py); the tuner
# over 'down_split' (1, 2, 4, 8) from each PEERS entry at M 1, 2, 4, 8; the decode bench at
# M 1, 2, 4 with the start table and the tuned one in turn if any entry moved.
R=/tmp/r3; LIMIT=575; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s34
timeout 110 python -m pytest -q -x tests/test_fused_moe.py tests/test_policy.py \
  -k "down_split or preload_is_bitwise or trace_writes or pdl_equals" > $R/tests.log 2>&1
step "tests rc $?"
timeout 70 python $S/split_down_check.py > $R/split_down_check.log 2>&1
step "check rc $?"
tune_and_ab down_split 1,2,4,8 180 2.8 1,2,4 42
finish
