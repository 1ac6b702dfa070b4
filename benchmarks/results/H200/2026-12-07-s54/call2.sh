#!/usr/bin/env bash
# Prepared in the fifty-fourth session (no device was lent then); run after call1 (the
# fifty-third session's call1.sh, on an H200: issue 4's figures, GPT-OSS per kernel, plan, tests).
# 1. The transformers integration on the GPU (transformers 5.17 on the device image): its tests on
#    CUDA, then `fusedmoe.bench.transformers` at Qwen3-30B (SiLU) and GPT-OSS-120B TP4 (clamped
#    SwiGLU, biases, transposed interleaved layout) over M 1..512: transformers' grouped_mm and
#    batched_mm against fusedmoe, bf16, and fusedmoe with fp8_block quantised at first call.
# 2. On an H200: the tuner's down_gluon move at GPT-OSS TP4 bf16 M=16 (0.98x vLLM in the
#    forty-second session; the move never ran at M=16), then the decode bench on the start and
#    tuned tables in turn.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-585}; . scripts/call_setup.sh
timeout 150 python -m pytest tests/test_transformers.py -q -rf > $R/tests_transformers.log 2>&1; step "tests rc $?"
timeout 120 python -m fusedmoe.bench.transformers --shape qwen3_30b_a3b,gpt_oss_120b_tp4 --tokens 1,8,64,512 \
  --out $R/transformers_bf16 > $R/transformers_bf16.log 2>&1; step "transformers bf16 rc $?"
timeout 90 python -m fusedmoe.bench.transformers --shape qwen3_30b_a3b --tokens 1,8,64,512 --format fp8_block \
  --impls grouped_mm,fusedmoe --out $R/transformers_fp8_block > $R/transformers_fp8_block.log 2>&1
step "transformers fp8_block rc $?"
[ "$DEV" = NVIDIA_H200 ] && tune_and_ab down_gluon 16 150 2 16 40 bf16 gpt_oss_120b_tp4
finish
