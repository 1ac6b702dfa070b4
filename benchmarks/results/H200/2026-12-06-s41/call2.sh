#!/usr/bin/env bash
# Forty-first session, call 2: the library with both warp-specialised gate/up forms (policy.GLUON_SETS:
# (128, 64) and (128, 128), the latter quantising in its epilogue) and the Mixtral TP2 fp8_tensor
# M=512 / 2048 entries on (128, 128).
#   1. GPU tests of the grouped path (Gluon configs of every set, PDL, CUDA-graph replay);
#   2. fusedmoe.bench.kernels --path auto, Mixtral TP2 fp8_tensor M 512 / 2048 (the served entries);
#   3. --path grouped_gluon_ws against grouped_gluon_ws_q over the other Mixtral shapes whose entries
#      are warp-specialised (TP2 M=8192, full Mixtral M=2048 / 8192; TP2 M=2048 again), in turn
#      ws, q, q, ws: whether their entries should take the 128-column gate/up too.
# On an H200 it runs the thirty-sixth session's call 3 instead (down_gluon A/B, decode M 1..8).
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-560}; . scripts/call_setup.sh
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=${R}h LIMIT=540 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
kernels() {  # kernels SHAPES TOKENS PATH OUT_NAME (empty: warm-up) TIMEOUT
  timeout $5 python -m fusedmoe.bench.kernels --shape $1 --formats fp8_tensor --tokens $2 --path $3 \
    ${4:+--out $R/$4} > $R/${4:-warm_$RANDOM}.log 2>&1
}
M=mixtral_8x7b_tp2,mixtral_8x7b
pids=()
kernels mixtral_8x7b_tp2 512,2048 auto "" 200 & pids+=($!)
for p in grouped_gluon_ws grouped_gluon_ws_q; do kernels $M 2048,8192 $p "" 200 & pids+=($!); done
timeout 200 python -m pytest -q -x tests/test_fused_moe.py -k "gluon_config or pdl_equals or grouped" > $R/tests.log 2>&1
step "tests rc $?"
wait "${pids[@]}"; step "compiled"
kernels mixtral_8x7b_tp2 512,2048 auto auto 60; step "auto rc $?"
n=0
for p in grouped_gluon_ws grouped_gluon_ws_q grouped_gluon_ws_q grouped_gluon_ws; do
  n=$((n+1)); kernels $M 2048,8192 $p ${p#grouped_gluon_}_$n 90; step "$p $n rc $?"
done
finish
