#!/usr/bin/env bash
# Thirty-eighth session, call 2 (an H100 came in call 1).  The recount's atomic counters spread over
# more cache lines (--count-spread COPIES,STRIDE: route r adds into copy r % COPIES, counters STRIDE
# int32 apart): at 512..2048 routes x 128..512 experts, chunk 32, 8 warps; 1,1 (as shipped) first and
# last; and chunks of 16 with two of the spreads.  Then split_i_probe.py (a split-I decode layer against
# the route-direct path).  Compiled first in parallel processes, then timed in turn.
R=/tmp/r2; LIMIT=585; . scripts/call_setup.sh
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=/tmp/r2h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
B="python -m fusedmoe.bench.plan --routes 512,1024,2048 --experts 128,256,512 --path recount --atomics --chunk 32"
S=(1,1 1,8 1,32 4,1 8,1 16,1 4,8)
pids=()
for s in "${S[@]}"; do timeout 200 $B --count-spread $s > $R/warm_$s.log 2>&1 & pids+=($!); done
B16="python -m fusedmoe.bench.plan --routes 512,1024,2048 --experts 128,256,512 --path recount --atomics --chunk 16"
for s in 1,32 8,1; do timeout 200 $B16 --count-spread $s > $R/warm16_$s.log 2>&1 & pids+=($!); done
P=benchmarks/results/H200/2026-12-06-s38/split_i_probe.py
for sh in qwen3_30b_a3b deepseek_v3_tp8 hunyuan_tp8 gpt_oss_120b_tp4; do
  timeout 300 python $P --out $R/split_compile_$sh --shapes $sh --compile-only > $R/split_compile_$sh.log 2>&1 & pids+=($!)
done
wait "${pids[@]}"; step "compiled"
for s in "${S[@]}" 1,1; do n=$((${n:-0}+1)); timeout 40 $B --count-spread $s --out $R/${n}_spread_$s > $R/${n}_spread_$s.log 2>&1; step "$n $s rc $?"; done
for s in 1,32 8,1; do timeout 40 $B16 --count-spread $s --out $R/chunk16_spread_$s > $R/chunk16_spread_$s.log 2>&1; step "chunk16 $s rc $?"; done
timeout 240 python $P --out $R/split_i > $R/split_i.log 2>&1; step "split_i rc $?"
finish
