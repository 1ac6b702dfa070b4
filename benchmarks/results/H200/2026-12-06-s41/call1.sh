#!/usr/bin/env bash
# Forty-first session, call 1: two changes to the warp-specialised Gluon GEMMs (BLOCK_M 128), in
# three trees:
#   base  - the kernels before this session (ws_skip.patch taken off, /tmp/base);
#   skip  - this tree: a block whose routes end within its first 64 rows runs no wgmma in the
#           second consumer warpgroup, which only releases the ring (ws_skip.patch);
#   fused - skip + gate/up tiles of 128 columns (one partial alive at a time) with SiLU(g) * u
#           quantised to e4m3 in the epilogue, no fp32 intermediate and no requantisation launch
#           (fused_quant.patch applied to a copy of this tree, /tmp/fz).
# Steps: GPU tests of the Gluon configs and PDL in skip and fused; fusedmoe.bench.kernels --path
# grouped_gluon_ws over Mixtral TP2, Qwen3-30B, DeepSeek-V3 TP8 fp8_tensor at M 512 / 2048 in turn
# base, skip, fused, fused, skip, base (all compiled first, in parallel); --path auto in fused and
# skip (Mixtral TP2 M=2048's entry is the warp-specialised set); Nsight Compute's SpeedOfLight on
# Mixtral TP2 M=512's two GEMMs, served (Triton, BLOCK_M 64) and warp-specialised (fused).
# On an H200 it runs the thirty-sixth session's call 3 instead (down_gluon A/B, decode M 1..8).
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-580}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s41
if [ "$DEV" = NVIDIA_H200 ]; then finish; R=${R}h LIMIT=560 SKIP_M16=1 bash benchmarks/results/H200/2026-12-06-s36/call3.sh; exit 0; fi
base_tree $S/ws_skip.patch
rm -rf /tmp/fz; mkdir /tmp/fz; cp -r fusedmoe scripts tests pyproject.toml $S /tmp/fz/ 2>/dev/null
(cd /tmp/fz && git apply $OLDPWD/$S/fused_quant.patch) || { echo "fused_quant.patch did not apply" > $R/error.txt; }
# the H200 tables under this device's name, as call_setup.sh does, from the patched ones
mkdir -p /tmp/fz/$C/$DEV && cp /tmp/fz/$C/NVIDIA_H200/*.json /tmp/fz/$C/$DEV/
kernels() {  # kernels TREE PATH OUT_NAME (empty: warm-up) TIMEOUT
  (cd $1 && PYTHONPATH=$1 timeout $4 python -m fusedmoe.bench.kernels --shape mixtral_8x7b_tp2,qwen3_30b_a3b,deepseek_v3_tp8 \
    --formats fp8_tensor --tokens 512,2048 --path $2 ${3:+--out $R/$3} > $R/${3:-warm_$RANDOM}.log 2>&1)
}
tag_of() { case $1 in /tmp/base) echo base;; /tmp/fz) echo fused;; *) echo skip;; esac; }
pids=()
for t in /tmp/base $PWD /tmp/fz; do kernels $t grouped_gluon_ws "" 200 & pids+=($!); done
timeout 150 python -m pytest -q -x tests/test_fused_moe.py -k "gluon_config or pdl_equals" > $R/tests_skip.log 2>&1
step "tests skip rc $?"
(cd /tmp/fz && PYTHONPATH=/tmp/fz timeout 150 python -m pytest -q -x -p no:cacheprovider tests/test_fused_moe.py \
  -k "gluon_config or pdl_equals" > $R/tests_fused.log 2>&1); step "tests fused rc $?"
wait "${pids[@]}"; step "compiled"
n=0
for t in /tmp/base $PWD /tmp/fz /tmp/fz $PWD /tmp/base; do
  n=$((n+1)); tag=$(tag_of $t)
  kernels $t grouped_gluon_ws ws_${n}_$tag 60; step "ws $n $tag rc $?"
done
kernels /tmp/fz auto auto_fused 60; step "auto fused rc $?"
kernels $PWD auto auto_skip 60; step "auto skip rc $?"
for c in served ws; do
  (cd /tmp/fz && PYTHONPATH=/tmp/fz timeout 60 ncu --clock-control none -k regex:grouped_ --launch-skip 2 --launch-count 2 \
    --section SpeedOfLight python $OLDPWD/$S/ncu_case.py $c 512 > $R/ncu_$c.txt 2>&1); step "ncu $c rc $?"
done
finish
