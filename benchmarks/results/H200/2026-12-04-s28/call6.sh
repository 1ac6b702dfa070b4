#!/usr/bin/env bash
# Throw-away (28th session), call 6: does Mixtral TP2's one w4a8 table entry (M=128, BLOCK_M 32,
# tuned in the 24th session) still beat the heuristic with the new BLOCK_M rule (64 there)?
# "table" = this tree; "heur" = ab_old/, the same package without that entry.  Grouped forced,
# M 64..256, table/heur/heur/table.  Results packed into $OUT/r.tgz.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
NEW=$PWD; OLD=$PWD/ab_old
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
B="python -m fusedmoe bench --routing softmax --no-check --formats w4a8 --paths grouped --tokens 64,96,128,192,256 --shape mixtral_8x7b_tp2"
(cd $NEW && PYTHONPATH=$NEW $B --calls 1 --replays 1 --out $R/warm_t > /dev/null 2>&1) & (cd $OLD && PYTHONPATH=$OLD $B --calls 1 --replays 1 --out $R/warm_h > /dev/null 2>&1) & wait
step "warm"
for run in table1 heur1 heur2 table2; do
  dir=$NEW; [ ${run%?} = heur ] && dir=$OLD
  (cd $dir && PYTHONPATH=$dir timeout 120 $B --replays 10 --out $R/$run > $R/$run.log 2>&1); step "$run rc $?"
done
rm -rf $R/warm_*; rm -f $R/*/*.png; pack
