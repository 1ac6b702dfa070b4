#!/usr/bin/env bash
# Forty-second session, call 3: is the 128-column quantising warp-specialised set (grouped_gluon_ws_q)
# a rule for shapes the tables do not hold?  Five MoE shapes with no table entry (shapes/*/config.json, none of benchmarks/heldout/:
# Mixtral-8x22B TP4, Qwen2-57B-A14B, Phi-3.5-MoE, DBRX TP4, Qwen1.5-MoE-A2.7B), fp8_tensor, M 512,
# 2048, 8192: the path served (auto: the heuristic) against the set.
R=${R:-/tmp/r3}; LIMIT=${LIMIT:-400}; . scripts/call_setup.sh
for sh in benchmarks/results/H200/2026-12-06-s42/shapes/*; do
  for p in grouped_gluon_ws_q auto; do  # one shape at a time, so a call cut short still brings whole shapes back
    n=$(basename $sh)_${p#grouped_gluon_}
    timeout 60 python -m fusedmoe.bench.kernels --shape $sh --formats fp8_tensor --tokens 512,2048,8192 --path $p \
      --out $R/$n > $R/$n.log 2>&1; step "$n rc $?"
  done
done
finish
