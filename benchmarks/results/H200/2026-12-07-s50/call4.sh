#!/usr/bin/env bash
# Fiftieth session, call 4: the one known layer whose fp8_tensor picks the per-format limit changed
# (benchmarks/top1, 16 experts top-1, M 27-30 now route-direct): auto, route_direct and grouped forced.
R=${R:-/tmp/r4}; LIMIT=${LIMIT:-90}; . scripts/call_setup.sh
timeout 80 python -m fusedmoe bench --routing softmax --no-check --paths auto,route_direct,grouped \
  --formats fp8_tensor --tokens 26,28,30 --shape benchmarks/top1/top1_e16_h2048_i768.json --replays 10 \
  --out $R/top1 > $R/top1.log 2>&1; step "top1 rc $?"
finish
