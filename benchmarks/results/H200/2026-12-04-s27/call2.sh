#!/usr/bin/env bash
# Throw-away (27th session), call 2: a route-direct entry for GPT-OSS-120B TP4 bf16 M=16 (served
# by the M=8 entry until now; 167.0 us against vLLM's 163.8), benched with the tuned table and
# the shipped one at M 8..32; then the routing kernel with and without PDL (routing_pdl_ab.py).
set -u
R=/tmp/r2; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 575; pack ) >/dev/null 2>&1 & WD=$!
T=fusedmoe/configs/NVIDIA_H200/route_direct.json
cp $T $R/route_direct_shipped.json
timeout 260 python -m fusedmoe tune --shape gpt_oss_120b_tp4 --formats bf16 --tokens 16 --paths route_direct \
  --budget-min 3.3 --sweeps 2 --out-dir fusedmoe/configs --log $R/tune_gpt_oss_bf16_m16.jsonl > $R/tune.log 2>&1
step "tune rc $?"
cp $T $R/route_direct_tuned.json
B="python -m fusedmoe bench --shape gpt_oss_120b_tp4 --routing softmax --no-check --paths auto --formats bf16 --tokens 8,16,32 --replays 10"
$B --out $R/bench_tuned > $R/bench_tuned.log 2>&1; step "bench tuned rc $?"
cp $R/route_direct_shipped.json $T
$B --out $R/bench_shipped > $R/bench_shipped.log 2>&1; step "bench shipped rc $?"
cp $R/route_direct_tuned.json $T
$B --out $R/bench_tuned2 > $R/bench_tuned2.log 2>&1; step "bench tuned2 rc $?"
cp $R/route_direct_shipped.json $T
# (this step failed here, no PYTHONPATH; it ran as a call of its own, call 2b:
#  PYTHONPATH=$PWD timeout 400 python benchmarks/results/H200/2026-12-04-s27/routing_pdl_ab.py $OUT/routing_pdl)
timeout $((560 - $(el))) python benchmarks/results/H200/2026-12-04-s27/routing_pdl_ab.py $R/routing_pdl > $R/routing_pdl.log 2>&1; step "routing ab rc $?"
rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
