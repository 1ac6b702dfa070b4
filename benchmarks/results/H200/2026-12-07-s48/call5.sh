#!/usr/bin/env bash
# Forty-eighth session, call 5: the tiled path's rank by two levels (rows of 32 routes on the tensor
# cores + a cumsum over the rows) against the committed tiled path (a copy of the tree with
# chunked_rank.patch taken off, /tmp/base), beside the chunked path and auto; every plan checked
# against the reference.  Compiled in parallel first, then timed in turn (ORDER).
R=${R:-/tmp/r5}; LIMIT=${LIMIT:-400}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s48
base_tree $S/chunked_rank.patch
G="--routes ${ROUTES:-512,1024,2048} --experts ${EXPERTS:-64,128,256,512,1024,2048}"
declare -A V=([btiled]="--path tiled" [tiled]="--path tiled" [ch]="--path chunked" [auto]="--path auto" [tiled8w]="--path tiled --warps 8")
tree() { [ "${1:0:1}" = b ] && echo /tmp/base || echo $PWD; }
run_v() { (cd $(tree $1) && PYTHONPATH=$(tree $1) timeout $3 python -m fusedmoe.bench.plan $G ${V[$1]} ${2:+--out $R/$2} > $R/${2:-warm_$1}.log 2>&1); }
for v in btiled tiled ch auto tiled8w; do run_v $v "" 150 & done; wait
step "warm"
n=0
for v in ${ORDER:-btiled tiled ch auto tiled8w tiled8w auto ch tiled btiled}; do
  n=$((n+1)); run_v $v p${n}_$v 60; step "pass $n $v rc $?"
done
python $PWD/benchmarks/results/H200/2026-12-07-s47/summarize.py $R > $R/summary.md 2>&1
finish
