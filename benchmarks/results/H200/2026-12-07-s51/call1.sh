#!/usr/bin/env bash
# Fifty-first session, call 1: fp8_block route-direct GEMVs reading one block-scale row per K step
# (gate/up: a row each for gate and up; down: a row per route) instead of a scale per weight row.
# Three trees: base (committed), gu (gate_up_rows.patch: gate/up only), rows (scale_rows.patch, this
# tree: both kernels).  route_direct forced: fp8_block over the PEERS shapes at M 1..8, and two untuned
# layers at M 12, 14 in fp8_block and fp8_tensor; in turn base, gu, rows, rows, gu, base after
# compiling the three in parallel.  Then the GPU accuracy and unseen checks of fp8_block on this tree.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-575}; . scripts/call_setup.sh
P=benchmarks/results/H200/2026-12-07-s51; ROOT=$PWD
base_tree $P/scale_rows.patch
rm -rf /tmp/gu; cp -r /tmp/base /tmp/gu; (cd /tmp/gu && git apply $ROOT/$P/gate_up_rows.patch) || step "gu patch failed"
S=$PWD/benchmarks/results/H200/2026-12-07-s50/shapes/e20_k2_h3072_i1024.json,$PWD/benchmarks/results/H200/2026-12-07-s50/shapes/e24_k3_h2560_i1280.json
run() {  # run TREE OUT_NAME (empty: warm-up) TIMEOUT
  (cd $1 && PYTHONPATH=$1 timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths route_direct \
    --formats fp8_block --tokens 1,2,4,8 --shape peers --replays 10 ${2:+--out $R/${2}_peers} > $R/${2:-warm_$RANDOM}_peers.log 2>&1
   PYTHONPATH=$1 timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths route_direct \
    --formats fp8_block,fp8_tensor --tokens 12,14 --shape $S --replays 10 ${2:+--out $R/${2}_oos} > $R/${2:-warm_$RANDOM}_oos.log 2>&1)
}
run /tmp/base "" 200 & a=$!; run /tmp/gu "" 200 & b=$!; run $PWD "" 200 & c=$!; wait $a $b $c; step "compiled"
n=0; for t in /tmp/base /tmp/gu $PWD $PWD /tmp/gu /tmp/base; do
  n=$((n+1)); tag=$([ $t = /tmp/base ] && echo base || ([ $t = /tmp/gu ] && echo gu || echo rows))
  run $t ${n}_$tag 80; step "run $n $tag rc $?"
done
timeout 100 python -m fusedmoe check accuracy --formats fp8_block --out $R/accuracy > $R/accuracy.log 2>&1; step "accuracy rc $?"
timeout 60 python -m fusedmoe check unseen --formats fp8_block --out $R/unseen > $R/unseen.log 2>&1; step "unseen rc $?"
finish
