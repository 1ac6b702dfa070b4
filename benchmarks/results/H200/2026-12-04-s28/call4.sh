#!/usr/bin/env bash
# Throw-away (28th session), call 4: w4a8's grouped BLOCK_M holding the mean rows per expert
# plus one standard deviation (policy.W4A8_BLOCK_M_SPREAD), against the old rule (ab_old/: HEAD
# 1f8ab9a's package, same tables).  Grouped forced, w4a8, M 64..1024 over the PEERS shapes, the
# held-out and the top-1 ones; Triton cache warmed first (a process per tree and shape set),
# then old/new/new/old.  Results packed into $OUT/r.tgz after every step.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R/warm; export PYTHONUNBUFFERED=1
NEW=$PWD; OLD=$PWD/ab_old
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( while sleep 60; do pack; done ) >/dev/null 2>&1 & WD=$!
S="qwen3_30b_a3b,deepseek_v3_tp8,mixtral_8x7b_tp2,hunyuan_tp8,gpt_oss_120b_tp4"
H=$NEW/benchmarks/heldout; T=$NEW/benchmarks/top1  # absolute: each tree runs from its own directory
S="$S,$H/deepseek_v2_lite.json,$H/llama4_scout_tp8.json,$H/olmoe_1b_7b.json"
S="$S,$T/top1_e8_h4096_i14336.json,$T/top1_e16_h4096_i2048.json,$T/top1_e16_h2048_i768.json"
B="python -m fusedmoe bench --routing softmax --no-check --formats w4a8 --paths grouped --tokens 64,128,256,384,512,768,1024"
pids=""
for tree in new old; do
  dir=$NEW; [ $tree = old ] && dir=$OLD
  for s in $(echo $S | tr , ' '); do
    (cd $dir && PYTHONPATH=$dir timeout 200 $B --shape $s --calls 1 --replays 1 --out $R/warm/${tree}_$(basename $s .json) > $R/warm/${tree}_$(basename $s .json).log 2>&1) &
    pids="$pids $!"
  done
done
wait $pids
step "warm done"
for run in old1 new1 new2 old2; do
  dir=$NEW; [ ${run%?} = old ] && dir=$OLD
  left=$((560 - $(el))); [ $left -lt 40 ] && break
  (cd $dir && PYTHONPATH=$dir timeout $left $B --shape $S --replays 10 --out $R/$run > $R/$run.log 2>&1); step "$run rc $?"
done
rm -rf $R/warm/*/ ; rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
