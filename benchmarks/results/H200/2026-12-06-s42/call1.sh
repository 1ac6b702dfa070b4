#!/usr/bin/env bash
# Forty-second session, call 1.  On an H100: the forty-first session's call 4 (the x gather's column
# splits: GPU tests and A/B; with EXTRA=1 the 64- against 128-column warp-specialised gate/up).
# On an H200 (none has come since the thirtieth session): fresh issue-4 figures on the committed
# tree, the decode bench at M 1, 2, 4, 8 and at M 16..512 over the PEERS shapes (auto), then the
# gather A/B at Mixtral TP2 fp8_tensor M=512 / 2048.
R=${R:-/tmp/r1}; LIMIT=${LIMIT:-480}; . scripts/call_setup.sh
if [ "$DEV" != NVIDIA_H200 ]; then finish; exec env R=${R}x LIMIT=$((LIMIT - 15)) bash benchmarks/results/H200/2026-12-06-s41/call4.sh; fi
bench() {  # bench TOKENS OUT_NAME TIMEOUT
  timeout $3 python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block \
    --tokens $1 --shape peers --replays 10 --out $R/$2 > $R/$2.log 2>&1
}
bench 1,2,4,8 decode 150; step "decode rc $?"
bench 16,32,64,128,512 m16_512 170; step "m16_512 rc $?"
base_tree benchmarks/results/H200/2026-12-06-s41/gather_splits.patch
n=0
for t in /tmp/base $PWD $PWD /tmp/base; do
  n=$((n+1)); tag=$([ $t = /tmp/base ] && echo base || echo patch)
  (cd $t && PYTHONPATH=$t timeout 60 python -m fusedmoe.bench.kernels --shape mixtral_8x7b_tp2 --formats fp8_tensor \
    --tokens 512,2048 --path auto --out $R/gather_${n}_$tag > $R/gather_${n}_$tag.log 2>&1); step "gather $n $tag rc $?"
done
finish
