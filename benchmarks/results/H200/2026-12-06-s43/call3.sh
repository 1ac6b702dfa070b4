#!/usr/bin/env bash
# Forty-third session, call 3: the heuristic's Gluon rule (gluon_rule.patch, applied on this tree):
# where the Gluon kernels run, shapes in no table take the (128, 128) set at I >= 1536 with 64+
# routes an expert and at I >= 512 with 256+ (policy.GLUON_HEURISTIC_RULES).
#   1. GPU tests: the rule's policy test, the Gluon config tests.
#   2. benchmarks/heldout (DeepSeek-V2-Lite, Llama-4-Scout TP8, OLMoE; kept out of every rule) at
#      M 512 / 2048 / 8192, fp8_tensor, auto on the committed heuristic (/tmp/base) and with the rule.
#      Expected: the rule changes only DeepSeek-V2-Lite M=8192, OLMoE M=2048 / 8192, Llama-4-Scout
#      M=8192 (the second rule), each faster (0.82-0.93x at the shapes it came from); the rest equal.
#   3. With UNSEEN=1, the five shapes of call 2 with the rule (auto): as call 2's grouped_gluon_ws_q where it applies.
R=${R:-/tmp/r3}; LIMIT=${LIMIT:-500}; . scripts/call_setup.sh
S=benchmarks/results/H200/2026-12-06-s43
base_tree $S/gluon_rule.patch
timeout 150 python -m pytest -q tests/test_policy.py tests/test_fused_moe.py -k "gluon" > $R/tests.log 2>&1
step "tests rc $?"
kernels() {  # kernels TREE SHAPE OUT_NAME TIMEOUT
  (cd $1 && PYTHONPATH=$1 timeout $4 python -m fusedmoe.bench.kernels --shape $2 --formats fp8_tensor \
    --tokens 512,2048,8192 --path auto --out $R/$3 > $R/$3.log 2>&1)
}
for sh in benchmarks/heldout/*.json; do
  n=$(basename $sh .json)
  for t in /tmp/base $PWD; do
    tag=$([ $t = /tmp/base ] && echo base || echo rule)
    kernels $t $PWD/$sh ${n}_$tag 90; step "$n $tag rc $?"
  done
done
if [ "${UNSEEN:-0}" = 1 ]; then
  for sh in benchmarks/results/H200/2026-12-06-s42/shapes/*; do
    n=$(basename $sh); kernels $PWD $PWD/$sh ${n}_rule 90; step "$n rule rc $?"
  done
fi
finish
