#!/usr/bin/env bash
# Throw-away (28th session), call 3: does a larger BLOCK_M pay for w4a8's grouped GEMMs, which
# decode each FP4 weight tile once per block of rows?  The tuner over BLOCK_M and the register
# caps only (--moves block_m,gate_up_registers,down_registers, confirmed), from the w4a8
# heuristic, on the PEERS shapes: M=2048 first, then 8192, then 512, into $R/configs (not the
# shipped tables).  Results packed into $OUT/r.tgz after every step.
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
pack() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
step() { echo "$1 +$(el)s" | tee -a $R/steps.log; pack; }
( while sleep 60; do pack; done ) >/dev/null 2>&1 & WD=$!
T="python -m fusedmoe tune --shape peers --formats w4a8 --paths grouped --moves block_m,gate_up_registers,down_registers --force --out-dir $R/configs --log $R/tune_candidates.jsonl"
(timeout 330 $T --tokens 2048 --budget-min 5 > $R/tune_2048.log 2>&1); step "tune 2048 rc $?"
(timeout $((450 - $(el))) $T --tokens 8192 --budget-min $(( (440 - $(el)) / 60 )) > $R/tune_8192.log 2>&1); step "tune 8192 rc $?"
(timeout $((570 - $(el))) $T --tokens 512 --budget-min $(( (560 - $(el)) / 60 )) > $R/tune_512.log 2>&1); step "tune 512 rc $?"
kill $WD 2>/dev/null; pack
