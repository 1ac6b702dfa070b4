#!/usr/bin/env bash
# Thirty-sixth session, call 10 (run inline, committed after): each kernel's device time of one
# Mixtral TP2 M=512 call, as served (PDL: each early-launched kernel's time includes its wait).
R=/tmp/r10; LIMIT=150; . scripts/call_setup.sh
timeout 120 python -m fusedmoe.bench.kernels --shape mixtral_8x7b_tp2 --tokens 512 --formats fp8_tensor,bf16 --path auto \
  --out $R/kernels > $R/kernels.log 2>&1
step "kernels rc $?"
finish
