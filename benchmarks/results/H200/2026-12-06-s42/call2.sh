#!/usr/bin/env bash
# Forty-second session, call 2 (an H100 or an H200): the warp-specialised Gluon set with 128-column
# gate/up tiles quantised in the epilogue (grouped_gluon_ws_q) against the path served (auto) at the
# fp8_tensor cases with many routes per expert, where call 1 found it 7-10% faster (GPT-OSS TP4 and
# Qwen3-235B M=8192, Mixtral M=512): M=8192 of DeepSeek-V3, GPT-OSS-120B, Qwen3-235B TP4 / TP8,
# Qwen3-30B, DeepSeek-V3 TP8, Hunyuan TP8; M=2048 of Qwen3-235B, Qwen3-30B, DeepSeek-V3, GPT-OSS-120B.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-540}; . scripts/call_setup.sh
kernels() {  # kernels SHAPES TOKENS PATH OUT_NAME TIMEOUT
  timeout $5 python -m fusedmoe.bench.kernels --shape $1 --formats fp8_tensor --tokens $2 --path $3 --out $R/$4 \
    > $R/$4.log 2>&1
}
S8=deepseek_v3,gpt_oss_120b,qwen3_235b_a22b_tp4,qwen3_235b_a22b_tp8,qwen3_30b_a3b,deepseek_v3_tp8,hunyuan_tp8
S2=qwen3_235b_a22b,qwen3_30b_a3b,deepseek_v3,gpt_oss_120b
for p in grouped_gluon_ws_q auto; do
  kernels $S8 8192 $p m8192_${p#grouped_gluon_} 150; step "8192 $p rc $?"
  kernels $S2 2048 $p m2048_${p#grouped_gluon_} 90; step "2048 $p rc $?"
done
finish
