#!/usr/bin/env bash
# Forty-fourth session, call 1: the warp-specialised Gluon GEMMs (BLOCK_M 128) made persistent
# (persistent.patch: one program per SM walking its tiles, the ring's position carried from tile
# to tile, the next tile's expert loaded under this one).
# Why: at Mixtral TP2 fp8_tensor M=512 (the case issue 4 still loses: 351 us against vLLM's 330)
# a gate/up tile takes ~47 us (655 tiles, 5 waves of one CTA per SM) and the down's ~52 us, and
# each CTA runs its ring's fill (first TMA bytes, ~1-2 us) and its epilogue (the quantising
# gate/up epilogue is ~5000 of the kernel's 7144 SASS instructions) with nothing else on the SM.
# Expected: the fill hidden under the previous tile's epilogue and the loads running through it:
# gate/up 235 -> ~215 us, down 105 -> ~100, the layer -6..-8% (below vLLM's 330.5); more where
# tiles have few K steps (Qwen3-30B H 2048: 16 steps; down at I 720-768: 6 steps).
# Steps: bench.kernels --path auto, in turn base, patch, patch, base on Mixtral TP2 / Mixtral-8x7B
# M 512/2048; GPU tests of the Gluon configs on the patched tree; base, patch on Qwen3-30B and
# GPT-OSS TP4 M=8192 and GPT-OSS-120B, DeepSeek-V3, Qwen3-235B M=2048; memcheck of the fp8_tensor
# sanitize cases (every path; the Gluon sets at group 8 and 1) as time allows.
# (Call 3 runs these steps on another patch: PATCH, TESTS (pytest -k), SANITIZE_S.)
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-570}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s44
base_tree $S/${PATCH:-persistent.patch}
kernels() {  # kernels TREE SET OUT_NAME TIMEOUT
  local shapes tokens
  case $2 in
    a) shapes=mixtral_8x7b_tp2,mixtral_8x7b; tokens=512,2048;;
    b) shapes=qwen3_30b_a3b,gpt_oss_120b_tp4; tokens=8192;;
    c) shapes=gpt_oss_120b,deepseek_v3,qwen3_235b_a22b; tokens=2048;;
  esac
  (cd $1 && PYTHONPATH=$1 timeout $4 python -m fusedmoe.bench.kernels --shape $shapes --formats fp8_tensor \
    --tokens $tokens --path auto --out $R/$3 > $R/$3.log 2>&1)
}
tag() { [ $1 = /tmp/base ] && echo base || echo patch; }
n=0
for t in /tmp/base $PWD; do n=$((n+1)); kernels $t a a_${n}_$(tag $t) 120; step "a $n $(tag $t) rc $?"; done
timeout 200 python -m pytest -q tests/test_fused_moe.py -k "${TESTS:-gluon}" > $R/tests.log 2>&1; step "tests rc $?"
for t in $PWD /tmp/base; do n=$((n+1)); kernels $t a a_${n}_$(tag $t) 90; step "a $n $(tag $t) rc $?"; done
for s in b c; do for t in /tmp/base $PWD; do
  kernels $t $s ${s}_$(tag $t) 120; step "$s $(tag $t) rc $?"
done; done
timeout ${SANITIZE_S:-150} python -m fusedmoe check sanitize --formats fp8_tensor > $R/sanitize_plain.log 2>&1; step "sanitize plain rc $?"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
  python -m fusedmoe check sanitize --formats fp8_tensor > $R/memcheck.log 2>&1; step "memcheck rc $?"
finish
