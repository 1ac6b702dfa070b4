#!/usr/bin/env bash
# Thirty-sixth session, call 12: the PDL tests on CUDA with _pdl.plain_launches in place of the
# tests' own patching, and bench.kernels with its new default (kernels profiled plain).
R=/tmp/r12; LIMIT=200; . scripts/call_setup.sh
timeout 120 python -m pytest -q -x tests/test_launch.py tests/test_fused_moe.py -k "plain_launches or pdl" > $R/tests.log 2>&1
step "tests rc $?"
timeout 60 python -m fusedmoe.bench.kernels --shape mixtral_8x7b_tp2 --tokens 512 --formats fp8_tensor --path auto \
  --out $R/kernels > $R/kernels.log 2>&1
step "kernels rc $?"
finish
