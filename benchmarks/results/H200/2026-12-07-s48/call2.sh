#!/usr/bin/env bash
# Forty-eighth session, call 2: where the look-back plan's time goes.  Run on the tree with
# lookback_probe.patch applied (the forty-seventh session's look-back kernel with a PROBE constexpr,
# set by FUSEDMOE_LB_PROBE): lb = the kernel as built; lbh = constant hashes (no hashing; the words
# still published and polled); lbw = no hashing, publishing or polling (prior 0: a wrong plan, timed
# only); lbc = as lbw and no segment writes (ids, hit tests, counts, cumsum, the counts' store).
# Beside them auto, the forced tiled and recount paths.  Compiled in parallel first, then timed in turn.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-300}; . scripts/call_setup.sh
G="--routes ${ROUTES:-8,512,2048} --experts ${EXPERTS:-8,256,512}"
declare -A V=([auto]="--path auto" [tiled]="--path tiled" [rc]="--path recount" [lb]="--path lookback"
              [lbh]="--path lookback" [lbw]="--path lookback" [lbc]="--path lookback")
declare -A P=([lb]=0 [lbh]=1 [lbw]=2 [lbc]=3)
for v in auto tiled rc lb lbh lbw lbc; do
  FUSEDMOE_LB_PROBE=${P[$v]:-0} timeout 150 python -m fusedmoe.bench.plan $G ${V[$v]} > $R/warm_$v.log 2>&1 &
done; wait
step "warm"
n=0
for v in ${ORDER:-auto tiled rc lb lbh lbw lbc lbc lbw lbh lb rc tiled auto}; do
  n=$((n+1)); FUSEDMOE_LB_PROBE=${P[$v]:-0} timeout 60 python -m fusedmoe.bench.plan $G ${V[$v]} --out $R/p${n}_$v > $R/p${n}_$v.log 2>&1
  step "pass $n $v rc $?"
done
python benchmarks/results/H200/2026-12-07-s47/summarize.py $R > $R/summary.md 2>&1
finish
