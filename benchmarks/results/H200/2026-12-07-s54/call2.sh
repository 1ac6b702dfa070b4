#!/usr/bin/env bash
# Prepared in the fifty-fourth session while no device was lent; run after call1 (the fifty-third
# session's call1.sh, on an H200: issue 4's figures, GPT-OSS per kernel, plan, tests).  Steps run
# in this order while the call's time lasts (each is skipped, and says so, when too little is left):
# 1. On an H200: the tuner's down_gluon move at GPT-OSS TP4 bf16 M=16 (0.98x vLLM in the
#    forty-second session; the move never ran at M=16), then the decode bench on the start and
#    tuned tables in turn.
# 2. The transformers integration on the GPU (transformers 5.17 on the device image): its tests on
#    CUDA, then `fusedmoe.bench.transformers` at Qwen3-30B (SiLU) and GPT-OSS-120B TP4 (clamped
#    SwiGLU, biases, transposed interleaved layout): transformers' grouped_mm over M 1..512 and
#    batched_mm to M=64 against fusedmoe in bf16, then grouped_mm against fusedmoe with fp8_block
#    quantised at the first call.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
# in_time SECONDS NAME CMD...: CMD under timeout SECONDS into R/NAME.log, if that many seconds are left
in_time() {
  local s=$1 name=$2; shift 2
  if [ $(( LIMIT - 15 - $(el) )) -lt $s ]; then step "$name skipped: too little time left"; return; fi
  timeout $s "$@" > $R/$name.log 2>&1; step "$name rc $?"
}
[ "$DEV" = NVIDIA_H200 ] && tune_and_ab down_gluon 16 150 2 16 40 bf16 gpt_oss_120b_tp4
in_time 150 tests_transformers python -m pytest tests/test_transformers.py -q -rf
B="python -m fusedmoe.bench.transformers"
in_time 120 transformers_bf16 $B --shape qwen3_30b_a3b,gpt_oss_120b_tp4 --tokens 1,8,64,512 --impls grouped_mm,fusedmoe \
  --out $R/transformers_bf16
# batched_mm gathers a weight matrix per route ([M*k, 2I, H]): 26 GB at Qwen3-30B M=512, so M <= 64
in_time 90 transformers_bf16_batched $B --shape qwen3_30b_a3b,gpt_oss_120b_tp4 --tokens 1,8,64 \
  --impls batched_mm,fusedmoe --out $R/transformers_bf16_batched
in_time 90 transformers_fp8_block $B --shape qwen3_30b_a3b --tokens 1,8,64,512 --format fp8_block \
  --impls grouped_mm,fusedmoe --out $R/transformers_fp8_block
finish
