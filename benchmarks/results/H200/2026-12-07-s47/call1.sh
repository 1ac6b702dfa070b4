#!/usr/bin/env bash
# Forty-seventh session, call 1 (prepared; no machine could be started in the session): the
# look-back plan of lookback_plan.patch (applied here first if the tree lacks it) against auto.
# One launch over expert tiles; each tile's block count goes to the later tiles through two hashed
# words per program.  First the plan's GPU tests of the forced paths and the look-back (which
# include reusing the scratch words across calls and graph replays), then the plan bench over
# ROUTES x EXPERTS (default 8..2048 x 8..2048; every plan is also checked equal to the reference
# there), variants auto, lookback (default tile: E_bins / 256 experts, at most 8192 hit tests) and
# lookback in 4-expert tiles and at 8 warps, compiled in parallel first (WARM), then timed in turn
# (ORDER: A B C D D C B A).  SKIP_TESTS=1 skips the tests.  Summary: python summarize.py R > R/summary.md
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-560}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-07-s47
grep -q _plan_lookback_kernel fusedmoe/_plan_kernels.py || git apply $S/lookback_plan.patch
step "patch rc $?"
[ -n "${SKIP_TESTS:-}" ] || timeout 150 python -m pytest -q -n 8 tests/test_plan.py -k "lookback or forced or skewed or dropped" > $R/tests.log 2>&1; step "plan tests rc $?"
G="--routes ${ROUTES:-8,64,512,1024,2048} --experts ${EXPERTS:-8,64,128,256,512,1024,2048}"
declare -A V=([auto]="--path auto" [lb]="--path lookback" [lb4]="--path lookback --e-tile 4" [lb8w]="--path lookback --warps 8")
for v in ${WARM:-auto lb lb4 lb8w}; do timeout 150 python -m fusedmoe.bench.plan $G ${V[$v]} > $R/warm_$v.log 2>&1 & done; wait
step "warm"
n=0
for v in ${ORDER:-auto lb lb4 lb8w lb8w lb4 lb auto}; do
  n=$((n+1)); timeout 100 python -m fusedmoe.bench.plan $G ${V[$v]} --out $R/p${n}_$v > $R/p${n}_$v.log 2>&1; step "pass $n $v rc $?"
done
python $S/summarize.py $R > $R/summary.md 2>&1
finish
