#!/usr/bin/env bash
# Fifty-first session, call 2, on the committed tree with RouteDirectConfig.block_scale_rows: the GPU
# tests of both fp8_block scale forms and the fp8_block accuracy check (the tuned PEERS entries run
# the per-row form, the check's heuristic variants the scale-row form); then the top-1 layer whose
# fp8_tensor picks the fiftieth session's per-format limit changed (2026-12-07-s50/call4.sh); on an
# H200, issue 4's decode figures (auto, PEERS shapes x bf16, fp8_tensor, fp8_block, M 1..8).
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-560}; . scripts/call_setup.sh
xdist=$(python -c "import xdist" 2>/dev/null && echo "-n 8")
timeout 130 python -m pytest -q -x $xdist tests/test_fused_moe.py -k "block_scale or (route_direct and fp8_block)" \
  > $R/tests.log 2>&1; step "tests rc $?"
timeout 130 python -m fusedmoe check accuracy --formats fp8_block --shapes qwen3_30b_a3b,gpt_oss_120b_tp4 --out $R/accuracy > $R/accuracy.log 2>&1
step "accuracy rc $?"
timeout 80 python -m fusedmoe bench --routing softmax --no-check --paths auto,route_direct,grouped \
  --formats fp8_tensor --tokens 26,28,30 --shape benchmarks/top1/top1_e16_h2048_i768.json --replays 10 \
  --out $R/top1 > $R/top1.log 2>&1; step "top1 rc $?"
if [ "$DEV" = NVIDIA_H200 ]; then
  timeout 150 python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block \
    --tokens 1,2,4,8 --shape peers --replays 10 --out $R/decode > $R/decode.log 2>&1; step "decode rc $?"
fi
finish
