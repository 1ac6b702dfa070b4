#!/usr/bin/env bash
# Forty-third session, call 2 (the committed kernels; call 1's trim is not applied).
#   1. Nsight Compute, full set, on the served Mixtral TP2 fp8_tensor M=512 layer's two Gluon GEMMs
#      (the (128, 128) warp-specialised set).  Call 1: taking 5% of gate/up's L2-to-SM bytes away
#      (tail_a_rows.patch) and doubling the down's tiles changed neither kernel's time, and gate/up
#      and down both run at ~2.1 TB/s of HBM (470 / 235 MB in 235 / 105 us) with ~1024 wgmma clocks a
#      K step taking 1.47 / 0.93 us: what do the consumer warps wait on?
#   2. The forty-second session's call 3: the (128, 128) set against the heuristic on five shapes
#      outside the tables and benchmarks/heldout (M 512 / 2048 / 8192).
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-560}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s43
timeout 150 ncu --clock-control none --set full -k regex:gluon_grouped_ --launch-skip 2 --launch-count 2 \
  --export $R/ncu_ws_m512 python $S/ncu_case.py served 512 > $R/ncu_ws_m512.log 2>&1; step "ncu rc $?"
ncu --import $R/ncu_ws_m512.ncu-rep --page details > $R/ncu_ws_m512.txt 2>&1; step "ncu details rc $?"
for sh in benchmarks/results/H200/2026-12-06-s42/shapes/*; do
  for p in grouped_gluon_ws_q auto; do  # one shape at a time, so a call cut short still brings whole shapes back
    n=$(basename $sh)_${p#grouped_gluon_}
    timeout 60 python -m fusedmoe.bench.kernels --shape $sh --formats fp8_tensor --tokens 512,2048,8192 --path $p \
      --out $R/$n > $R/$n.log 2>&1; step "$n rc $?"
  done
done
finish
