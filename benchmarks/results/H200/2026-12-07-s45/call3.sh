#!/usr/bin/env bash
# Forty-fifth session, call 3: cached launches through the launcher's C function (c_launch.patch, applied
# here): the GPU tests of the launch cache and of the layers it launches, then the host probe on the
# committed tree (/tmp/base: the patch taken off) and on this one, in turn base, patch, patch, base.
R=${R:-/tmp/r3}; LIMIT=${LIMIT:-300}; . scripts/call_setup.sh
D=benchmarks/results/H200/2026-12-07-s45
base_tree $D/c_launch.patch
xdist=$(python -c "import xdist" 2>/dev/null && echo "-n 8")
timeout 150 python -m pytest -q -rf tests/test_launch.py tests/test_fused_moe.py -k "launch or cached or pdl or layer_matches" \
  $xdist > $R/tests.log 2>&1; step "tests rc $?"
C=qwen3_30b_a3b:fp8_tensor:1,qwen3_30b_a3b:bf16:1,hunyuan_tp8:fp8_tensor:1,qwen3_30b_a3b:fp8_tensor:64
n=0
for t in /tmp/base $PWD $PWD /tmp/base; do
  n=$((n+1)); tag=$([ $t = /tmp/base ] && echo base || echo patch)
  (cd $t && PYTHONPATH=$t timeout 45 python scripts/host_path_probe.py --out $R/host_${n}_$tag --cases $C \
    > $R/host_${n}_$tag.log 2>&1); step "host $n $tag rc $?"
done
finish
