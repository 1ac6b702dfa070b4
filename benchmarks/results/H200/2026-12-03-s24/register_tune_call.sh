#!/usr/bin/env bash
# Throw-away (24th session): register-cap tuning (specs SHAPES:FORMATS:TOKENS:MINUTES), then bench old/new of what moved.
# Run from the repository root with this file and changed_cases.py copied there as tmp_call.sh / tmp_changed.py (their
# names in the calls); PRE also needs tmp_grouped_head.json: git show 66fe69d:fusedmoe/configs/NVIDIA_H200/grouped.json.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R/configs
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
T=fusedmoe/configs/NVIDIA_H200/grouped.json
cp $T $R/grouped_old.json; cp -r fusedmoe/configs/NVIDIA_H200 $R/configs/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt
t0=$(date +%s)
( sleep ${WATCHDOG_S:-565}; tar czf $OUT/r.tgz -C $R . ) >/dev/null 2>&1 & WD=$!
B="python -m fusedmoe bench --routing softmax --replays 10 --no-check --paths auto"
if [ -n "${PRE:-}" ]; then  # bench the tree's table against tmp_grouped_head.json first: PRE='shape:fmt:tokens ...'
  for spec in $PRE; do IFS=: read shape fmt tok <<< "$spec"
    for tab in head tree head tree; do
      [ $tab = head ] && cp tmp_grouped_head.json $T || cp $R/grouped_old.json $T
      timeout 120 $B --shape $shape --formats $fmt --tokens $tok --out $R/pre_${shape}_${fmt}_${tab}_$SECONDS > /dev/null 2>&1
    done; done
  cp $R/grouped_old.json $T
  echo "pre $(( $(date +%s)-t0 )) s" >> $R/tune.log
fi
for spec in "$@"; do IFS=: read shapes fmts toks min <<< "$spec"
  timeout $((min*60+90)) python -m fusedmoe tune --shape $shapes --formats $fmts --tokens $toks --paths grouped \
    --moves gate_up_registers,down_registers --budget-min $min --force --out-dir $R/configs --log $R/tune_candidates.jsonl >> $R/tune.log 2>&1
  echo "tune $spec rc $? $(( $(date +%s)-t0 )) s" >> $R/tune.log
done
python tmp_changed.py $R/tune_candidates.jsonl $R/configs/NVIDIA_H200/grouped.json > $R/changed.txt
cat $R/changed.txt
while read shape fmt tok; do
  for tab in old new; do
    [ $tab = old ] && cp $R/grouped_old.json $T || cp $R/configs/NVIDIA_H200/grouped.json $T
    timeout 120 $B --shape $shape --formats $fmt --tokens $tok --out $R/bench_${shape}_${fmt}_$tab > $R/bench_${shape}_${fmt}_$tab.log 2>&1
  done
done < $R/changed.txt
echo "all $(( $(date +%s)-t0 )) s" >> $R/tune.log
grep -a "^tune\|^pre\|^all\|entries written" $R/tune.log
kill $WD 2>/dev/null; tar czf $OUT/r.tgz -C $R .
