#!/usr/bin/env bash
# Thirty-ninth session, call 1 (H100 expected; on an H200: the thirty-sixth session's call3.sh, the
# down_gluon M 1..8 A/B, and nothing else).  Two things about the recount launch, at 512..2048
# routes x 64..512 experts, auto first and last:
# 1. warps: 8, 16 and 32 (compiled for sm_90: 31-62 registers, no spill), by histogram and by
#    atomics, on the kernel as committed at 3d1a7de (run from a copy of the tree).
#    tl.histogram's warp-level count costs each lane about bins / 32 x log2(bins) operations per 32
#    routes, so its time should fall with the warps until the cross-warp merge takes over.
#    Expected: 0.1-0.4 us less at 2048 x 128..256 and 1024 x 256 by histogram at 16 warps; little
#    by atomics (each program's 2048 adds go to L2 whatever the warps).
# 2. the working tree's kernel (half_side.patch): the second histogram counts the routes before the
#    chunk, or those after it, whichever lie in one half of R_PAD, over R_PAD / 2 routes instead
#    of R_PAD (before = counts - after - the chunk's own).  Expected: a quarter of the histograms'
#    work off the slowest program, 0.2-0.4 us at 2048 x 128 and 1024 x 256 (two histograms took
#    1.1 us of 2048 x 64's 3.2, thirty-seventh session).
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-500}; . scripts/call_setup.sh
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=${R}h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
S=benchmarks/results/H200/2026-12-06-s39
B=/tmp/base; rm -rf $B; mkdir -p $B; cp -r fusedmoe scripts $B/; git show 3d1a7de:fusedmoe/_plan_kernels.py > $B/fusedmoe/_plan_kernels.py
G="--routes 512,1024,2048 --experts 64,128,256,512"
# name|tree|args
V=("hist_8|$B|--path recount --histogram --warps 8" "hist_16|$B|--path recount --histogram --warps 16"
   "hist_32|$B|--path recount --histogram --warps 32"
   "atomics_8|$B|--path recount --atomics --warps 8" "atomics_16|$B|--path recount --atomics --warps 16"
   "atomics_32|$B|--path recount --atomics --warps 32"
   "half_8|$PWD|--path recount --histogram --warps 8" "half_16|$PWD|--path recount --histogram --warps 16"
   "half_32|$PWD|--path recount --histogram --warps 32" "half_auto|$PWD|" "auto_b|$B|")
run_v() {  # run_v NAME|TREE|ARGS OUTDIR_OR_EMPTY LOG TIMEOUT
  local n=${1%%|*} rest=${1#*|}; local tree=${rest%%|*} args=${rest#*|}
  (cd $tree && PYTHONPATH=$tree timeout $4 python -m fusedmoe.bench.plan $G $args ${2:+--out $2} > $3 2>&1)
}
pids=()
for v in "${V[@]}"; do run_v "$v" "" $R/warm_${v%%|*}.log 240 & pids+=($!); done
wait "${pids[@]}"; step "compiled"
for v in "auto_a|$B|" "${V[@]}"; do run_v "$v" $R/${v%%|*} $R/${v%%|*}.log 40; step "${v%%|*} rc $?"; done
finish
