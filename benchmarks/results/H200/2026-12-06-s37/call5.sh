#!/usr/bin/env bash
# Thirty-seventh session, call 5: the plan with the new recount rule (auto, fusedmoe.bench.plan over
# 8..2048 routes x 8..512 experts, each plan checked equal to the reference), then the plan tests on
# CUDA.  The bench is run once to compile, then timed.
R=/tmp/r5; LIMIT=400; . scripts/call_setup.sh
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
timeout 120 python -m fusedmoe.bench.plan $G > $R/warm.log 2>&1; step "compiled rc $?"
timeout 60 python -m fusedmoe.bench.plan $G --out $R/plan_auto > $R/plan_auto.log 2>&1; step "plan rc $?"
timeout 200 python -m pytest -q tests/test_plan.py > $R/tests.log 2>&1; step "tests rc $?"
finish
