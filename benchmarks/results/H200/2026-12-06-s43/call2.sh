#!/usr/bin/env bash
# Forty-third session, call 2 (call 1's trim is not applied; ncu runs the base tree).
#   1. Nsight Compute, full set, on the served Mixtral TP2 fp8_tensor M=512 layer's two Gluon GEMMs
#      (the (128, 128) warp-specialised set).  Call 1: taking 5% of gate/up's L2-to-SM bytes away
#      (tail_a_rows.patch) and doubling the down's tiles changed neither kernel's time, and gate/up
#      and down both run at ~2.1 TB/s of HBM (470 / 235 MB in 235 / 105 us) with ~1024 wgmma clocks a
#      K step taking 1.47 / 0.93 us: what do the consumer warps wait on?
#   2. pair_loads.patch (applied on this tree): the warp-specialised producer waits for two ring slots,
#      then loads both K steps back to back, so each weight row's 256 contiguous bytes are asked for
#      at once (now 128 bytes per row about every 1.5 us, 4 KB apart: one DRAM page opening per step?).
#      If HBM's access pattern caps both GEMMs at ~2.1 TB/s, gate/up 235 -> ~200 us; if not, no change.
#      bench.kernels --path auto, Mixtral TP2 and Mixtral-8x7B M 512 / 2048, in turn base, patch, patch, base.
#   3. The forty-second session's call 3 (base tree): the (128, 128) set against the heuristic on five shapes
#      outside the tables and benchmarks/heldout (M 512 / 2048 / 8192).
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-560}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s43
base_tree $S/pair_loads.patch
(cd /tmp/base && PYTHONPATH=/tmp/base timeout 150 ncu --clock-control none --set full -k regex:gluon_grouped_ \
  --launch-skip 2 --launch-count 2 --export $R/ncu_ws_m512 python $OLDPWD/benchmarks/results/H200/2026-12-06-s41/ncu_case.py served 512 \
  > $R/ncu_ws_m512.log 2>&1); step "ncu rc $?"
ncu --import $R/ncu_ws_m512.ncu-rep --page details > $R/ncu_ws_m512.txt 2>&1; step "ncu details rc $?"
gluon_ab pair
for sh in benchmarks/results/H200/2026-12-06-s42/shapes/*; do
  for p in grouped_gluon_ws_q auto; do  # one shape at a time, so a call cut short still brings whole shapes back
    n=$(basename $sh)_${p#grouped_gluon_}
    (cd /tmp/base && PYTHONPATH=/tmp/base timeout 60 python -m fusedmoe.bench.kernels --shape $OLDPWD/$sh \
      --formats fp8_tensor --tokens 512,2048,8192 --path $p --out $R/$n > $R/$n.log 2>&1); step "$n rc $?"
  done
done
finish
