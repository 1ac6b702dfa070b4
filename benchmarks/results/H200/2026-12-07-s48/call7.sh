#!/usr/bin/env bash
# Forty-eighth session, call 7 (the committed tree, 814d1ea): the plan's tests on CUDA, auto's plan
# over the points (8..2048 routes x 8..512 experts), twice, and the tiled path at 256 experts
# against a copy of the tree without the bit-mask rank (bitmask_rank.patch taken off, /tmp/base),
# in turn base, tree, tree, base.
R=${R:-/tmp/r7}; LIMIT=${LIMIT:-420}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s48
base_tree $S/bitmask_rank.patch
timeout 200 python -m pytest -q -n 8 tests/test_plan.py > $R/tests.log 2>&1; step "plan tests rc $?"
G="--routes 8,64,512,1024,2048 --experts 8,64,128,256,512"
T="--routes 512,1024,2048 --experts 64,128,256 --path tiled"
run() { (cd $1 && PYTHONPATH=$1 timeout $2 python -m fusedmoe.bench.plan ${@:4} ${3:+--out $R/$3} > $R/${3:-warm_$RANDOM}.log 2>&1); }
run $PWD 150 "" $G & run $PWD 150 "" $T & run /tmp/base 150 "" $T & wait; step "warm"
run $PWD 60 p1_auto $G; step "auto 1 rc $?"
n=1
for t in /tmp/base $PWD $PWD /tmp/base; do
  n=$((n+1)); tag=$([ $t = /tmp/base ] && echo btiled || echo tiled)
  run $t 60 p${n}_$tag $T; step "pass $n $tag rc $?"
done
run $PWD 60 p6_auto $G; step "auto 2 rc $?"
python $S/../2026-12-07-s47/summarize.py $R > $R/summary.md 2>&1
finish
