#!/usr/bin/env bash
# Forty-ninth session, call 5: `fusedmoe check unseen` with M=24 among its token counts (route-direct at
# 8 < M <= 32 under the FP8 small-expert limit): auto and both paths forced on ten unseen layers against
# the float64 reference, expert windows, -1 ids, shared output, CUDA-graph replay.
R=${R:-/tmp/r5}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
timeout 540 python -m fusedmoe check unseen --out $R/unseen > $R/unseen.log 2>&1; step "unseen rc $?"
finish
