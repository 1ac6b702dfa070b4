#!/usr/bin/env bash
# For a later session (not run in the thirty-second: no device time left): the tuner over
# down_preload from each PEERS entry at M 1, 2 (30 cases), then the decode bench at M 1..8 with the
# start table and the tuned one in turn (start, tuned, tuned, start).  Call 1 timed preload 4 at
# M=1 slower where I spans several K steps (fewer down programs resident); the tuner tries 2 and 3
# with the other tiles.  Expected: few entries move; if none do, the move should go.
R=/tmp/r2; LIMIT=330; . scripts/call_setup.sh
cp $T $R/route_direct_start.json
timeout 170 python -m fusedmoe tune --shape peers --formats bf16,fp8_tensor,fp8_block --tokens 1,2 \
  --paths route_direct --moves down_preload --force --budget-min 2.6 --log $R/tune.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block --tokens 1,2,4,8 --shape peers --replays 10"
bench_in_turn "$B" 35 start tuned tuned start
finish
