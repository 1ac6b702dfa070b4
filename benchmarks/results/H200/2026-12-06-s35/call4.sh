#!/usr/bin/env bash
# Thirty-fifth session, call 4: correctness of the Gluon down under CUDA graphs and memcheck.
# `fusedmoe check graphs` (every path's variants, now with route_direct_gluon_down: captured once,
# replayed with fresh inputs, bitwise equal to eager); the Gluon down's GPU tests under
# compute-sanitizer memcheck.
R=/tmp/r4; LIMIT=470; . scripts/call_setup.sh
timeout 170 python -m fusedmoe check graphs --out $R > $R/graphs.log 2>&1
step "graphs rc $?"
timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 python -m pytest -q -x tests/test_fused_moe.py \
  -k "gluon_down" > $R/memcheck.log 2>&1
step "memcheck rc $?"
finish
