#!/usr/bin/env bash
# Throw-away (27th session), call 3: the session's final tree (routing with PDL, the late
# triggers reverted, the GPT-OSS TP4 bf16 M=16 entry): the PDL, routing and route-direct GPU
# tests, the chained routing -> layer test under memcheck, and the graph check.
set -u
R=/tmp/r4; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 575; pack ) >/dev/null 2>&1 & WD=$!
export PYTHONPATH=$PWD
timeout 240 python -m pytest -q -n 8 tests/test_fused_moe.py tests/test_routing.py tests/test_policy.py \
  -k "pdl or chained or routing or route_direct or softmax or sigmoid or table" > $R/tests.log 2>&1; step "tests rc $?"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  python -m pytest -q tests/test_fused_moe.py -k "chained_under_pdl or route_direct_pdl_equals" > $R/memcheck.log 2>&1; step "memcheck rc $?"
timeout $((560 - $(el))) python -m fusedmoe check graphs --out $R/graphs > $R/graphs.log 2>&1; step "graphs rc $?"
rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
