#!/usr/bin/env bash
# Forty-eighth session, call 4: the chunked plan (two launches: over expert tiles, the counts and
# each route's base = its expert's routes in the chunks before its own; then over chunks of 32
# routes, rank within the chunk, pstart from the counts, scatter), against auto and the tiled path,
# over ROUTES x EXPERTS.  Variants compiled in parallel first, then timed in turn (ORDER).
R=${R:-/tmp/r4}; LIMIT=${LIMIT:-400}; . scripts/call_setup.sh
G="--routes ${ROUTES:-64,256,512,1024,2048} --experts ${EXPERTS:-8,64,128,256,512,1024,2048}"
declare -A V=([auto]="--path auto" [tiled]="--path tiled" [ch]="--path chunked" [ch8w]="--path chunked --warps 8"
              [ch2]="--path chunked --e-tile 2" [ch64]="--path chunked --chunk 64")
for v in ${WARM:-auto tiled ch ch8w ch2 ch64}; do timeout 150 python -m fusedmoe.bench.plan $G ${V[$v]} > $R/warm_$v.log 2>&1 & done; wait
step "warm"
n=0
for v in ${ORDER:-auto ch tiled ch8w ch2 ch64 ch64 ch2 ch8w tiled ch auto}; do
  n=$((n+1)); timeout 60 python -m fusedmoe.bench.plan $G ${V[$v]} --out $R/p${n}_$v > $R/p${n}_$v.log 2>&1; step "pass $n $v rc $?"
done
python benchmarks/results/H200/2026-12-07-s47/summarize.py $R > $R/summary.md 2>&1
finish
