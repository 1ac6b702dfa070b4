#!/usr/bin/env bash
# Throw-away (26th session), call 2: the PDL A/B again in the other order (ab_old first), the
# plan A/B (auto, both trees), the grouped PDL test under memcheck.
set -u
R=/tmp/r2; rm -rf $R; mkdir -p $R/warm; export PYTHONUNBUFFERED=1
NEW=$PWD; OLD=$PWD/ab_old
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 575; pack ) >/dev/null 2>&1 & WD=$!
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block"
P="python -m fusedmoe.bench.plan --routes 8,64,256,1024,2048 --experts 8,64,256,512 --path auto"
SHAPES="qwen3_30b_a3b deepseek_v3_tp8 mixtral_8x7b_tp2 hunyuan_tp8 gpt_oss_120b_tp4"
pids=""
for tree in new old; do
  dir=$NEW; [ $tree = old ] && dir=$OLD
  for s in $SHAPES; do
    (cd $dir && PYTHONPATH=$dir timeout 200 $B --tokens 16,32,64,128,512 --shape $s --calls 1 --replays 1 --out $R/warm/${tree}_$s > $R/warm/${tree}_$s.log 2>&1) &
    pids="$pids $!"
  done
  (cd $dir && PYTHONPATH=$dir timeout 200 $P --out $R/warm/plan_$tree > $R/warm/plan_$tree.log 2>&1) &
  pids="$pids $!"
done
pids="$pids $!"
(PYTHONPATH=$NEW timeout 200 python -m pytest -q tests/test_fused_moe.py -k grouped_pdl > $R/warm/tests_plain.log 2>&1) &
pids="$pids $!"
wait $pids
step "warm done"
(cd $OLD && PYTHONPATH=$OLD $B --tokens 16,32,64,128,512 --shape peers --replays 10 --out $R/old > $R/old.log 2>&1); step "old rc $?"
(cd $NEW && PYTHONPATH=$NEW $B --tokens 16,32,64,128,512 --shape peers --replays 10 --out $R/new > $R/new.log 2>&1); step "new rc $?"
(cd $OLD && PYTHONPATH=$OLD $P --out $R/plan_old > $R/plan_old.log 2>&1); step "plan old rc $?"
(cd $NEW && PYTHONPATH=$NEW $P --out $R/plan_new > $R/plan_new.log 2>&1); step "plan new rc $?"
PYTHONPATH=$NEW PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout $((440 - $(el))) compute-sanitizer --tool memcheck --error-exitcode 9 \
  python -m pytest -q tests/test_fused_moe.py -k grouped_pdl > $R/memcheck_grouped_pdl.log 2>&1; step "memcheck rc $?"
rm -rf $R/warm/*/ ; rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
