#!/usr/bin/env bash
# Forty-second session, call 4 (the H200 of calls 2 and 3 still held; run as one command line):
# Mixtral TP2 / Mixtral fp8_tensor M=512 served (auto) against the 128-column warp-specialised set,
# then the thirty-sixth session's call 3 (the tuner's 'down_gluon' move at M 1..8, decode A/B).
mkdir -p $OUT/k
for p in auto grouped_gluon_ws_q; do
  PYTHONPATH=$PWD timeout 60 python -m fusedmoe.bench.kernels --shape mixtral_8x7b_tp2,mixtral_8x7b --formats fp8_tensor \
    --tokens 512 --path $p --out $OUT/k/m512_${p#grouped_gluon_} > $OUT/k/m512_${p#grouped_gluon_}.log 2>&1; echo "$p rc $?"
done
R=/tmp/r36 LIMIT=440 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh
