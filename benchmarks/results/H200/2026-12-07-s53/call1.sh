#!/usr/bin/env bash
# Fifty-third session's device calls.  On an H200: issue 4's figures on the head (auto over the PEERS
# shapes x bf16, fp8_tensor, fp8_block at M 1..8, then 16..512 after the next step), where GPT-OSS TP4 bf16 M 8..32
# spends its time per kernel (bench.kernels; M=16 ran at 0.98x vLLM on the H200 in the forty-second
# session, at the floor on an H100 in this session's first call), the plan's time over 8..2048
# routes x 8..512 experts and the test suite as far as the call's time allows.  On any other card:
# the GPT-OSS per-kernel step (KERNELS=0 skips it), then the tuner's `gate_up_wide` move from each
# PEERS FP8 entry at the M given by TOKENS (default 4) and, if an entry moved, the decode bench on
# the start and tuned tables in turn start, tuned, tuned, start.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
kernels() {
  timeout 120 python -m fusedmoe.bench.kernels --shape gpt_oss_120b_tp4 --formats bf16 --tokens 8,16,32 --path auto \
    --out $R/kernels > $R/kernels.log 2>&1
  step "kernels rc $?"
}
if [ "$DEV" = NVIDIA_H200 ]; then
  G="--routes 8,64,512,1024,2048 --experts 8,64,128,256,512"
  timeout 150 python -m fusedmoe.bench.plan $G > $R/plan_warm.log 2>&1 &
  PW=$!
  bench() {  # bench TOKENS OUT_NAME TIMEOUT
    timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block \
      --tokens $1 --shape peers --replays 10 --out $R/$2 > $R/$2.log 2>&1
  }
  bench 1,2,4,8 decode 150; step "decode rc $?"
  kernels
  bench 16,32,64,128,512 m16_512 170; step "m16_512 rc $?"
  wait $PW; step "plan compiled rc $?"
  timeout 60 python -m fusedmoe.bench.plan $G --out $R/plan > $R/plan.log 2>&1; step "plan rc $?"
  left=$(( LIMIT - 30 - $(el) ))
  [ $left -gt 120 ] && { timeout $left python -m pytest tests -q -rf $(python -c "import xdist" 2>/dev/null && echo "-n 8") > $R/tests.log 2>&1; step "tests rc $?"; }
  finish; exit 0
fi
[ "${KERNELS:-1}" != 0 ] && kernels
M=${TOKENS:-4}
tune_and_ab gate_up_wide $M ${TUNE_S:-260} ${BUDGET_MIN:-4} $M 60 fp8_tensor,fp8_block
finish
