#!/usr/bin/env bash
# Forty-eighth session, call 6: the rank along the routes in two levels (rows of 32 routes packed
# into bit masks, popcounts within a row, a cumsum over the rows), in the tiled scatter kernel and in
# the look-back kernel (popcount_rank.patch: the forty-seventh session's look-back patch + the rank),
# against the committed tiled path (a copy of the tree with the patch taken off, /tmp/base) and
# auto; every plan checked against the reference.  Compiled in parallel, then timed in turn (ORDER).
R=${R:-/tmp/r6}; LIMIT=${LIMIT:-400}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s48
base_tree $S/popcount_rank.patch
G="--routes ${ROUTES:-512,1024,2048} --experts ${EXPERTS:-64,128,256,512,1024,2048}"
declare -A V=([btiled]="--path tiled" [tiled]="--path tiled" [lb]="--path lookback" [lb8w]="--path lookback --warps 8"
              [auto]="--path auto" [bauto]="--path auto")
tree() { [ "${1:0:1}" = b ] && echo /tmp/base || echo $PWD; }
run_v() { (cd $(tree $1) && PYTHONPATH=$(tree $1) timeout $3 python -m fusedmoe.bench.plan $G ${V[$1]} ${2:+--out $R/$2} > $R/${2:-warm_$1}.log 2>&1); }
for v in btiled tiled lb lb8w bauto; do run_v $v "" 150 & done; wait
step "warm"
n=0
for v in ${ORDER:-bauto btiled tiled lb lb8w lb8w lb tiled btiled bauto}; do
  n=$((n+1)); run_v $v p${n}_$v 60; step "pass $n $v rc $?"
done
python $PWD/benchmarks/results/H200/2026-12-07-s47/summarize.py $R > $R/summary.md 2>&1
finish
