#!/usr/bin/env bash
# Thirty-seventh session, call 7: the recount program loading its chunk's ids before all of them (their
# latency under the count's): auto's plan over the grid as in call 5, compiled first, then timed.
R=/tmp/r7; LIMIT=250; . scripts/call_setup.sh
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
timeout 120 python -m fusedmoe.bench.plan $G > $R/warm.log 2>&1; step "compiled rc $?"
timeout 60 python -m fusedmoe.bench.plan $G --out $R/plan_auto > $R/plan_auto.log 2>&1; step "plan rc $?"
finish
