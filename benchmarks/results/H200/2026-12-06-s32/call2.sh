#!/usr/bin/env bash
# Thirty-second session, call 2: the tuner over down_preload and down_prefetch from each PEERS
# entry at M 1, 2 (30 cases), then the decode bench at M 1..8 with the start table and the tuned
# one in turn (start, tuned, tuned, start).  Expected: entries move only at M=1-2 small FP8
# layers (call 1's timelines say which), none slower; the 60-case geomean 0.97-0.99x.
R=/tmp/r2; LIMIT=330; . scripts/call_setup.sh
cp $T $R/route_direct_start.json
timeout 170 python -m fusedmoe tune --shape peers --formats bf16,fp8_tensor,fp8_block --tokens 1,2 \
  --paths route_direct --moves down_preload,down_prefetch --force --budget-min 2.6 --log $R/tune.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block --tokens 1,2,4,8 --shape peers --replays 10"
bench_in_turn "$B" 35 start tuned tuned start
finish
