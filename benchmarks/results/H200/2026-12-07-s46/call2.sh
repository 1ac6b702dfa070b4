#!/usr/bin/env bash
# Forty-sixth session, call 2: the test suite on CUDA at the session's head (the code of e63dfd8:
# 852bfe0 and e63dfd8, small refactors, came after the forty-fifth session's GPU run), the CUDA-graph
# replay check, and on an H200 the decode bench at M 1, 2, 4, 8 over the PEERS shapes.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-330}; . scripts/call_setup.sh
xdist=$(python -c "import xdist" 2>/dev/null && echo "-n 8")
timeout 300 python -m pytest tests -q -rf --durations=10 $xdist > $R/tests.log 2>&1; step "tests rc $?"
if [ $(el) -lt 230 ]; then timeout 90 python -m fusedmoe check graphs --out $R/graphs > $R/graphs.log 2>&1; step "graphs rc $?"; fi
if [ "$DEV" = NVIDIA_H200 ] && [ $(el) -lt 250 ]; then
  timeout 70 python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block \
    --tokens 1,2,4,8 --shape peers --replays 10 --out $R/decode > $R/decode.log 2>&1; step "decode rc $?"
fi
finish
