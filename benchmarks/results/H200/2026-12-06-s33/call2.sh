#!/usr/bin/env bash
# Thirty-third session, call 2: the ticket plan (one launch; each program ranks its chunk of
# routes, the last to take a ticket lays out the plan) against auto, over routes x experts, at
# chunk x warps variants; what its per-call counter fill costs (scripts/plan_ticket_probe.py);
# the plan tests on the GPU (ticket graph replay included).
R=/tmp/r2; LIMIT=585; . scripts/call_setup.sh
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
V="auto ticket:128:8 ticket:128:4 ticket:256:8 ticket:256:16 ticket:64:8"
args() { local p=${1%%:*} rest=${1#*:}; [ "$p" = auto ] && echo "--path auto" || echo "--path ticket --chunk ${rest%%:*} --warps ${rest##*:}"; }
for v in $V; do timeout 240 python -m fusedmoe.bench.plan $G $(args $v) > $R/compile_${v//:/_}.log 2>&1 & done; wait
step "compiled"
for v in $V; do timeout 60 python -m fusedmoe.bench.plan $G $(args $v) --out $R/plan_${v//:/_} > $R/plan_${v//:/_}.log 2>&1; step "plan $v rc $?"; done
timeout 90 python scripts/plan_ticket_probe.py --out $R/probe > $R/probe.log 2>&1; step "probe rc $?"
timeout 150 python -m pytest -q tests/test_plan.py -k "ticket or cuda_graph or forced or boundary" > $R/tests.log 2>&1; step "tests rc $?"
finish
