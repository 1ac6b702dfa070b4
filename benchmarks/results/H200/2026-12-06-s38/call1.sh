#!/usr/bin/env bash
# Thirty-eighth session, call 1.  On an H200: the thirty-sixth session's call3.sh (the down_gluon
# move, M 1..8 A/B) and nothing else.  Elsewhere: the recount plan's routes per program (chunk) at
# 512..2048 routes, counting by atomics (chunk 32, 64, 128, 256; 128..512 experts) and by
# tl.histogram (32, 64, 128; 64..256 experts), and auto over the grid; every variant
# compiled first in parallel processes, then timed in turn.
R=/tmp/r1; LIMIT=585; . scripts/call_setup.sh
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=/tmp/r1h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
B="python -m fusedmoe.bench.plan --routes 512,1024,2048"
V=(
  "atomics_32|--experts 128,256,512 --path recount --atomics --chunk 32"
  "atomics_64|--experts 128,256,512 --path recount --atomics --chunk 64"
  "atomics_128|--experts 128,256,512 --path recount --atomics --chunk 128"
  "atomics_256|--experts 128,256,512 --path recount --atomics --chunk 256"
  "hist_32|--experts 64,128,256 --path recount --histogram --chunk 32"
  "hist_64|--experts 64,128,256 --path recount --histogram --chunk 64"
  "hist_128|--experts 64,128,256 --path recount --histogram --chunk 128"
)
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
pids=()
for v in "${V[@]}"; do timeout 200 $B ${v#*|} > $R/warm_${v%%|*}.log 2>&1 & pids+=($!); done
timeout 200 python -m fusedmoe.bench.plan $G > $R/warm_auto.log 2>&1 & pids+=($!)
wait "${pids[@]}"; step "compiled"
timeout 40 python -m fusedmoe.bench.plan $G --out $R/auto_a > $R/auto_a.log 2>&1; step "auto a rc $?"
for v in "${V[@]}"; do timeout 40 $B ${v#*|} --out $R/${v%%|*} > $R/${v%%|*}.log 2>&1; step "${v%%|*} rc $?"; done
timeout 40 python -m fusedmoe.bench.plan $G --out $R/auto_b > $R/auto_b.log 2>&1; step "auto b rc $?"
finish
