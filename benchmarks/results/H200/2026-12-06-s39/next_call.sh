#!/usr/bin/env bash
# Ready for the next session's first call (written in the thirty-ninth, not run: its device time was
# spent).  On an H200: the thirty-sixth session's call3.sh (the down_gluon M 1..8 A/B) and nothing
# else.  Elsewhere: half_registers.patch against the committed recount kernel, by histogram at 8
# warps and under auto, over 512..2048 routes x 64..512 experts, in turn (base, patch, patch, base).
# The patch is half_side.patch (call 1: 0.12-0.32 us slower, its second load of half the ids on the
# critical path) without the second load: the ids are loaded once as [R_PAD / 2, 2] (routes j and
# R_PAD / 2 + j in one thread), tl.split parts the halves in registers, the full count takes the
# whole tile (reshaped with reordering allowed), the side's count one half; the chunk's rank and
# its own routes per expert come from one packed [32, 32] sum.  Compiled for sm_90 (8 warps): 25%
# fewer population counts than committed (2048 x 128: 48 against 64), the same 20 barriers, 1560
# instructions against 1336, 40-58 registers, no spill.  Expected: 0.1-0.3 us less where the count
# is by histogram at 2048 routes and 1024 x 256 (a quarter of the histograms' 1.1 us at 2048 x 64);
# no change where auto counts by atomics or runs the tiled launches.  Apply with
#   git apply benchmarks/results/H200/2026-12-06-s39/half_registers.patch
# before the call (the script checks that it is applied) and take it off after.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-400}; . scripts/call_setup.sh
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=${R}h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
S=benchmarks/results/H200/2026-12-06-s39
grep -q "tl.split(local2)" fusedmoe/_plan_kernels.py || { echo "half_registers.patch is not applied" > $R/error.txt; finish; exit 1; }
B=/tmp/base; rm -rf $B; mkdir -p $B; cp -r fusedmoe scripts $B/; P=$PWD/$S/half_registers.patch; (cd $B && git apply -R $P)
G="--routes 512,1024,2048 --experts 64,128,256,512"
run_v() {  # run_v TREE ARGS OUT_NAME (empty: warm-up) TIMEOUT
  (cd $1 && PYTHONPATH=$1 timeout $4 python -m fusedmoe.bench.plan $G $2 ${3:+--out $R/$3} > $R/${3:-warm_$RANDOM}.log 2>&1)
}
pids=()
for t in $B $PWD; do for a in "--path recount --histogram --warps 8" ""; do run_v $t "$a" "" 240 & pids+=($!); done; done
wait "${pids[@]}"; step "compiled"
n=0
for t in $B $PWD $PWD $B; do
  n=$((n+1)); tag=$([ $t = $B ] && echo base || echo patch)
  run_v $t "--path recount --histogram --warps 8" hist_${n}_$tag 40; step "hist $n $tag rc $?"
  run_v $t "" auto_${n}_$tag 40; step "auto $n $tag rc $?"
done
finish
