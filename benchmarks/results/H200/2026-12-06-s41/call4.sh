#!/usr/bin/env bash
# Forty-first session, call 4: the Gluon path's x gather with column splits (gather_splits.patch:
# grid (plan blocks, splits), about 4 programs per SM where the plan has few blocks).  Mixtral TP2
# fp8_tensor M=512 served: the gather took 13.0 us of 391 (call 2) with about 13 programs for 4 MB
# read and 6 MB written; expected 3-5 us (the bytes at ~3 TB/s plus a launch), about 2% off the call.
#   1. GPU tests of the gather and of the Gluon configs on the half_blocks case;
#   2. fusedmoe.bench.kernels --path auto, Mixtral TP2 M 512 / 2048, before (the patch taken off,
#      /tmp/base) and after, in turn base, patch, patch, base;
#   3. with EXTRA=1: the warp-specialised set's 64- against 128-column gate/up where table entries
#      are warp-specialised and I is smaller (GPT-OSS-120B TP4 and Qwen3-235B-A22B at M=8192), and
#      the full Mixtral M=512 served against (128, 128).
R=${R:-/tmp/r4}; LIMIT=${LIMIT:-480}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s41
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=${R}h LIMIT=460 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
base_tree $S/gather_splits.patch
kernels() {  # kernels TREE SHAPES TOKENS PATH OUT_NAME (empty: warm-up) TIMEOUT
  (cd $1 && PYTHONPATH=$1 timeout $6 python -m fusedmoe.bench.kernels --shape $2 --formats fp8_tensor --tokens $3 \
    --path $4 ${5:+--out $R/$5} > $R/${5:-warm_$RANDOM}.log 2>&1)
}
pids=()
for t in /tmp/base $PWD; do kernels $t mixtral_8x7b_tp2 512,2048 auto "" 150 & pids+=($!); done
timeout 120 python -m pytest -q -x tests/test_fused_moe.py -k "gather_plan_rows or (gluon_config and half_blocks)" > $R/tests.log 2>&1
step "tests rc $?"
wait "${pids[@]}"; step "compiled"
n=0
for t in /tmp/base $PWD $PWD /tmp/base; do
  n=$((n+1)); tag=$([ $t = /tmp/base ] && echo base || echo patch)
  kernels $t mixtral_8x7b_tp2 512,2048 auto gather_${n}_$tag 45; step "gather $n $tag rc $?"
done
if [ "${EXTRA:-0}" = 1 ]; then
  for p in grouped_gluon_ws grouped_gluon_ws_q; do
    kernels $PWD gpt_oss_120b_tp4,qwen3_235b_a22b 8192 $p ${p#grouped_gluon_}_8192 90; step "$p 8192 rc $?"
  done
  for p in auto grouped_gluon_ws_q; do
    kernels $PWD mixtral_8x7b 512 $p mixtral_512_${p#grouped_gluon_} 60; step "mixtral 512 $p rc $?"
  done
fi
finish
