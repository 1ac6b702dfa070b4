#!/usr/bin/env bash
# Forty-first session, call 1: the warp-specialised Gluon GEMMs (BLOCK_M 128) skipping a block's
# empty upper half (ws_skip.patch: the second consumer warpgroup only releases the ring when the
# block's routes end within its first 64 rows), against the same kernels without the skip.
#   1. GPU tests of the Gluon configs (the new half_blocks case) and of PDL against plain launches;
#   2. fusedmoe.bench.kernels --path grouped_gluon_ws over Mixtral TP2, Qwen3-30B, DeepSeek-V3 TP8,
#      Hunyuan TP8 fp8_tensor at M 512 / 2048, on the committed kernels with the patch taken off
#      (/tmp/base) and on this tree, in turn base, patch, patch, base (both compiled first, in
#      parallel); then --path auto (the served configs) on this tree;
#   3. Nsight Compute's SpeedOfLight on Mixtral TP2 M=512's two GEMMs, served (Triton, BLOCK_M 64)
#      and warp-specialised: whether the served gate/up is bound by L2 throughput (84% in the
#      twenty-third session) and how much the 128-row tiles relieve it.
# On an H200 it runs the thirty-sixth session's call 3 instead (down_gluon A/B, decode M 1..8).
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-580}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s41
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=${R}h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
base_tree $S/ws_skip.patch
kernels() {  # kernels TREE PATH OUT_NAME (empty: warm-up) TIMEOUT
  (cd $1 && PYTHONPATH=$1 timeout $4 python -m fusedmoe.bench.kernels --shape mixtral_8x7b_tp2,qwen3_30b_a3b,deepseek_v3_tp8,hunyuan_tp8 \
    --formats fp8_tensor --tokens 512,2048 --path $2 ${3:+--out $R/$3} > $R/${3:-warm_$RANDOM}.log 2>&1)
}
kernels /tmp/base grouped_gluon_ws "" 200 & P1=$!
kernels $PWD grouped_gluon_ws "" 200 & P2=$!
timeout 200 python -m pytest -q -x tests/test_fused_moe.py -k "gluon_config or pdl_equals" > $R/tests.log 2>&1
step "tests rc $?"
wait $P1 $P2; step "compiled"
n=0
for t in /tmp/base $PWD $PWD /tmp/base; do
  n=$((n+1)); tag=$([ $t = /tmp/base ] && echo base || echo patch)
  kernels $t grouped_gluon_ws ws_${n}_$tag 90; step "ws $n $tag rc $?"
done
kernels $PWD auto auto_patch 90; step "auto rc $?"
for c in served ws; do
  timeout 60 ncu --clock-control none -k regex:grouped_ --launch-skip 2 --launch-count 2 --section SpeedOfLight \
    python $S/ncu_case.py $c 512 > $R/ncu_$c.txt 2>&1; step "ncu $c rc $?"
done
finish
