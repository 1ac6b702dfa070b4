#!/usr/bin/env bash
# Thirty-seventh session, call 9: auto's plan over the grid as shipped (the chunk's ids loaded
# first only where the program counts by atomics: call 8's A/B), compiled first, then timed.
R=/tmp/r9; LIMIT=200; . scripts/call_setup.sh
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
timeout 90 python -m fusedmoe.bench.plan $G > $R/warm.log 2>&1; step "compiled rc $?"
timeout 40 python -m fusedmoe.bench.plan $G --out $R/plan_auto > $R/plan_auto.log 2>&1; step "plan rc $?"
finish
