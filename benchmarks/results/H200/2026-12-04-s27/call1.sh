#!/usr/bin/env bash
# Throw-away (27th session), call 1: the route-direct down, the combine and the routing let the
# next grid launch after their wait.  Warm the Triton cache (each tree x shape in its own
# process) while the change's GPU tests run, then decode M 1..8 new/old/old/new and M 16..512
# old/new over the PEERS shapes (ab_old/: HEAD a29c017's package, same tables), then the PDL
# tests under compute-sanitizer memcheck.  Results packed into $OUT/r.tgz after every step.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R/warm; export PYTHONUNBUFFERED=1
NEW=$PWD; OLD=$PWD/ab_old
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( sleep 575; pack ) >/dev/null 2>&1 & WD=$!
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; git log -1 --oneline; } > $R/env.txt 2>&1
B="python -m fusedmoe bench --routing softmax --no-check --paths auto --formats bf16,fp8_tensor,fp8_block"
SHAPES="qwen3_30b_a3b deepseek_v3_tp8 mixtral_8x7b_tp2 hunyuan_tp8 gpt_oss_120b_tp4"
pids=""
for tree in new old; do
  dir=$NEW; [ $tree = old ] && dir=$OLD
  for s in $SHAPES; do
    (cd $dir && PYTHONPATH=$dir timeout 200 $B --tokens 1,2,4,8,16,32,64,128,512 --shape $s --calls 1 --replays 1 --out $R/warm/${tree}_$s > $R/warm/${tree}_$s.log 2>&1) &
    pids="$pids $!"
  done
done
(PYTHONPATH=$NEW timeout 200 python -m pytest -q -n 4 tests/test_fused_moe.py tests/test_routing.py -k "pdl or chained or down_tiles or pipeline or routing or softmax or sigmoid" > $R/tests.log 2>&1; echo "rc $?" >> $R/tests.log) &
pids="$pids $!"
wait $pids
step "warm+tests done"
D="$B --tokens 1,2,4,8 --shape peers --replays 10"
(cd $NEW && PYTHONPATH=$NEW $D --out $R/dec_new1 > $R/dec_new1.log 2>&1); step "dec new1 rc $?"
(cd $OLD && PYTHONPATH=$OLD $D --out $R/dec_old1 > $R/dec_old1.log 2>&1); step "dec old1 rc $?"
(cd $OLD && PYTHONPATH=$OLD $D --out $R/dec_old2 > $R/dec_old2.log 2>&1); step "dec old2 rc $?"
(cd $NEW && PYTHONPATH=$NEW $D --out $R/dec_new2 > $R/dec_new2.log 2>&1); step "dec new2 rc $?"
G="$B --tokens 16,32,64,128,512 --shape peers --replays 10"
(cd $OLD && PYTHONPATH=$OLD $G --out $R/m16_old > $R/m16_old.log 2>&1); step "m16 old rc $?"
(cd $NEW && PYTHONPATH=$NEW $G --out $R/m16_new > $R/m16_new.log 2>&1); step "m16 new rc $?"
PYTHONPATH=$NEW timeout $((565 - $(el))) compute-sanitizer --tool memcheck --error-exitcode 9 \
  python -m pytest -q tests/test_fused_moe.py -k "pdl_equals or chained_under_pdl" > $R/memcheck_pdl.log 2>&1; step "memcheck rc $?"
rm -rf $R/warm/*/ ; rm -f $R/*/*.png
kill $WD 2>/dev/null; pack
