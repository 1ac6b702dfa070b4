#!/usr/bin/env bash
# Thirty-seventh session, call 6: the recount launch at 4 and 8 warps beyond the grid
# (1024 and 2048 experts, where it counts by atomics), to check the new warps rule there.
R=/tmp/r6; LIMIT=300; . scripts/call_setup.sh
G="--routes 8,64,256,512,1024,2048 --experts 1024,2048 --path recount"
pids=; for w in 4 8; do timeout 150 python -m fusedmoe.bench.plan $G --warps $w > $R/warm_w$w.log 2>&1 & pids="$pids $!"; done
wait $pids; step "compiled"
for w in 4 8; do timeout 60 python -m fusedmoe.bench.plan $G --warps $w --out $R/atomic_w$w > $R/atomic_w$w.log 2>&1; step "w$w rc $?"; done
finish
