#!/usr/bin/env bash
# Fiftieth session, call 2: route-direct gate/up with fp8_block weights loading each K step's block
# scales before its weights (scale_first.patch) against the committed kernel (scales loaded after the
# products, their latency exposed), route_direct forced, fp8_block: the PEERS shapes at M 1..8 and call
# 1's four layers at two M each; in turn base, patch, patch, base after compiling both in parallel.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-560}; . scripts/call_setup.sh
P=benchmarks/results/H200/2026-12-07-s50
base_tree $P/scale_first.patch
S=$PWD/$P/shapes/e20_k2_h3072_i1024.json,$PWD/$P/shapes/e24_k3_h2560_i1280.json
run() {  # run TREE OUT_NAME (empty: warm-up) TIMEOUT
  (cd $1 && PYTHONPATH=$1 timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths route_direct \
    --formats fp8_block --tokens 1,2,4,8 --shape peers --replays 10 ${2:+--out $R/${2}_peers} > $R/${2:-warm_$RANDOM}_peers.log 2>&1
   PYTHONPATH=$1 timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths route_direct \
    --formats fp8_block --tokens 12,14 --shape $S --replays 10 ${2:+--out $R/${2}_oos} > $R/${2:-warm_$RANDOM}_oos.log 2>&1)
}
run /tmp/base "" 200 & a=$!; run $PWD "" 200 & b=$!; wait $a $b; step "compiled"
n=0; for t in /tmp/base $PWD $PWD /tmp/base; do
  n=$((n+1)); tag=$([ $t = /tmp/base ] && echo base || echo patch)
  run $t ${n}_$tag 80; step "run $n $tag rc $?"
done
timeout 70 python -m pytest -q -x tests/test_fused_moe.py -k "route_direct and fp8_block" > $R/tests.log 2>&1; step "tests rc $?"
finish
