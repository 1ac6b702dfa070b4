#!/usr/bin/env bash
# Fifty-second session, call 1.  On an H200: issue 4's figures on the head (auto over the PEERS
# shapes x bf16, fp8_tensor, fp8_block at M 1..8 and 16..512, then compared with PEERS-H200.md
# here) and the plan's time over 8..2048 routes x 8..512 experts; on any other card the plan bench
# only.  Then, on either, the test suite on CUDA (its last full run was the forty-sixth session's)
# and the CUDA-graph replay check, as far as the call's time allows.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
xdist=$(python -c "import xdist" 2>/dev/null && echo "-n 8")
G="--routes 8,64,512,1024,2048 --experts 8,64,128,256,512"
timeout 150 python -m fusedmoe.bench.plan $G > $R/plan_warm.log 2>&1 &
PW=$!
if [ "$DEV" = NVIDIA_H200 ]; then
  bench() {  # bench TOKENS OUT_NAME TIMEOUT
    timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block \
      --tokens $1 --shape peers --replays 10 --out $R/$2 > $R/$2.log 2>&1
  }
  bench 1,2,4,8 decode 150; step "decode rc $?"
  bench 16,32,64,128,512 m16_512 170; step "m16_512 rc $?"
fi
wait $PW; step "plan compiled rc $?"
timeout 60 python -m fusedmoe.bench.plan $G --out $R/plan > $R/plan.log 2>&1; step "plan rc $?"
left=$(( LIMIT - 30 - $(el) ))
[ $left -gt 120 ] && { FUSEDMOE_FUZZ=30 timeout $(( left > 330 ? 330 : left )) python -m pytest tests -q -rf --durations=10 $xdist > $R/tests.log 2>&1; step "tests rc $?"; }
left=$(( LIMIT - 20 - $(el) ))
[ $left -gt 60 ] && { timeout $(( left > 120 ? 120 : left )) python -m fusedmoe check graphs --out $R/graphs > $R/graphs.log 2>&1; step "graphs rc $?"; }
finish
