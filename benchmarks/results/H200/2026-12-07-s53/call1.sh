#!/usr/bin/env bash
# Fifty-third session, call 1.  On an H200: issue 4's figures on the head, with the plan bench, the
# test suite and the graph check as far as the call's time allows (2026-12-07-s52/call1.sh, its H200
# branch).  On any other card: where GPT-OSS TP4 bf16 M 8..32 spends its time, per kernel
# (bench.kernels; M=16 ran at 0.98x vLLM on the H200, forty-second session), then the tuner's
# `gate_up_wide` move from each PEERS FP8 entry at the M given by TOKENS (default 4) and, if an entry
# moved, the decode bench on the start and tuned tables in turn start, tuned, tuned, start.
# KERNELS=0 skips the GPT-OSS step.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash benchmarks/results/H200/2026-12-07-s52/call1.sh
fi
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
if [ "${KERNELS:-1}" != 0 ]; then
  timeout 120 python -m fusedmoe.bench.kernels --shape gpt_oss_120b_tp4 --formats bf16 --tokens 8,16,32 --path auto \
    --out $R/kernels > $R/kernels.log 2>&1
  step "kernels rc $?"
fi
M=${TOKENS:-4}
cp $T $R/route_direct_start.json
timeout ${TUNE_S:-260} python -m fusedmoe tune --shape peers --formats fp8_tensor,fp8_block --tokens $M \
  --paths route_direct --moves gate_up_wide --force --budget-min ${BUDGET_MIN:-4} --log $R/tune.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
if same_configs $R/route_direct_start.json $R/route_direct_tuned.json; then step "no entry moved"; finish; exit 0; fi
bench_in_turn "python -m fusedmoe bench --routing softmax --no-check --paths auto --formats fp8_tensor,fp8_block --tokens $M --shape peers --replays 10" \
  60 start tuned tuned start
cp $R/route_direct_start.json $T
finish
