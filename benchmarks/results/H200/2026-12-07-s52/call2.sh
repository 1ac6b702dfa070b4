#!/usr/bin/env bash
# Fifty-second session, call 2: the tuner's `gate_up_wide` move alone (tune.GATE_UP_WIDE: FP8 GEMV
# gate/up tiles whose one K step holds a program's rows of a 4096-wide H in flight, each under its
# own register cap) from each PEERS fp8_tensor / fp8_block entry at M 1 and 2; then, if an entry
# moved, the decode bench (auto) on the start table and the tuned one in turn start, tuned, tuned,
# start.  The start table is restored.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
M=${TOKENS:-1,2}
tune_and_ab gate_up_wide $M ${TUNE_S:-330} ${BUDGET_MIN:-5} $M 60 fp8_tensor,fp8_block
finish
