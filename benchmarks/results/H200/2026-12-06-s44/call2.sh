#!/usr/bin/env bash
# Forty-fourth session, call 2: what the warp-specialised Gluon GEMMs wait on at Mixtral TP2
# fp8_tensor M=512 / 2048 (the committed, per-tile kernels; call 1's persistent form lost 16-19%).
# Three throw-away probe trees (probe_*.patch), timed beside the committed tree by bench.kernels:
#   loads_only:   the consumers only wait for each slot and release it (no wgmma, no epilogue):
#                 the time of the TMA ring alone.  ~base: the loads bound the kernel.
#   mma_only:     the producer arrives on each slot without loading: the consumers' wgmmas,
#                 promotions and epilogue alone (on stale shared memory).  ~base: they bound it.
#   no_promotion: gate/up chains its K steps in the wgmma accumulators (no per-step wait and add;
#                 rounds more, never shipped): what the promotion structure costs in this kernel.
# Then Nsight Compute's per-instruction warp stall sampling on the committed kernels (the
# forty-third session's call 4).
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-560}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s44
for p in loads_only mma_only no_promotion; do
  rm -rf /tmp/pt_$p; mkdir -p /tmp/pt_$p; cp -r fusedmoe scripts /tmp/pt_$p/; (cd /tmp/pt_$p && git apply $OLDPWD/$S/probe_$p.patch)
done
kernels() {  # kernels TREE OUT_NAME TIMEOUT
  (cd $1 && PYTHONPATH=$1 timeout $3 python -m fusedmoe.bench.kernels --shape mixtral_8x7b_tp2 --formats fp8_tensor \
    --tokens 512,2048 --path auto --out $R/$2 > $R/$2.log 2>&1)
}
n=0
for t in $PWD /tmp/pt_loads_only /tmp/pt_mma_only /tmp/pt_no_promotion $PWD; do
  n=$((n+1)); name=base; [ $t = $PWD ] || name=${t#/tmp/pt_}; kernels $t probe_${n}_$name 90; step "probe $n $name rc $?"
done
timeout 150 ncu --clock-control none --section WarpStateStats --section SourceCounters -k regex:gluon_grouped_ \
  --launch-skip 2 --launch-count 2 --import-source yes --export $R/ncu_src \
  python benchmarks/results/H200/2026-12-06-s41/ncu_case.py served 512 > $R/ncu_src.log 2>&1; step "ncu rc $?"
timeout 60 ncu --import $R/ncu_src.ncu-rep --page source --print-source sass --csv > $R/sass_stalls.csv 2>&1
step "source page rc $?"
timeout 30 ncu --import $R/ncu_src.ncu-rep --page details > $R/ncu_details.txt 2>&1
rm -f $R/ncu_src.ncu-rep
finish
