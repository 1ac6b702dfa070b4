#!/usr/bin/env bash
# Fifty-second session, call 2: the tuner's `gate_up_wide` move alone (tune.GATE_UP_WIDE: FP8 GEMV
# gate/up tiles whose one K step holds a program's rows of a 4096-wide H in flight, each under its
# own register cap) from each PEERS fp8_tensor / fp8_block entry at M 1 and 2; then, if an entry
# moved, the decode bench (auto) on the start table and the tuned one in turn start, tuned, tuned,
# start.  The start table is restored.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
cp $T $R/route_direct_start.json
timeout ${TUNE_S:-330} python -m fusedmoe tune --shape peers --formats fp8_tensor,fp8_block --tokens ${TOKENS:-1,2} \
  --paths route_direct --moves gate_up_wide --force --budget-min ${BUDGET_MIN:-5} --log $R/tune.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
if same_configs $R/route_direct_start.json $R/route_direct_tuned.json; then step "no entry moved"; finish; exit 0; fi
bench_in_turn "python -m fusedmoe bench --routing softmax --no-check --paths auto --formats fp8_tensor,fp8_block --tokens ${TOKENS:-1,2} --shape peers --replays 10" \
  60 start tuned tuned start
cp $R/route_direct_start.json $T
finish
