#!/usr/bin/env bash
# Forty-fifth session, call 1: the test suite on CUDA (its last full run was the thirty-ninth session;
# the Gluon sets, their heuristic rule and the EP-aware dispatch came after), with the split-I probe's
# kernels compiling beside it; then the split-I probe on the Mixtral shapes (large I, top-2) against
# auto, M 1, 2, 4, bf16 and fp8_tensor.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-570}; . scripts/call_setup.sh
D=benchmarks/results/H200/2026-12-07-s45
probe() { timeout $2 python $D/split_i_probe.py --shapes mixtral_8x7b_tp2,mixtral_8x7b --tokens 1,2,4 $1; }
probe "--compile-only --out $R/split_i_warm" 300 > $R/split_i_warm.log 2>&1 &
PW=$!
xdist=$(python -c "import xdist" 2>/dev/null && echo "-n 8")
FUSEDMOE_FUZZ=30 timeout 330 python -m pytest tests -q -rf --durations=10 $xdist > $R/tests.log 2>&1; step "tests rc $?"
wait $PW; step "probe compiled rc $?"
probe "--out $R/split_i" 150 > $R/split_i.log 2>&1; step "split_i rc $?"
[ $(el) -lt 470 ] && { timeout 90 python -m fusedmoe check graphs --out $R/graphs > $R/graphs.log 2>&1; step "graphs rc $?"; }
finish
