#!/usr/bin/env bash
# Forty-third session, call 4 (prepared, not run: the device time was spent).  Where the consumer
# warpgroups of the warp-specialised Gluon GEMMs wait, per SASS instruction: Nsight Compute's warp
# stall sampling on the served Mixtral TP2 fp8_tensor M=512 layer (gate/up 235 us, down 105 on the
# H200; nothing saturated in call 2's report).  If most samples sit on the consumers' `ready`
# mbarrier waits, the ring starves (the loads' latency at ~2.1 TB/s); on the wgmma waits, the
# serialised gate-then-up partials; in the epilogue, the non-persistent grid's exposed tail.
R=${R:-/tmp/r4}; LIMIT=${LIMIT:-200}; . scripts/call_setup.sh
timeout 150 ncu --clock-control none --section WarpStateStats --section SourceCounters -k regex:gluon_grouped_ \
  --launch-skip 2 --launch-count 2 --import-source yes --export $R/ncu_src \
  python benchmarks/results/H200/2026-12-06-s41/ncu_case.py served 512 > $R/ncu_src.log 2>&1; step "ncu rc $?"
ncu --import $R/ncu_src.ncu-rep --page source --print-source sass --csv > $R/sass_stalls.csv 2>&1
step "source page rc $?"
rm -f $R/ncu_src.ncu-rep
finish
