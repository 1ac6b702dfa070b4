#!/usr/bin/env bash
# Forty-fifth session, call 2: where an eager call's host time goes now (the direct launcher came in the
# twenty-ninth session, whose probe ran before it): scripts/host_path_probe.py on its five cases and two more.
R=${R:-/tmp/r2}; LIMIT=${LIMIT:-280}; . scripts/call_setup.sh
C=qwen3_30b_a3b:fp8_tensor:1,qwen3_30b_a3b:bf16:1,qwen3_30b_a3b:fp8_block:1,qwen3_30b_a3b:fp8_tensor:64,qwen3_30b_a3b:bf16:64
C=$C,hunyuan_tp8:fp8_tensor:1,mixtral_8x7b_tp2:fp8_tensor:512
timeout 250 python scripts/host_path_probe.py --out $R/host_probe --cases $C > $R/host_probe.log 2>&1; step "host probe rc $?"
finish
