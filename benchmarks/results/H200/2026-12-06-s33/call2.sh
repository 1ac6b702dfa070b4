#!/usr/bin/env bash
# Thirty-third session, call 2: the ticket plan at chunk x warps variants (compiled in parallel
# first); what its per-call counter fill costs (scripts/plan_ticket_probe.py); the plan tests on
# the GPU (the ticket graph replay included); M 16, 32 with and without early_combine.patch.
R=/tmp/r2; LIMIT=585; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s33
P=$S/early_combine.patch
G="--routes 8,64,256,512,1024,2048 --experts 8,64,128,256,512"
V="ticket:128:4 ticket:256:8 ticket:256:16 ticket:64:8"
args() { local rest=${1#*:}; echo "--path ticket --chunk ${rest%%:*} --warps ${rest##*:}"; }
for v in $V; do timeout 240 python -m fusedmoe.bench.plan $G $(args $v) > $R/compile_${v//:/_}.log 2>&1 & PIDS="${PIDS:-} $!"; done; wait $PIDS
step "compiled"
for v in $V; do timeout 45 python -m fusedmoe.bench.plan $G $(args $v) --out $R/plan_${v//:/_} > $R/plan_${v//:/_}.log 2>&1; step "plan $v rc $?"; done
timeout 90 python scripts/plan_ticket_probe.py --out $R/probe > $R/probe.log 2>&1; step "probe rc $?"
timeout 120 python -m pytest -q tests/test_plan.py -k "ticket or cuda_graph or forced or boundary" > $R/tests.log 2>&1; step "tests rc $?"
B="python -m fusedmoe bench --routing softmax --paths auto --formats bf16,fp8_tensor,fp8_block --shape peers --replays 10 --no-check"
timeout 50 $B --tokens 16,32 --out $R/m16_new > $R/m16_new.log 2>&1; step "m16 new rc $?"
patch -p1 -R < $P > $R/patch_r.log 2>&1
timeout 50 $B --tokens 16,32 --out $R/m16_base > $R/m16_base.log 2>&1; step "m16 base rc $?"
patch -p1 < $P > $R/patch.log 2>&1
finish
