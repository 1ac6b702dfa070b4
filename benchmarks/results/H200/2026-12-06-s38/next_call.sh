#!/usr/bin/env bash
# Ready for the next session's first call (written in the thirty-eighth, not run: its device time was
# spent).  On an H200: the thirty-sixth session's call3.sh (the down_gluon move, M 1..8 A/B) and nothing
# else.  Elsewhere: the recount launch at 16 warps against 8 (never timed; compiled for sm_90 it takes
# 32-54 registers and no spill at 2048 x 128..512 and 1024 x 256..512), by histogram and by atomics, at
# 512..2048 routes x 64..512 experts, beside auto first and last.  4 -> 8 warps took 2048 x 64 from
# 3.25 to 2.80 us and 1024 x 256 from 3.64 to 2.94 (thirty-seventh session): a histogram's dependent
# chains are shorter with more warps a scheduler.  Expected: 0.1-0.4 us less at 2048 x 128..256 and
# 1024 x 256 by histogram (2048 x 256 by histogram 4.45 us at 8 warps, tiled 3.91), little by atomics.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-400}; . scripts/call_setup.sh
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=${R}h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
G="--routes 512,1024,2048 --experts 64,128,256,512"
V=("hist_8|--path recount --histogram --warps 8" "hist_16|--path recount --histogram --warps 16"
   "atomics_8|--path recount --atomics --warps 8" "atomics_16|--path recount --atomics --warps 16" "auto_b|")
pids=()
for v in "${V[@]}"; do timeout 200 python -m fusedmoe.bench.plan $G ${v#*|} > $R/warm_${v%%|*}.log 2>&1 & pids+=($!); done
wait "${pids[@]}"; step "compiled"
for v in "auto_a|" "${V[@]}"; do timeout 40 python -m fusedmoe.bench.plan $G ${v#*|} --out $R/${v%%|*} > $R/${v%%|*}.log 2>&1; step "${v%%|*} rc $?"; done
finish
