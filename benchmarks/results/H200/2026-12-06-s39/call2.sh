#!/usr/bin/env bash
# Thirty-ninth session, call 2: the test suite on CUDA at the committed tree (the last full run was
# the twenty-ninth session's; the register caps, the Gluon down, PDL's plain-launch switch and the
# plan's warps rule have landed since), then `fusedmoe check graphs` (CUDA-graph replays of changed
# inputs, bitwise equal to eager) in what time is left.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-560}; . scripts/call_setup.sh
(timeout 420 python3 -m pytest tests -q -rf -n 8 --durations=10 > $R/tests.log 2>&1; echo "rc $?" >> $R/tests.log)
step "tests $(tail -1 $R/tests.log)"
timeout $((555 - $(el))) python3 -m fusedmoe check graphs --out $R/check > $R/graphs.log 2>&1; step "graphs rc $?"
finish
