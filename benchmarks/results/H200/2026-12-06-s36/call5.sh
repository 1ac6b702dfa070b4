#!/usr/bin/env bash
# Thirty-sixth session, call 5: `fusedmoe check unseen` (call 4's script, now a step of the GPU
# check), and the check's tests on CUDA.
R=/tmp/r5; LIMIT=560; . scripts/call_setup.sh
timeout 400 python -m fusedmoe check unseen --out $R/unseen > $R/unseen.log 2>&1
step "unseen rc $?"
timeout 120 python -m pytest -q tests/test_policy.py -k "check" > $R/tests.log 2>&1
step "tests rc $?"
finish
