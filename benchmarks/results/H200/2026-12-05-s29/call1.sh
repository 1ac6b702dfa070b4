#!/usr/bin/env bash
# Throw-away (29th session), call 1: the host path of eager calls, old (ab_old/: HEAD ec48521's
# package, launches through Triton's run()) against new (the working tree: fusedmoe._launch),
# in the order old, new, old, new; then the bench's eager column for both trees, and the graph
# check of the new tree (every kernel captured through the direct launches, replayed, bitwise
# equal to eager).  Results packed into $OUT/r.tgz after every step.
# ab_old/ was made here before the call: mkdir -p ab_old/scripts; git archive ec48521 fusedmoe | tar -x -C ab_old;
# cp scripts/host_path_probe.py ab_old/scripts/
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; lscpu | grep "Model name"; } > $R/env.txt 2>&1
for t in old new old new; do
  n=$(ls $R | grep -c "^host_$t") ; n=$((n / 2 + 1))
  if [ $t = old ]; then s=ab_old/scripts/host_path_probe.py; else s=scripts/host_path_probe.py; fi
  timeout 150 python3 $s --out $R/host_${t}$n > $R/host_${t}$n.log 2>&1; step "host $t$n rc $?"
done
B="python3 -m fusedmoe bench --shape peers --routing softmax --no-check --paths auto --formats bf16,fp8_tensor --tokens 1,64 --replays 10"
(cd ab_old && PYTHONPATH=$PWD timeout 130 $B --out $R/bench_old > $R/bench_old.log 2>&1); step "bench old rc $?"
PYTHONPATH=$PWD timeout 130 $B --out $R/bench_new > $R/bench_new.log 2>&1; step "bench new rc $?"
PYTHONPATH=$PWD timeout $((570 - $(el))) python3 -m fusedmoe check graphs --out $R/graphs > $R/graphs.log 2>&1; step "graphs rc $?"
rm -f $R/*/*.png; pack
