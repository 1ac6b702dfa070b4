#!/usr/bin/env bash
# Thirty-ninth session, call 3: tests/test_bench.py on CUDA after the fix of the one test that
# failed in call 2 (test_timeline_fixed_cost_times_the_case_three_ways ran CPU tensors through
# the compiled launcher where no interpreter runs; it now takes the tests' device).
R=${R:-/tmp/r3}; LIMIT=${LIMIT:-230}; . scripts/call_setup.sh
(timeout 220 python3 -m pytest tests/test_bench.py -q -rf -n 8 > $R/tests.log 2>&1; echo "rc $?" >> $R/tests.log)
step "tests $(tail -1 $R/tests.log)"
finish
