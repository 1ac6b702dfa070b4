#!/usr/bin/env bash
# Thirty-eighth session, call 6: auto's plan over the grid five times in turn (how far the
# points near 3 us move from run to run), compiled first; then the plan tests on CUDA.
R=/tmp/r6; LIMIT=300; . scripts/call_setup.sh
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
timeout 90 python -m fusedmoe.bench.plan $G > $R/warm.log 2>&1; step "compiled rc $?"
for n in 1 2 3 4 5; do timeout 40 python -m fusedmoe.bench.plan $G --out $R/auto_$n > $R/auto_$n.log 2>&1; step "auto $n rc $?"; done
timeout 120 python -m pytest -q -x tests/test_plan.py > $R/test_plan.log 2>&1; step "test_plan rc $?"
finish
