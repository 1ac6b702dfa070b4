#!/usr/bin/env bash
# Throw-away (26th session), call 1: PDL over the grouped path's launches.  Warm the Triton cache
# (each tree x shape in its own process), then time M 16..512 over the PEERS shapes with the new
# tree and with ab_old/ (HEAD f6c95d6's package, the same tables), then the GPU tests of the
# change and the graph check.  Results packed into $OUT/r.tgz after every step.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R/warm; export PYTHONUNBUFFERED=1
NEW=$PWD; OLD=$PWD/ab_old
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 570; pack ) >/dev/null 2>&1 & WD=$!
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; } > $R/env.txt 2>&1
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block --tokens 16,32,64,128,512"
SHAPES="qwen3_30b_a3b deepseek_v3_tp8 mixtral_8x7b_tp2 hunyuan_tp8 gpt_oss_120b_tp4"
pids=""
for tree in new old; do
  dir=$NEW; [ $tree = old ] && dir=$OLD
  for s in $SHAPES; do
    (cd $dir && PYTHONPATH=$dir timeout 230 $B --shape $s --calls 1 --replays 1 --out $R/warm/${tree}_$s > $R/warm/${tree}_$s.log 2>&1) &
    pids="$pids $!"
  done
done
# the change's GPU tests meanwhile (new tree): the grouped PDL test, the stages, the Gluon config
(PYTHONPATH=$NEW timeout 230 python -m pytest -q -n 4 tests/test_fused_moe.py -k "pdl_equals or gluon_config or gather_plan or fp8_gate_up_tiles_of_part" tests/test_stages.py > $R/tests_pdl.log 2>&1; echo "rc $?" >> $R/tests_pdl.log) &
pids="$pids $!"
wait $pids
step "warm+tests done"
(cd $NEW && PYTHONPATH=$NEW $B --shape peers --replays 10 --out $R/new > $R/new.log 2>&1); step "new rc $?"
(cd $OLD && PYTHONPATH=$OLD $B --shape peers --replays 10 --out $R/old > $R/old.log 2>&1); step "old rc $?"
PYTHONPATH=$NEW timeout $((560 - $(el))) python -m fusedmoe check graphs --out $R/graphs > $R/graphs.log 2>&1; step "graphs rc $?"
rm -rf $R/warm/*/ ; rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
