#!/usr/bin/env bash
# Thirty-seventh session, call 1.  On an H200: the thirty-sixth session's call3.sh (the down_gluon move, M 1..8 A/B)
# and nothing else.  Elsewhere: the two review changes of the thirty-sixth session on a GPU (the
# Gluon down's tests and the PDL tests on CUDA; `fusedmoe check graphs`, which now runs through
# check.replays_match_eager), then plan_stage_probe.py (its kernels compiled first, one process
# per shape, then timed in turn).
R=/tmp/r1; LIMIT=585; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s37
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=/tmp/r1h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
for s in 0 1 2 3 4 5 6; do timeout 200 python $S/plan_stage_probe.py --out $R/probe_compile --shape $s --compile-only > $R/compile_$s.log 2>&1 & done
timeout 150 python -m pytest -q tests/test_fused_moe.py -k "gluon_down or pdl" tests/test_launch.py > $R/tests.log 2>&1
step "tests rc $?"
wait
step "probe compile done"
timeout 150 python $S/plan_stage_probe.py --out $R/probe > $R/probe.log 2>&1
step "probe rc $?"
timeout 240 python -m fusedmoe check graphs --out $R/graphs > $R/graphs.log 2>&1
step "graphs rc $?"
finish
