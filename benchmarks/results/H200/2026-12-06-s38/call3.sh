#!/usr/bin/env bash
# Thirty-eighth session, call 3.  On an H200: the thirty-sixth session's call3.sh (the down_gluon
# move, M 1..8 A/B) and nothing else.  Elsewhere: the table plan path (launch 1: each chunk's counts
# into a table; launch 2, PDL: the recount kernel summing that table instead of counting every route)
# at 256..2048 routes x 64..1024 experts, chunks of 16 / 32 / 64 and 4 / 8 warps, against auto (first
# and last); compiled first in parallel processes, then timed in turn.
R=/tmp/r3; LIMIT=400; . scripts/call_setup.sh
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=/tmp/r3h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
G="--routes 256,512,1024,2048 --experts 64,128,256,512,1024"
V=("table_32_8|--path table --chunk 32 --warps 8" "table_32_4|--path table --chunk 32 --warps 4"
   "table_64_8|--path table --chunk 64 --warps 8" "table_16_8|--path table --chunk 16 --warps 8" "auto|")
pids=()
for v in "${V[@]}"; do timeout 200 python -m fusedmoe.bench.plan $G ${v#*|} > $R/warm_${v%%|*}.log 2>&1 & pids+=($!); done
wait "${pids[@]}"; step "compiled"
for v in "auto_a|" "${V[@]}"; do timeout 40 python -m fusedmoe.bench.plan $G ${v#*|} --out $R/${v%%|*} > $R/${v%%|*}.log 2>&1; step "${v%%|*} rc $?"; done
finish
