#!/usr/bin/env bash
# Thirty-seventh session, call 3: the recount plan counting by one-hot matrix products on the
# tensor cores (plan_stage_probe.py --dot: stages 2 and 4, blocks of 64-256 routes, 4 or 8 warps,
# each plan checked equal to the reference) beside the library's histogram count at 4 and 8
# warps and auto.  Compiled first, one process per shape.
R=/tmp/r3; LIMIT=400; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s37
pids=; for s in 0 1 2 3 4 5 6 7 8 9; do timeout 200 python $S/plan_stage_probe.py --dot --out $R/c --shape $s --compile-only > $R/compile_$s.log 2>&1 & pids="$pids $!"; done
wait $pids
step "compile done"
timeout 150 python $S/plan_stage_probe.py --dot --out $R/probe > $R/probe.log 2>&1
step "probe rc $?"
finish
