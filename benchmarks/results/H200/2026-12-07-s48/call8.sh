#!/usr/bin/env bash
# Forty-eighth session, call 8: auto against the forced tiled path on the same grid and process
# arguments, on the committed tree and on a copy without the bit-mask rank (/tmp/base), in turn:
# call 7's auto pass at 2048 x 256 ran 0.25 us slower than its forced tiled passes of the same kernel.
R=${R:-/tmp/r8}; LIMIT=${LIMIT:-300}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s48
base_tree $S/bitmask_rank.patch
G="--routes ${ROUTES:-8,1024,2048} --experts ${EXPERTS:-8,256}"
run() { (cd $1 && PYTHONPATH=$1 timeout $2 python -m fusedmoe.bench.plan $G ${@:4} ${3:+--out $R/$3} > $R/${3:-warm_$RANDOM}.log 2>&1); }
for t in $PWD /tmp/base; do run $t 150 "" --path auto & run $t 150 "" --path tiled & done; wait; step "warm"
n=0
for v in auto tiled bauto btiled btiled bauto tiled auto; do
  n=$((n+1)); t=$([ ${v:0:1} = b ] && echo /tmp/base || echo $PWD); p=${v#b}
  run $t 60 p${n}_$v --path $p; step "pass $n $v rc $?"
done
python $S/../2026-12-07-s47/summarize.py $R > $R/summary.md 2>&1
finish
