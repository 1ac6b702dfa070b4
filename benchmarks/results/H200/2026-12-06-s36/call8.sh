#!/usr/bin/env bash
# Thirty-sixth session, call 8: Mixtral TP2 fp8_tensor M=512 (the grouped case slower than vLLM,
# 0.92x on the H200) with its FP8 MMA sums promoted every 128 columns (the entry), 64, and never
# (Triton's sm_90 default, vLLM's kernel's accumulation): time and rel-L2 side by side.
R=/tmp/r8; LIMIT=280; . scripts/call_setup.sh
timeout 250 python scripts/promote_probe.py --shape mixtral_8x7b_tp2 --formats fp8_tensor --tokens 512 \
  --variants 128,64,0 --out $R/promote > $R/promote.log 2>&1
step "promote rc $?"
finish
